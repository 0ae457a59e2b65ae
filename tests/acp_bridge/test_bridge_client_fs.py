"""File access through the editor: with fs capabilities, reads see unsaved buffers and writes go through
fs/write_text_file (the editor applies and can review them); what the editor cannot serve comes from disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .bridge_harness import RecordingClient, selected, write_script
from .conftest import StartBridge


def _text_of(update: dict[str, Any]) -> str:
    return "\n".join(b["content"]["text"] for b in update.get("content") or [] if b.get("type") == "content")


async def test_reads_see_the_unsaved_buffer_and_edits_go_through_the_editor(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    app = workspace / "app.py"
    app.write_text('GREETING = "on disk"\n')
    buffers = {str(app): 'GREETING = "unsaved in the editor"\n'}
    client = RecordingClient(lambda s, c, o: selected("allow_once"), buffers=buffers)
    steps = [
        {"tool_calls": [{"id": "r1", "name": "read", "arguments": {"file_path": "app.py"}},
                        {"id": "r2", "name": "read", "arguments": {"file_path": "a.txt"}}]},
        {"tool_calls": [{"id": "e1", "name": "edit", "arguments": {
            "file_path": "app.py", "old_string": '"unsaved in the editor"', "new_string": '"edited"'}}]},
        {"text": "done"},
    ]  # fmt: skip
    bridge = await bridges(model=write_script(tmp_path / "s.json", [steps]), client=client)
    await bridge.initialize(fs=True)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert "unsaved in the editor" in _text_of(bridge.call_updates("r1")[-1])
    assert "alpha" in _text_of(bridge.call_updates("r2")[-1])  # not open in the editor: read from disk
    assert client.writes == [(str(app), 'GREETING = "edited"\n')]
    assert app.read_text() == 'GREETING = "on disk"\n'  # the editor owns the change, not the bridge
    reads = [f for f in bridge.frames if f.get("method") == "fs/read_text_file"]
    assert {f["params"]["path"] for f in reads} >= {str(app), str(workspace / "a.txt")}


async def test_without_fs_capabilities_the_bridge_never_calls_fs_methods(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    write = {"id": "w1", "name": "write", "arguments": {"file_path": "out.txt", "content": "x\n"}}
    steps = [{"tool_calls": [write]},
             {"text": "done"}]  # fmt: skip
    bridge = await bridges("--allow-tool", "write", model=write_script(tmp_path / "s.json", [steps]))
    await bridge.initialize(fs=False)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert (workspace / "out.txt").read_text() == "x\n"
    assert not [f for f in bridge.frames if str(f.get("method", "")).startswith("fs/")]
