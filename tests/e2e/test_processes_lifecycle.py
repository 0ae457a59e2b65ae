"""No process a command started outlives its owner, over the ACP face, with the bridge as a real subprocess.

Each command starts a plain `&` job, a `nohup` job, a `setsid` child and a double-forked daemon, all with
their output redirected (`process_marks.escaping`); they are found by a unique mark in their argv across
every process of the machine, since an orphan that escaped the bridge is no longer its descendant. After
cancel, SIGINT, a timeout, session/close, stdin EOF, SIGTERM, SIGHUP and the client no longer reading the
bridge's output, none of them survives 1 s.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.eventually import eventually
from tests.support.process_marks import assert_all_gone, escaping, marked, new_mark, wait_started

pytestmark = pytest.mark.slow


def _bash(call_id: str, command: str, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "bash", "arguments": {"command": command, **extra}}]}


async def _bridge(
    bridges: StartBridge, tmp_path: Path, workspace: Path, *turns: list[dict[str, Any]]
) -> tuple[Bridge, str]:
    script = write_script(tmp_path / "script.json", list(turns))
    bridge = await bridges("--allow-tool", "bash", model=script)
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


def _no_live_descendants(bridge: Bridge) -> bool:
    return not bridge.running()


async def test_cancel_stops_every_process_the_command_started(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(
        bridges, tmp_path, workspace, [_bash("b1", escaping(mark)), {"text": "no"}], [{"text": "again"}]
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await wait_started(mark)
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    await assert_all_gone(mark)
    await eventually(lambda: _no_live_descendants(bridge), within=1, what="no descendant of the bridge")
    assert await bridge.prompt(session_id, "again") == "end_turn"


async def test_a_timeout_stops_every_process_the_command_started(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(
        bridges, tmp_path, workspace, [_bash("b1", escaping(mark), timeout=1500), {"text": "done"}]
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert bridge.call_updates("b1")[-1]["rawOutput"]["error"]["code"] == "TIMEOUT"
    await assert_all_gone(mark)


async def test_sigint_cancels_the_prompt_stops_its_processes_and_the_bridge_serves_on(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(
        bridges, tmp_path, workspace, [_bash("b1", escaping(mark)), {"text": "no"}], [{"text": "still here"}]
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await wait_started(mark)
    bridge.proc.send_signal(signal.SIGINT)
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    await assert_all_gone(mark)
    assert bridge.proc.returncode is None
    assert bridge.call_updates("b1")[-1]["status"] == "failed"
    assert await bridge.prompt(session_id, "again") == "end_turn"
    assert await bridge.new_session(workspace)


async def test_session_close_stops_what_its_finished_commands_left_in_the_background(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    # Both sessions run the same script; the directory name in the mark tells their processes apart.
    mark = new_mark()
    per_session = mark + '-$(basename "$PWD")'
    bridge, session_id = await _bridge(
        bridges, tmp_path, workspace, [_bash("b1", escaping(per_session, foreground=None)), {"text": "ok"}]
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    other = await bridge.new_session(elsewhere)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert await bridge.prompt(other, "go") == "end_turn"
    assert bridge.call_updates("b1", session_id)[-1]["status"] == "completed"
    # Redirected background jobs outlive their call on purpose (a server the next command talks to).
    await wait_started(f"{mark}-ws", foreground=False)
    await wait_started(f"{mark}-elsewhere", foreground=False)
    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 5)
    await assert_all_gone(f"{mark}-ws")
    assert len(marked(f"{mark}-elsewhere", named=True)) == 4  # another session's are its own
    await asyncio.wait_for(bridge.conn.close_session(session_id=other), 5)
    await assert_all_gone(f"{mark}-elsewhere")


async def test_session_close_during_a_command_stops_every_process_it_started(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(bridges, tmp_path, workspace, [_bash("b1", escaping(mark))])
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await wait_started(mark)
    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 2)
    assert await asyncio.wait_for(prompt, 1) == "cancelled"
    await assert_all_gone(mark)


@pytest.mark.parametrize("how", ["stdin EOF", "SIGTERM", "SIGHUP"])
async def test_the_bridge_ending_stops_every_process_its_commands_started(
    bridges: StartBridge, tmp_path: Path, workspace: Path, how: str
) -> None:
    finished, running = new_mark(), new_mark()
    bridge, session_id = await _bridge(
        bridges,
        tmp_path,
        workspace,
        [_bash("b1", escaping(finished, foreground=None)), {"text": "left in the background"}],
        [_bash("b2", escaping(running))],
    )
    assert await bridge.prompt(session_id, "first") == "end_turn"
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "second"))
    await wait_started(running)
    await wait_started(finished, foreground=False)
    if how == "stdin EOF":
        await bridge.close_stdin()
    else:
        bridge.proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGHUP)
    await assert_all_gone(running)
    await assert_all_gone(finished)
    assert await asyncio.wait_for(bridge.proc.wait(), 2) == 0
    prompt.cancel()


async def test_a_client_that_stops_reading_ends_the_bridge_and_its_processes(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(bridges, tmp_path, workspace, [_bash("b1", escaping(mark, "ticks"))])
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await wait_started(mark)
    # The client closes only its read end of our stdout: our next write gets EPIPE.
    stdout_pipe = bridge.proc._transport.get_pipe_transport(1)  # type: ignore[attr-defined]
    stdout_pipe.close()
    await assert_all_gone(mark)
    assert await asyncio.wait_for(bridge.proc.wait(), 2) == 0
    assert not marked(mark)
    prompt.cancel()


async def test_an_idle_bridge_whose_client_stops_reading_exits(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _bridge(
        bridges, tmp_path, workspace, [_bash("b1", escaping(mark, foreground=None)), {"text": "done"}]
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await wait_started(mark, foreground=False)
    bridge.proc._transport.get_pipe_transport(1).close()  # type: ignore[attr-defined]
    # Nothing is being written: the closed read end alone must be noticed.
    assert await asyncio.wait_for(bridge.proc.wait(), 2) == 0
    await assert_all_gone(mark)


async def test_adopted_orphans_are_reaped_and_commands_keep_their_own_exit_status(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    # The orphans outlive their command by a second and it runs past a rescan (RESCAN_S) after starting
    # them, so they are seen alive whatever the load: an orphan that exits before any look cannot be told
    # from a fork of the bridge and stays a zombie by design (`presenters.process_tree`).
    short_lived = (
        f"(exec -a {mark}-bg sleep 1.2) >/dev/null 2>&1 & "
        f"setsid bash -c 'exec -a {mark}-setsid sleep 1.2' >/dev/null 2>&1 & "
        f"(setsid bash -c 'exec -a {mark}-daemon sleep 1.2' >/dev/null 2>&1 &); sleep 0.5; echo started"
    )
    bridge, session_id = await _bridge(
        bridges,
        tmp_path,
        workspace,
        [_bash("b1", short_lived), {"text": "started"}],
        [_bash("b2", "sleep 1.5; exit 7"), {"text": "done"}],
    )
    assert await bridge.prompt(session_id, "start") == "end_turn"
    assert await bridge.prompt(session_id, "wait") == "end_turn"  # the orphans exited meanwhile
    assert bridge.call_updates("b2")[-1]["rawOutput"]["exitCode"] == 7  # its shell was not reaped by us
    zombies = [p for p in bridge.descendants() if p.status() == "zombie"]
    assert zombies == [], "the bridge left its adopted orphans unreaped"
