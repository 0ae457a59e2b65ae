"""Every card kind of the built-in tools on the wire, through a real bridge, with and without the client's
terminal opt-in: titles relative to the cwd, locations and diff paths absolute, diffs that are the file's
actual change, live terminal deltas, search locations, the web card, the plan, and the diff in a
permission question."""

from __future__ import annotations

import asyncio
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script

ALLOW = ("--allow-tool", "edit", "--allow-tool", "write", "--allow-tool", "bash", "--allow-tool", "web_fetch")


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


async def _turn(bridges: StartBridge, tmp_path: Path, workspace: Path, calls: list[dict[str, Any]],
                *, terminal_meta: bool = True, args: tuple[str, ...] = ALLOW) -> Any:  # fmt: skip
    script = write_script(tmp_path / "script.json", [[{"tool_calls": calls}, {"text": "done"}]])
    bridge = await bridges(*args, model=script)
    await bridge.initialize(terminal_meta=terminal_meta)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    return bridge


def _text_of(update: dict[str, Any]) -> str:
    return "\n".join(b["content"]["text"] for b in update.get("content") or [] if b.get("type") == "content")


async def test_read_card_relative_title_absolute_location_numbered_lines(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("import os\n\nprint(os.getcwd())\n")
    bridge = await _turn(bridges, tmp_path, workspace, [_call("r1", "read", file_path="src/main.py")])
    start, *_, final = bridge.call_updates("r1")
    assert start["kind"] == "read"
    assert "src/main.py" in start["title"]
    assert str(workspace) not in start["title"]
    assert final["status"] == "completed"
    locations = final.get("locations") or start.get("locations")
    assert locations[0]["path"] == str(workspace / "src" / "main.py")
    assert locations[0].get("line", 1) == 1
    text = _text_of(final)
    assert "```python" in text
    assert "print(os.getcwd())" in text
    assert "3" in text  # numbered lines


async def test_parallel_reads_all_announced_before_any_completes(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    for i in range(6):
        (workspace / f"f{i}.txt").write_text(f"file number {i}\n")
    calls = [_call(f"r{i}", "read", file_path=f"f{i}.txt") for i in range(6)]
    bridge = await _turn(bridges, tmp_path, workspace, calls)
    updates = [u for u in bridge.updates() if u.get("toolCallId")]
    first_done = next(i for i, u in enumerate(updates) if u.get("status") == "completed")
    assert sum(1 for u in updates[:first_done] if u["sessionUpdate"] == "tool_call") == 6
    for i in range(6):
        assert f"file number {i}" in _text_of(bridge.call_updates(f"r{i}")[-1])


async def test_the_diff_after_an_edit_is_the_files_actual_change(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    before = "".join(f"line {i}\n" for i in range(1, 30)).replace("line 15\n", 'GREETING = "hello"\n')
    (workspace / "app.py").write_text(before)
    edit = _call("e1", "edit", file_path="app.py", old_string='"hello"', new_string='"hello, editor"')
    bridge = await _turn(bridges, tmp_path, workspace, [edit])
    after = (workspace / "app.py").read_text()
    assert after == before.replace('"hello"', '"hello, editor"')
    start, *_, final = bridge.call_updates("e1")
    assert start["kind"] == "edit"
    assert "app.py" in start["title"] and str(workspace) not in start["title"]
    (diff,) = [b for b in final["content"] if b["type"] == "diff"]
    assert diff["path"] == str(workspace / "app.py")
    # The hunk (with its context lines) applied to the old file gives exactly the new file.
    assert before.count(diff["oldText"]) == 1
    assert before.replace(diff["oldText"], diff["newText"]) == after
    assert any(loc["path"] == str(workspace / "app.py") and loc.get("line") for loc in final["locations"])


async def test_write_of_a_new_file_is_a_whole_file_diff_from_nothing(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await _turn(bridges, tmp_path, workspace, [_call("w1", "write", file_path="new/notes.md",
                                                                content="# Notes\n")])  # fmt: skip
    assert (workspace / "new" / "notes.md").read_text() == "# Notes\n"
    diffs = [b for u in bridge.call_updates("w1") for b in u.get("content") or [] if b["type"] == "diff"]
    assert diffs[-1]["path"] == str(workspace / "new" / "notes.md")
    assert diffs[-1].get("oldText") is None
    assert diffs[-1]["newText"] == "# Notes\n"


async def test_bash_with_the_terminal_opt_in_streams_deltas_into_a_display_terminal(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    command = "for i in 1 2 3; do echo step $i; sleep 0.1; done"
    bridge = await _turn(bridges, tmp_path, workspace, [_call("b1", "bash", command=command)])
    start, *middle, final = bridge.call_updates("b1")
    assert start["kind"] == "execute"
    assert start["title"] == command
    assert start["content"] == [{"type": "terminal", "terminalId": "b1"}]
    assert start["_meta"]["terminal_info"]["terminal_id"] == "b1"
    deltas = [
        u["_meta"]["terminal_output"]["data"] for u in middle if "terminal_output" in u.get("_meta", {})
    ]
    assert len(deltas) >= 2  # live, not one block at the end
    assert "".join(deltas).replace("\r\n", "\n") == "step 1\nstep 2\nstep 3\n"
    assert final["status"] == "completed"
    assert "content" not in final  # content would wipe the terminal block
    assert final["_meta"]["terminal_exit"] == {"terminal_id": "b1", "exit_code": 0, "signal": None}


async def test_bash_without_the_opt_in_is_a_console_block(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    command = "echo out; echo err >&2; exit 3"
    bridge = await _turn(
        bridges, tmp_path, workspace, [_call("b1", "bash", command=command)], terminal_meta=False
    )
    start, *_, final = bridge.call_updates("b1")
    assert "terminal_info" not in (start.get("_meta") or {})
    assert not any(b.get("type") == "terminal" for b in start.get("content") or [])
    text = _text_of(final)
    assert "```console" in text
    assert "out" in text and "err" in text
    assert "3" in text  # the exit code is shown


async def test_grep_and_glob_are_search_cards_with_one_location_per_match(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "x.py").write_text("a = 1\n# TODO one\nb = 2\n# TODO two\n")
    (workspace / "y.py").write_text("nothing here\n")
    bridge = await _turn(bridges, tmp_path, workspace,
                         [_call("g1", "grep", pattern="TODO", output_mode="content"),
                          _call("g2", "glob", pattern="**/*.py")])  # fmt: skip
    grep_start, *_, grep_final = bridge.call_updates("g1")
    assert grep_start["kind"] == "search"
    locations = {(loc["path"], loc.get("line")) for loc in grep_final["locations"]}
    assert locations == {(str(workspace / "x.py"), 2), (str(workspace / "x.py"), 4)}
    assert "TODO one" in _text_of(grep_final)
    glob_final = bridge.call_updates("g2")[-1]
    assert "x.py" in _text_of(glob_final) and "y.py" in _text_of(glob_final)


@pytest.fixture
def web_server(tmp_path: Path) -> Iterator[str]:
    root = tmp_path / "site"
    root.mkdir()
    (root / "page.html").write_text(
        "<html><head><title>Fixture</title></head><body><h1>Hello web</h1></body></html>"
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


async def test_web_fetch_card_shows_url_and_status(
    bridges: StartBridge, tmp_path: Path, workspace: Path, web_server: str
) -> None:
    url = f"{web_server}/page.html"
    # The server is on 127.0.0.1: private networks are refused unless allowed.
    args = (*ALLOW, "--allow-private-network")
    bridge = await _turn(bridges, tmp_path, workspace, [_call("w1", "web_fetch", url=url)], args=args)
    start, *_, final = bridge.call_updates("w1")
    assert start["kind"] == "fetch"
    assert final["status"] == "completed"
    text = _text_of(final)
    assert url in text and "200" in text
    assert "Hello web" in text or "Hello web" in str(final.get("rawOutput"))


async def test_todo_write_updates_the_plan(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    todos = [
        {"content": "Read the notes", "status": "completed", "priority": "high"},
        {"content": "Fix the greeting", "status": "in_progress"},
        {"content": "Run the app", "status": "pending", "priority": "low"},
    ]
    bridge = await _turn(bridges, tmp_path, workspace, [_call("p1", "todo_write", todos=todos)])
    plans = [u for u in bridge.updates() if u["sessionUpdate"] == "plan"]
    assert plans[-1]["entries"] == [
        {"content": "Read the notes", "priority": "high", "status": "completed"},
        {"content": "Fix the greeting", "priority": "medium", "status": "in_progress"},
        {"content": "Run the app", "priority": "low", "status": "pending"},
    ]


async def test_the_permission_question_for_an_edit_carries_its_diff(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "app.py").write_text('GREETING = "hello"\n')
    edit = _call("e1", "edit", file_path="app.py", old_string='"hello"', new_string='"hi"')
    bridge = await _turn(bridges, tmp_path, workspace, [edit], args=())
    (request,) = bridge.client.permission_requests
    (diff,) = [b for b in request["toolCall"]["content"] if b["type"] == "diff"]
    assert diff["path"] == str(workspace / "app.py")
    assert '"hello"' in diff["oldText"] and '"hi"' in diff["newText"]
    statuses = [u["status"] for u in bridge.call_updates("e1") if "status" in u]
    assert statuses == ["pending", "in_progress", "completed"]


async def test_a_file_outside_the_workspace_keeps_its_absolute_title_and_asks(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("far away\n")
    bridge = await _turn(bridges, tmp_path, workspace, [_call("r1", "read", file_path=str(outside))])
    start = bridge.call_updates("r1")[0]
    assert str(outside) in start["title"]
    assert start["status"] == "pending"  # reads outside the roots ask
    (request,) = bridge.client.permission_requests
    assert "outside the workspace" in str(request["toolCall"].get("content"))
    await asyncio.sleep(0)
