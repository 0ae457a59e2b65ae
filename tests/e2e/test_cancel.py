"""Cancellation end to end: session/cancel stops the model stream, running tools (whole process groups) and
pending permission questions, and the prompt answers `cancelled` promptly, even when a tool ignores it;
session/close does the same and then frees the session."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for p in processes:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def _stopped(frame: dict[str, Any]) -> bool:
    """The response to a prompt, stopped as `cancelled`."""
    result = frame.get("result")
    return "method" not in frame and isinstance(result, dict) and result.get("stopReason") == "cancelled"


async def _cancel_latency(bridge: Any, session_id: str) -> float:
    """Send session/cancel; seconds from it being sent to the prompt's `cancelled` response arriving."""
    await bridge.conn.cancel(session_id=session_id)
    sent = time.perf_counter()
    await bridge.wait_for(lambda: any(_stopped(f) for f in bridge.frames), within=3)
    return bridge.arrival(_stopped) - sent


async def _start(bridges: StartBridge, tmp_path: Path, workspace: Path, steps: list[dict[str, Any]],
                 *args: str, client: RecordingClient | None = None) -> tuple[Any, str]:  # fmt: skip
    bridge = await bridges(*args, model=write_script(tmp_path / "script.json", [steps, [{"text": "after"}]]),
                           client=client)  # fmt: skip
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


async def test_cancel_during_sleep_30_answers_cancelled_within_a_second_and_kills_the_process(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    sleeper = {"id": "s1", "name": "bash", "arguments": {"command": "sleep 30"}}
    bridge, session_id = await _start(
        bridges, tmp_path, workspace, [{"tool_calls": [sleeper]}, {"text": "no"}]
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "sleep"))
    await bridge.wait_for(lambda: bridge.running("sleep"))
    tree = bridge.descendants()
    assert await _cancel_latency(bridge, session_id) < 1.0
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    # The group was signalled: a bounded moment for the processes to end (a loaded machine lags).
    with contextlib.suppress(TimeoutError):
        await bridge.wait_for(lambda: not _alive(tree), within=2)
    assert not _alive(tree), "the cancelled command's processes survived"
    final = bridge.call_updates("s1")[-1]
    assert final["status"] == "failed"
    # The session is usable again: the next prompt takes the next turn.
    assert await bridge.prompt(session_id, "again") == "end_turn"


async def test_cancel_withdraws_a_pending_permission_question(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    never = asyncio.Event()

    async def absent_user(session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]) -> Any:
        await never.wait()
        return selected("allow_once")

    ask = {"id": "b1", "name": "bash", "arguments": {"command": "echo hi"}}
    bridge, session_id = await _start(
        bridges, tmp_path, workspace, [{"tool_calls": [ask]}], client=RecordingClient(absent_user)
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await bridge.wait_for(lambda: bool(bridge.client.permission_requests))
    assert await _cancel_latency(bridge, session_id) < 1.0
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    permission = next(f for f in bridge.frames if f.get("method") == "session/request_permission")
    withdrawn = [f for f in bridge.frames if f.get("method") == "$/cancel_request"]
    assert [f["params"]["requestId"] for f in withdrawn] == [permission["id"]]
    assert bridge.call_updates("b1")[-1]["status"] == "failed"


async def test_cancel_answers_promptly_even_when_a_tool_ignores_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    stubborn = {"id": "x1", "name": "stubborn", "arguments": {"seconds": 5}}
    bridge, session_id = await _start(bridges, tmp_path, workspace, [{"tool_calls": [stubborn]}])
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await bridge.wait_for(lambda: bool(bridge.call_updates("x1")))
    # The tool ignores the cancel, so the answer comes when CANCEL_GRACE (0.75 s) runs out: the issue's
    # "within 1 s" leaves 0.25 s for the bridge's own work, measured from the cancel frame being sent to
    # the response frame being read (no spawn, no client library), so a loaded machine still fits.
    assert await _cancel_latency(bridge, session_id) < 1.0
    assert await asyncio.wait_for(prompt, 3) == "cancelled"
    assert bridge.call_updates("x1")[-1]["status"] == "failed"


async def test_cancel_with_nothing_running_is_harmless(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge, session_id = await _start(bridges, tmp_path, workspace, [{"text": "fine"}])
    await bridge.conn.cancel(session_id=session_id)
    await bridge.conn.cancel(session_id="sess_unknown")
    assert await bridge.prompt(session_id, "go") == "end_turn"


async def test_cancel_request_for_the_prompt_cancels_its_turn(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    sleeper = {"id": "s1", "name": "bash", "arguments": {"command": "sleep 30"}}
    bridge, session_id = await _start(
        bridges, tmp_path, workspace, [{"tool_calls": [sleeper]}], "--allow-tool", "bash"
    )
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "sleep"}]}
    await bridge.send_raw(json.dumps({"jsonrpc": "2.0", "id": 990, "method": "session/prompt",
                                      "params": prompt}).encode() + b"\n")  # fmt: skip
    await bridge.wait_for(lambda: bridge.running("sleep"))
    await bridge.send_raw(b'{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 990}}\n')
    await bridge.wait_for(lambda: bool(bridge.responses(990)), within=2)
    assert bridge.responses(990)[0]["result"] == {
        "stopReason": "cancelled",
        "_meta": {"acpBridge": {"turn": 1}},
    }


