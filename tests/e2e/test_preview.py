"""The approval shows what will happen: before the user is asked, a `write` or `edit` card is redrawn from
the file as it is (the tool's preview step), so the permission question carries the same hunks, with their
context and line numbers, as the completed card; and an editor's reason for refusing a write or a read
reaches the card and the model whole. Real bridges over pipes, real files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, write_script

TWENTY = "".join(f"line {n}\n" for n in range(1, 21))


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


async def _asked_turn(
    bridges: StartBridge,
    tmp_path: Path,
    workspace: Path,
    calls: list[dict[str, Any]],
    *args: str,
    client: RecordingClient | None = None,
    fs: bool = False,
) -> Any:
    """One turn in the default mode (a write or edit asks), the client allowing once; returns the bridge."""
    script = write_script(tmp_path / "script.json", [[{"tool_calls": calls}, {"text": "done"}]])
    bridge = await bridges(*args, model=script, client=client)
    await bridge.initialize(fs=fs)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    return bridge


def _diffs(update: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for block in update.get("content") or [] if block.get("type") == "diff"]


def _text_of(update: dict[str, Any]) -> str:
    return "\n".join(b["content"]["text"] for b in update.get("content") or [] if b.get("type") == "content")


def _previewed(bridge: Any, call_id: str) -> dict[str, Any]:
    """The update that redrew the pending card before the question (a card update without a status)."""
    updates = bridge.call_updates(call_id)
    (update,) = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and "status" not in u]
    return update


async def test_approving_an_overwrite_shows_the_files_hunk_with_its_lines_not_a_create(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text(TWENTY)
    new = TWENTY.replace("line 13\n", "line thirteen\n")
    bridge = await _asked_turn(bridges, tmp_path, workspace, [_call("w1", "write", file_path="notes.txt",
                                                                     content=new)])  # fmt: skip
    (request,) = bridge.client.permission_requests
    (diff,) = _diffs(request["toolCall"])
    assert diff["path"] == str(notes)
    assert diff["oldText"] == "".join(f"line {n}\n" for n in range(10, 17))  # line 13 and 3 lines around
    assert diff["newText"] == diff["oldText"].replace("line 13\n", "line thirteen\n")
    assert request["toolCall"]["locations"] == [{"path": str(notes), "line": 13}]
    final = bridge.call_updates("w1")[-1]
    assert final["status"] == "completed" and notes.read_text() == new
    # The question, the redrawn pending card and the completed card show the same change.
    assert _diffs(request["toolCall"]) == _diffs(_previewed(bridge, "w1")) == _diffs(final)
    assert request["toolCall"]["locations"] == final["locations"]


async def test_a_replace_all_approval_shows_every_replaced_line_with_its_context(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    lines = [f"value = old  # {n}\n" if n % 10 == 0 else f"other {n}\n" for n in range(1, 51)]
    app = workspace / "app.py"
    app.write_text("".join(lines))
    edit = _call("e1", "edit", file_path="app.py", old_string="old", new_string="new", replace_all=True)
    bridge = await _asked_turn(bridges, tmp_path, workspace, [edit])
    (request,) = bridge.client.permission_requests
    diffs = _diffs(request["toolCall"])
    assert len(diffs) == 5  # one hunk per replaced line, not "+1 -1" of the argument strings
    for diff, number in zip(diffs, (10, 20, 30, 40, 50), strict=True):
        assert f"value = old  # {number}\n" in diff["oldText"]
        assert f"other {number - 1}\n" in diff["oldText"]  # with context lines
        assert diff["newText"] == diff["oldText"].replace("= old", "= new")
    assert [loc["line"] for loc in request["toolCall"]["locations"]] == [10, 20, 30, 40, 50]
    final = bridge.call_updates("e1")[-1]
    assert final["status"] == "completed"
    assert diffs == _diffs(final)


async def test_the_approval_diff_comes_from_the_editors_unsaved_buffer(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("one\ntwo\nthree\n")
    buffers = {str(notes): "one\ntwo (unsaved)\nthree\n"}
    client = RecordingClient(buffers=buffers)
    write = _call("w1", "write", file_path="notes.txt", content="one\ntwo (unsaved)\nthree\nfour\n")
    bridge = await _asked_turn(bridges, tmp_path, workspace, [write], client=client, fs=True)
    (request,) = client.permission_requests
    (diff,) = _diffs(request["toolCall"])
    assert diff["oldText"] == "one\ntwo (unsaved)\nthree\n"
    assert diff["newText"] == "one\ntwo (unsaved)\nthree\nfour\n"
    assert _diffs(bridge.call_updates("w1")[-1]) == [diff]
    assert client.writes == [(str(notes), "one\ntwo (unsaved)\nthree\nfour\n")]


async def test_an_edit_that_cannot_apply_says_so_in_the_approval(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    edit = _call("e1", "edit", file_path="app.py", old_string="y = 2", new_string="y = 3")
    bridge = await _asked_turn(bridges, tmp_path, workspace, [edit])
    (request,) = bridge.client.permission_requests
    assert not _diffs(request["toolCall"])
    assert "old_string was not found in app.py" in _text_of(request["toolCall"])
    assert bridge.call_updates("e1")[-1]["status"] == "failed"


class RefusingEditor(RecordingClient):
    """An editor that refuses writes (and reads of one path) with a reason in the error's `data.details`,
    as the Python SDK and Zed report an exception."""

    def __init__(self, reason: str, unreadable: str = "") -> None:
        super().__init__(buffers={})
        self.reason = reason
        self.unreadable = unreadable

    async def read_text_file(self, session_id: str, path: str, **kwargs: Any) -> Any:
        if path == self.unreadable:
            raise RequestError.internal_error({"details": self.reason})
        return await super().read_text_file(session_id, path, **kwargs)

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> Any:
        raise RequestError.internal_error({"details": self.reason})


async def test_the_editors_reason_for_refusing_a_write_reaches_the_card_and_the_model(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    reason = "notes.txt is read-only in this project: the workspace trust settings forbid agent writes"
    client = RefusingEditor(reason)
    state = tmp_path / "state"
    write = _call("w1", "write", file_path="notes.txt", content="hello\n")
    bridge = await _asked_turn(bridges, tmp_path, workspace, [write], "--allow-tool", "write",
                               "--state-dir", str(state), client=client, fs=True)  # fmt: skip
    final = bridge.call_updates("w1")[-1]
    assert final["status"] == "failed"
    assert reason in _text_of(final)
    assert not (workspace / "notes.txt").exists()
    (session_id,) = {f["params"]["sessionId"] for f in bridge.frames if f.get("method") == "session/update"}
    await bridge.stop()
    log = (state / "sessions" / f"{session_id}.jsonl").read_text().splitlines()
    (told,) = [json.loads(line) for line in log if json.loads(line).get("type") == "tool/result"]
    assert reason in json.dumps(told["content"])  # what the model was told


async def test_the_editors_reason_for_refusing_a_read_is_kept_when_the_disk_cannot_serve_it_either(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    reason = "the file is excluded from agents by .zed/settings.json"
    missing = workspace / "secret.txt"
    client = RefusingEditor(reason, unreadable=str(missing))
    read = _call("r1", "read", file_path="secret.txt")
    bridge = await _asked_turn(bridges, tmp_path, workspace, [read], client=client, fs=True)
    final = bridge.call_updates("r1")[-1]
    assert final["status"] == "failed"
    assert "File not found" in _text_of(final) and reason in _text_of(final)
