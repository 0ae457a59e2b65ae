"""The full output of a long command lives in the session's scratch directory: the model is told its path,
it exists while the session does, and it is deleted with the session (session/close) and with the bridge
on every way out (stdin EOF, SIGTERM, SIGHUP, an uncaught exception), as are the processes left running."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.process_marks import assert_all_gone, escaping, new_mark, wait_started

pytestmark = pytest.mark.slow

LONG = "seq -f '%09g' 1 200000"  # 2 MB: far beyond the 32 KiB the model gets


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "bash", "arguments": {"command": command}}]}


async def _spilled(bridge: Bridge, session_id: str, call_id: str) -> Path:
    final = bridge.call_updates(call_id, session_id)[-1]
    assert final["status"] == "completed"
    path = Path(final["rawOutput"]["fullOutputPath"])
    assert path.stat().st_size == 2_000_000  # noqa: ASYNC240 - a test's own check
    return path


async def test_the_full_output_file_is_deleted_with_its_session(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "script.json", [[_bash("b1", LONG), {"text": "done"}]])
    bridge = await bridges("--allow-tool", "bash", model=script)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    other = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "print") == "end_turn"
    assert await bridge.prompt(other, "print") == "end_turn"
    mine, theirs = await _spilled(bridge, session_id, "b1"), await _spilled(bridge, other, "b1")
    assert mine.parent != theirs.parent  # one directory per session
    assert mine.parent.stat().st_mode & 0o777 == 0o700

    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 5)
    assert not mine.parent.exists()
    assert theirs.exists()


@pytest.mark.parametrize("how", ["stdin EOF", "SIGTERM", "SIGHUP", "an uncaught exception"])
async def test_the_bridge_deletes_every_scratch_file_and_stops_its_processes_on_every_way_out(
    bridges: StartBridge, tmp_path: Path, workspace: Path, how: str
) -> None:
    mark = new_mark()
    turns = [
        [_bash("b1", LONG), _bash("b2", escaping(mark, foreground=None)), {"text": "done"}],
        [{"tool_calls": [{"id": "c1", "name": "crash", "arguments": {}}]}],
    ]
    script = write_script(tmp_path / "script.json", turns)
    crash = ("--extra-tools", "tests.support.crash_tools:tools", "--allow-tool", "crash")
    bridge = await bridges("--allow-tool", "bash", *crash, model=script)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "print") == "end_turn"
    spilled = await _spilled(bridge, session_id, "b1")
    root = spilled.parent.parent
    assert root.name.startswith("acp-bridge-")
    await wait_started(mark, foreground=False)

    if how == "stdin EOF":
        await bridge.close_stdin()
    elif how == "an uncaught exception":
        crashing = asyncio.ensure_future(bridge.prompt(session_id, "crash"))
    else:
        bridge.proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGHUP)
    code = await asyncio.wait_for(bridge.proc.wait(), 3)
    assert code == (3 if how == "an uncaught exception" else 0)
    assert not root.exists()
    await assert_all_gone(mark)
    if how == "an uncaught exception":
        crashing.cancel()