async def test_session_close_cancels_the_running_prompt_then_frees_the_session(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    sleeper = {"id": "s1", "name": "bash", "arguments": {"command": "sleep 30"}}
    script = write_script(tmp_path / "script.json", [[{"tool_calls": [sleeper]}]])
    bridge = await bridges("--allow-tool", "bash", model=script)
    init = await bridge.initialize()
    assert init.agent_capabilities.session_capabilities.close is not None
    session_id = await bridge.new_session(workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "sleep"))
    await bridge.wait_for(lambda: bridge.running("sleep"))
    tree = bridge.descendants()
    closing = asyncio.ensure_future(bridge.conn.close_session(session_id=session_id))
    sent = time.perf_counter()
    await asyncio.wait_for(closing, 2)
    closed = bridge.arrival(lambda f: "method" not in f and f.get("result") == {}, after=sent)
    assert closed - sent < 1.0
    assert await asyncio.wait_for(prompt, 1) == "cancelled"
    assert not _alive(tree), "the closed session's processes survived"
    assert bridge.call_updates("s1")[-1]["status"] == "failed"
    for again in (bridge.prompt(session_id, "hello?"), bridge.conn.close_session(session_id=session_id)):
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(again, 5)
        assert caught.value.code == -32002


async def test_session_close_of_an_unknown_or_idle_session(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge, session_id = await _start(bridges, tmp_path, workspace, [{"text": "fine"}])
    with pytest.raises(RequestError) as caught:
        await asyncio.wait_for(bridge.conn.close_session(session_id="sess_unknown"), 5)
    assert caught.value.code == -32002
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 5)
    other = await bridge.new_session(workspace)  # the connection goes on
    assert await bridge.prompt(other, "go") == "end_turn"


@pytest.mark.parametrize("terminal_meta", [True, False], ids=["terminal-opt-in", "console-fallback"])
async def test_a_cancelled_command_card_keeps_its_output_and_says_it_was_cancelled(
    bridges: StartBridge, tmp_path: Path, workspace: Path, terminal_meta: bool
) -> None:
    command = {"id": "s1", "name": "bash", "arguments": {"command": "echo started; sleep 30"}}
    script = write_script(tmp_path / "script.json", [[{"tool_calls": [command]}]])
    bridge = await bridges("--allow-tool", "bash", model=script)
    await bridge.initialize(terminal_meta=terminal_meta)
    session_id = await bridge.new_session(workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await bridge.wait_for(lambda: "started" in json.dumps(bridge.call_updates("s1")[1:]))
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    final = bridge.call_updates("s1")[-1]
    assert final["status"] == "failed"
    # What it printed stays the output; the reason is not put in its place.
    assert final["rawOutput"]["output"] == "started\n"
    assert final["rawOutput"]["error"] == {"message": "Cancelled by the user.", "code": "CANCELLED"}
    if terminal_meta:
        assert "content" not in final  # content would replace (wipe) the terminal widget
        terminal = "".join(
            u.get("_meta", {}).get("terminal_output", {}).get("data", "") for u in bridge.call_updates("s1")
        )
        assert terminal == "started\n\r\nCancelled by the user.\r\n"
        # The tool reports how its process group ended, so clients can badge it ("killed: SIGTERM").
        assert final["_meta"]["terminal_exit"] == {
            "terminal_id": "s1",
            "exit_code": None,
            "signal": "SIGTERM",
        }
    else:
        texts = [b["content"]["text"] for b in final["content"]]
        assert "```console\n$ echo started; sleep 30\nstarted\n```" in texts
        assert any("Cancelled by the user." in t for t in texts)
        assert any("SIGTERM" in t for t in texts)


@pytest.mark.parametrize("terminal_meta", [True, False], ids=["terminal-opt-in", "console-fallback"])
async def test_a_timed_out_command_card_names_the_signal_that_stopped_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path, terminal_meta: bool
) -> None:
    command = {"id": "t1", "name": "bash", "arguments": {"command": "sleep 30", "timeout": 300}}
    script = write_script(tmp_path / "script.json", [[{"tool_calls": [command]}, {"text": "ok"}]])
    bridge = await bridges("--allow-tool", "bash", model=script)
    await bridge.initialize(terminal_meta=terminal_meta)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    final = bridge.call_updates("t1")[-1]
    assert final["status"] == "failed"
    assert (final["rawOutput"]["exitCode"], final["rawOutput"]["signal"]) == (None, "SIGTERM")
    if terminal_meta:
        exit_status = {"terminal_id": "t1", "exit_code": None, "signal": "SIGTERM"}
        assert final["_meta"]["terminal_exit"] == exit_status
    else:
        assert any(b["content"]["text"] == "Terminated by signal SIGTERM" for b in final["content"])
