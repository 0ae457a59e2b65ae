"""File access through the editor: with fs capabilities, reads see unsaved buffers and writes go through
fs/write_text_file (the editor applies and can review them); what the editor cannot serve comes from disk."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script


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


async def test_a_client_that_reads_but_cannot_write_gets_disk_writes_that_keep_the_bom(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    # One file the editor has open (its buffer is served without a BOM, as editors hold text), one it
    # has not: both are written to disk, each keeping its byte-order mark and its line endings.
    opened, closed = workspace / "opened.txt", workspace / "closed.txt"
    opened.write_bytes(codecs.BOM_UTF8 + b"one\r\ntwo\r\n")
    closed.write_bytes(codecs.BOM_UTF16_LE + "three\nfour\n".encode("utf-16-le"))
    client = RecordingClient(buffers={str(opened): "one\r\nTWO (unsaved)\r\n"})
    steps = [
        {"tool_calls": [{"id": "e1", "name": "edit", "arguments": {
            "file_path": "opened.txt", "old_string": "TWO (unsaved)", "new_string": "2"}}]},
        {"tool_calls": [{"id": "e2", "name": "edit", "arguments": {
            "file_path": "closed.txt", "old_string": "four", "new_string": "4"}}]},
        {"text": "done"},
    ]  # fmt: skip
    state = tmp_path / "state"
    bridge = await bridges("--allow-tool", "edit", "--state-dir", str(state),
                           model=write_script(tmp_path / "s.json", [steps]), client=client)  # fmt: skip
    await bridge.initialize(fs=True, fs_write=False)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert [bridge.call_updates(c)[-1]["status"] for c in ("e1", "e2")] == ["completed", "completed"]
    assert opened.read_bytes() == codecs.BOM_UTF8 + b"one\r\n2\r\n"
    assert closed.read_bytes() == codecs.BOM_UTF16_LE + "three\n4\n".encode("utf-16-le")
    assert client.writes == []
    assert not [f for f in bridge.frames if f.get("method") == "fs/write_text_file"]
    # The durable record says where the change went: the disk, not the editor.
    await bridge.stop()
    log = [json.loads(line) for line in (state / "sessions" / f"{session_id}.jsonl").read_text().splitlines()]
    sources = {e["callId"]: e["meta"]["source"] for e in log if e.get("type") == "tool/result"}
    assert sources == {"e1": "disk", "e2": "disk"}
