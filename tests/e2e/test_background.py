"""Background commands end to end, the bridge a real subprocess over real pipes: `bash` with
`run_in_background` returns at once while its card keeps streaming, between prompts too, and completes with
the command's exit code; the model is told of the end at its next step; `bash_output` and `kill_bash` act on
it; `/tasks` lists and stops them; a `session/cancel` leaves them running, while `session/close` and the
bridge's end stop every process they started; `session/load` replays the card as it ended."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.mapping import fold_cards
from presenters.background import short_command
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.eventually import eventually
from tests.support.fake_openai_server import FakeOpenAIServer, chat
from tests.support.process_marks import (
    assert_all_gone,
    escaping,
    marked,
    new_mark,
    wait_started,
)

pytestmark = pytest.mark.slow

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def _background(call_id: str, command: str) -> dict[str, Any]:
    return _call(call_id, "bash", command=command, run_in_background=True)


def _gated(gate: Path, then: str) -> str:
    """Prints `one`, waits for `gate` to exist, then runs `then`."""
    return f"echo one; while [ ! -e {gate} ]; do sleep 0.01; done; {then}"


async def _start(
    bridges: StartBridge,
    tmp_path: Path,
    workspace: Path,
    *turns: list[dict[str, Any]],
    args: tuple[str, ...] = (),
) -> tuple[Bridge, str]:
    script = write_script(tmp_path / "script.json", list(turns))
    bridge = await bridges("--allow-tool", "bash", *args, model=script)
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


def _card(bridge: Bridge, session_id: str, call_id: str) -> Any:
    return fold_cards(bridge.updates(session_id))[call_id]


async def _running_gated_command(
    bridges: StartBridge, tmp_path: Path, workspace: Path, gate: Path
) -> tuple[Bridge, str]:
    """A bridge with a stored session whose turn left background command `bg1` running: it printed "one"
    and prints "two" and ends once `gate` exists."""
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("bg1", _gated(gate, "echo two")), {"text": "Ok."}],
        args=("--state-dir", str(tmp_path / "state")),
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await bridge.wait_for(lambda: "one" in _card(bridge, session_id, "bg1").output)
    return bridge, session_id


def _text(bridge: Bridge, session_id: str) -> str:
    return "".join(
        u["content"]["text"]
        for u in bridge.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    )


async def test_the_card_streams_after_the_prompt_ended_and_completes_with_the_exit_code(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    gate = tmp_path / "gate"
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("bg1", _gated(gate, "echo two; exit 4")), {"text": "Started."}],
    )
    assert await bridge.prompt(session_id, "start it") == "end_turn"
    card = _card(bridge, session_id, "bg1")
    assert card.status == "in_progress" and card.exited is None  # the prompt ended; the command runs on
    await bridge.wait_for(lambda: "one" in _card(bridge, session_id, "bg1").output)

    gate.touch()
    # A non-zero exit ends the card failed (its output and code kept), as a foreground command's does.
    await bridge.wait_for(lambda: _card(bridge, session_id, "bg1").status == "failed")
    card = _card(bridge, session_id, "bg1")
    assert card.output.replace("\r\n", "\n") == "one\ntwo\n"
    assert (card.exited.exit_code, card.outcome.exit_code) == (4, 4)
    final = bridge.call_updates("bg1", session_id)[-1]
    assert final["_meta"]["terminal_exit"] == {"terminal_id": "bg1", "exit_code": 4, "signal": None}
    assert not bridge.schema_errors


async def test_without_the_terminal_opt_in_the_card_shows_a_console_block_with_the_exit_code(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    script = write_script(
        tmp_path / "script.json", [[_background("bg1", "echo hello; exit 2"), {"text": "Started."}]]
    )
    bridge = await bridges("--allow-tool", "bash", model=script)
    await bridge.initialize(terminal_meta=False)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await bridge.wait_for(lambda: _card(bridge, session_id, "bg1").status == "failed")
    texts = _card(bridge, session_id, "bg1").texts
    assert "```console\n$ echo hello; exit 2\nhello\n```" in texts and "Exited with code 2" in texts


async def test_the_model_is_told_at_its_next_step_that_the_command_ended(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    gate = tmp_path / "gate"
    command = _gated(gate, "exit 3")
    with FakeOpenAIServer() as server:
        server.enqueue(
            chat(tool_calls=[{"id": "call_bg", "name": "bash",
                              "arguments": {"command": command, "run_in_background": True}}]),
            chat(text="It runs."),
            chat(text="Noted."),
        )  # fmt: skip
        bridge = await bridges(
            "--base-url", server.base_url, "--allow-tool", "bash", model="openai:fake-model",
            env={**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"},
        )  # fmt: skip
        await bridge.initialize()
        session_id = await bridge.new_session(workspace)
        assert await bridge.prompt(session_id, "start it") == "end_turn"
        tool = next(m for m in server.requests[1].json()["messages"] if m["role"] == "tool")
        assert "running in the background with bash_id 'call_bg'" in tool["content"]

        gate.touch()
        await bridge.wait_for(lambda: _card(bridge, session_id, "call_bg").status == "failed")
        assert await bridge.prompt(session_id, "and?") == "end_turn"
        messages = server.requests[2].json()["messages"]
    note = (
        f"Background command call_bg (`{short_command(command)}`) exited with code 3; use bash_output "
        "to read its output."
    )
    assert [m["content"] for m in messages[-2:]] == ["and?", note]
    assert all(m["role"] == "user" for m in messages[-2:])


async def test_bash_output_reads_the_new_output_and_kill_bash_stops_every_process(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("bg1", f"echo ready; {escaping(mark)}"), {"text": "Started."}],
        [
            _call("o1", "bash_output", bash_id="bg1"),
            _call("k1", "kill_bash", bash_id="bg1"),
            {"text": "Done."},
        ],
    )
    assert await bridge.prompt(session_id, "start") == "end_turn"
    await wait_started(mark)
    assert await bridge.prompt(session_id, "read and stop") == "end_turn"

    await assert_all_gone(mark)
    output = _card(bridge, session_id, "o1")
    assert (
        output.status == "completed" and "ready" in output.texts[0] and "Status: running." in output.texts[0]
    )
    assert _card(bridge, session_id, "k1").status == "completed"
    # The card ends a moment after the process: its end first takes a snapshot of what it changed.
    await bridge.wait_for(lambda: _card(bridge, session_id, "bg1").status != "in_progress")
    card = _card(bridge, session_id, "bg1")
    assert card.status == "failed" and card.exited is not None and card.exited.signal == "SIGTERM"
    assert "Stopped by kill_bash." in card.output
    assert bridge.client.permission_requests == []  # reading and stopping its own command asks nothing


async def test_a_cancel_leaves_background_commands_running_and_tasks_lists_and_stops_them(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("bg1", f"exec -a {mark} sleep 300"), _call("n1", "nap", seconds=30), {"text": "no"}],
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await bridge.wait_for(lambda: any(u.get("toolCallId") == "n1" for u in bridge.updates(session_id)))
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 5) == "cancelled"
    assert len(marked(mark, named=True)) == 1  # the cancel named the turn, not the command

    assert await bridge.prompt(session_id, "/tasks") == "end_turn"
    listing = _text(bridge, session_id)
    assert "| id | command | state | runtime |" in listing
    assert f"| bg1 | `exec -a {mark} sleep 300` | running |" in listing

    assert await bridge.prompt(session_id, "/tasks kill bg1") == "end_turn"
    assert f"Stopping background command bg1 (`exec -a {mark} sleep 300`)." in _text(bridge, session_id)
    await bridge.wait_for(lambda: _card(bridge, session_id, "bg1").status == "failed")
    await assert_all_gone(mark)
    assert "Stopped by /tasks kill." in _card(bridge, session_id, "bg1").output
    commands = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "available_commands_update"]
    assert any(c["name"] == "tasks" for c in commands[-1]["availableCommands"])


async def test_session_close_stops_every_process_and_ends_the_card(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    mark = new_mark()
    bridge, session_id = await _start(
        bridges, tmp_path, workspace, [_background("bg1", escaping(mark)), {"text": "Started."}]
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await wait_started(mark)
    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 5)
    await assert_all_gone(mark)
    card = _card(bridge, session_id, "bg1")
    assert card.status == "failed" and "Stopped by the session was closed." in card.output


async def test_the_bridge_ending_stops_them_and_load_replays_the_card_as_it_ended(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    mark = new_mark()
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("done", "echo finished; exit 5"), _background("long", escaping(mark)), {"text": "Ok."}],
        [{"text": "Again."}],
        args=("--state-dir", str(state)),
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await wait_started(mark)
    await bridge.wait_for(lambda: _card(bridge, session_id, "done").status == "failed")  # exit 5
    live_done = _card(bridge, session_id, "done")
    await bridge.close_stdin()
    await asyncio.wait_for(bridge.proc.wait(), 5)
    await assert_all_gone(mark)
    live_long = _card(bridge, session_id, "long")
    assert live_long.status == "failed" and "Stopped by the session ended." in live_long.output

    again = await bridges("--state-dir", str(state), model=tmp_path / "script.json")
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = fold_cards(again.updates(session_id))
    for live, card in ((live_done, replayed["done"]), (live_long, replayed["long"])):
        assert (card.status, card.exited, card.outcome) == (live.status, live.exited, live.outcome)
    assert replayed["done"].status == "failed" and replayed["done"].exited.exit_code == 5
    assert replayed["done"].output.replace("\r\n", "\n") == "finished\n"
    assert "Stopped by the session ended." in replayed["long"].output
    assert not again.schema_errors


async def test_a_card_whose_end_was_never_logged_replays_as_ended_unrecorded(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    mark = new_mark()
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [_background("bg1", f"exec -a {mark} sleep 300"), {"text": "Ok."}],
        args=("--state-dir", str(state)),
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await eventually(lambda: len(marked(mark, named=True)) == 1, within=10, what="the command")
    bridge.proc.kill()  # SIGKILL: no shutdown code runs, the command is orphaned
    await bridge.proc.wait()
    for orphan in marked(mark):
        orphan.kill()

    again = await bridges("--state-dir", str(state), model=tmp_path / "script.json")
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    card = fold_cards(again.updates(session_id))["bg1"]
    assert card.status == "failed" and card.exited is not None
    assert "end was not recorded: the bridge stopped while it ran" in card.output
    assert await again.prompt(session_id, "/tasks") == "end_turn"
    assert "No background commands in this session." in _text(again, session_id)


async def test_a_program_s_background_command_keeps_its_card_under_the_program_s_live_and_replayed(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    gate = tmp_path / "gate"
    code = (
        f'const started = await bash({{ command: "{_gated(gate, "exit 6")}", run_in_background: true }});\n'
        "return started.bash_id;"
    )
    program = {"id": "p1", "name": "run_code", "arguments": {"code": code, "description": "Start it"}}
    bridge, session_id = await _start(
        bridges,
        tmp_path,
        workspace,
        [{"tool_calls": [program]}, {"text": "Ok."}],
        args=("--state-dir", str(state)),
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert _card(bridge, session_id, "p1").status == "completed"
    assert _card(bridge, session_id, "p1:code:1").status == "in_progress"
    gate.touch()
    await bridge.wait_for(lambda: _card(bridge, session_id, "p1:code:1").status == "failed")
    live = _card(bridge, session_id, "p1:code:1")
    assert (live.parent, live.exited.exit_code) == ("p1", 6) and "one" in live.output
    await bridge.stop()

    again = await bridges("--state-dir", str(state), model=tmp_path / "script.json")
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    card = fold_cards(again.updates(session_id))["p1:code:1"]
    assert (card.status, card.parent, card.exited, card.outcome) == (
        live.status, live.parent, live.exited, live.outcome,
    )  # fmt: skip


async def test_reloading_an_open_session_keeps_its_running_command_s_card_live(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    gate = tmp_path / "gate"
    bridge, session_id = await _running_gated_command(bridges, tmp_path, workspace, gate)
    before = len(bridge.updates(session_id))
    await bridge.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    reloaded = bridge.updates(session_id)[before:]
    assert fold_cards(reloaded)["bg1"].status == "in_progress"  # replayed open: it still runs

    gate.touch()
    await bridge.wait_for(
        lambda: fold_cards(bridge.updates(session_id)[before:])["bg1"].status == "completed"
    )
    ends = [u for u in bridge.call_updates("bg1", session_id) if u.get("status") == "completed"]
    assert len(ends) == 1  # by the reloaded session alone
    assert fold_cards(bridge.updates(session_id)[before:])["bg1"].output.replace("\r\n", "\n") == "one\ntwo\n"


async def test_resuming_an_open_session_keeps_its_running_command_s_card_and_logs_its_end(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    """A resume draws no card, except those of commands still running here (replay.py's `keeps`): the
    card comes back muted (the client never saw it), and the command's end is still logged by the
    resumed session, so a later load shows it completed."""
    gate = tmp_path / "gate"
    bridge, session_id = await _running_gated_command(bridges, tmp_path, workspace, gate)
    log = tmp_path / "state" / "sessions" / f"{session_id}.jsonl"
    await bridge.request("session/resume", {"sessionId": session_id, "cwd": str(workspace)})
    assert "tool/background-end" not in log.read_text()

    gate.touch()
    await eventually(lambda: "tool/background-end" in log.read_text(), what="the end in the log")
    before = len(bridge.updates(session_id))
    await bridge.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    card = fold_cards(bridge.updates(session_id)[before:])["bg1"]
    assert card.status == "completed"
    assert card.output.replace("\r\n", "\n") == "one\ntwo\n"
