"""Steering (docs/sessions.md, "Steering"): a `session/prompt` sent while a turn runs is taken, reaches the
model at the turn's next step boundary (after the step's tool results, as the user's message), is echoed
where it landed and logged there (so `session/load` shows it and gives it to the model in order), and both
prompts are answered when the turn ends; one sent during the final answer takes one more step (`step`,
Codex) or runs as the next prompt (`turn`, Claude Code); `session/cancel` stops both.

The bridge is a real subprocess; the model is the fake OpenAI server, whose recorded requests say what the
model got. A turn is held at a known point by a `bash` call reading a FIFO the test writes to (the call
cannot end before), or by an answer the fake server holds mid-stream (`Hold`). That the bridge has read a
steer before the test goes on is known from the answer to a request sent after it (`_acpBridge/listRules`):
requests are read in order, and a steer is queued before its handler first waits.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge
from tests.support.eventually import eventually
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, Hold, chat, chat_chunks
from tests.support.process_marks import assert_all_gone, marked, new_mark

from .conftest import openai_bridge, sent_messages, text_of

ALLOW_BASH = ("--allow-tool", "bash")


class Fifo:
    """A FIFO a `bash` call reads one line from (`head -n 1`): the call runs until `release()`. Held open
    for reading and writing here, so the command's open never blocks and a line written early waits."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)

    def command(self, mark: str) -> str:
        return f"exec -a {mark} head -n 1 {self.path}"

    def release(self, line: str = "go") -> None:
        os.write(self.fd, f"{line}\n".encode())

    def close(self) -> None:
        os.close(self.fd)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Fifo]:
    gate = Fifo(tmp_path / "gate")
    yield gate
    gate.close()


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def _steer(
    bridge: Bridge, session_id: str, blocks: list[dict[str, Any]], message_id: str | None = None
) -> Any:
    params: dict[str, Any] = {"sessionId": session_id, "prompt": blocks}
    if message_id is not None:
        params["_meta"] = {"acpBridge": {"messageId": message_id}}
    return asyncio.ensure_future(bridge.request("session/prompt", params, within=20))


async def _read_by_bridge(bridge: Bridge, session_id: str) -> None:
    """Returns once the bridge has read (and so queued) every request sent before this one."""
    await bridge.request("_acpBridge/listRules", {"sessionId": session_id})


def _running(bridge: Bridge, call_id: str) -> bool:
    return any(u.get("status") == "in_progress" for u in bridge.call_updates(call_id))


def _position(updates: list[dict[str, Any]], predicate: Any) -> int:
    return next(i for i, u in enumerate(updates) if predicate(u))


def _user_chunks(updates: list[dict[str, Any]], message_id: str) -> list[dict[str, Any]]:
    return [
        u for u in updates if u["sessionUpdate"] == "user_message_chunk" and u.get("messageId") == message_id
    ]


def _prompt_answers(bridge: Bridge) -> list[tuple[int, dict[str, Any]]]:
    """(frame index, result) of every `session/prompt` answer, in arrival order."""
    return [
        (i, f["result"])
        for i, f in enumerate(bridge.frames)
        if "method" not in f and isinstance(f.get("result"), dict) and "stopReason" in f["result"]
    ]


def _frame_of_update(bridge: Bridge, predicate: Any) -> int:
    return next(
        i
        for i, f in enumerate(bridge.frames)
        if f.get("method") == "session/update" and predicate(f["params"]["update"])
    )


async def test_a_prompt_sent_while_a_tool_runs_reaches_the_next_request_after_its_results(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, fifo: Fifo
) -> None:
    mark = new_mark()
    server.enqueue(chat(tool_calls=[_bash("b1", fifo.command(mark))]), chat(text="ok, tests too"))
    bridge = await openai_bridge(bridges, server, *ALLOW_BASH)
    session_id = await bridge.new_session(workspace)
    first = asyncio.ensure_future(bridge.prompt(session_id, "fix the bug"))
    await bridge.wait_for(lambda: _running(bridge, "b1"))
    uri = f"file://{workspace}/a.txt"
    steer = _steer(
        bridge,
        session_id,
        [
            {"type": "text", "text": "and run the tests"},
            {"type": "resource", "resource": {"uri": uri, "mimeType": "text/plain", "text": "alpha\n"}},
        ],
        message_id="client-1",
    )
    await _read_by_bridge(bridge, session_id)
    assert not steer.done() and len(server.requests) == 1
    fifo.release()
    assert await first == "end_turn"
    # Answered with the turn's stop reason and its tokens (two requests of 11 + 7), as the first prompt is.
    usage = {"totalTokens": 36, "inputTokens": 22, "outputTokens": 14}
    assert await steer == {
        "stopReason": "end_turn",
        "usage": usage,
        "_meta": {"acpBridge": {"steered": True, "turn": 1}},  # the running turn's number (checkpoints)
    }

    # The model got it in the very next request: after the call's result, as the user's message.
    assert len(server.requests) == 2
    messages = sent_messages(server, 1)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[3]["content"].startswith("go")
    steered = messages[4]["content"]
    assert steered.startswith("and run the tests\n\n")
    assert f'<resource uri="{uri}" mimeType="text/plain">\nalpha\n</resource>' in steered

    # Every client sees where it landed: echoed under the client's id, after the card, before the answer.
    updates = bridge.updates(session_id)
    echo = _user_chunks(updates, "client-1")
    assert [c["content"]["type"] for c in echo] == ["text", "resource"]
    assert echo[0]["content"]["text"] == "and run the tests"
    landed = updates.index(echo[0])
    completed = _position(updates, lambda u: u.get("toolCallId") == "b1" and u.get("status") == "completed")
    answered = _position(updates, lambda u: u["sessionUpdate"] == "agent_message_chunk")
    assert completed < landed < answered

    # `session/load` shows it where it landed, and gives it to the model in order.
    server.enqueue(chat(text="again"))
    second = await openai_bridge(bridges, server)
    await second.request("session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
    replayed = second.updates(session_id)
    user_texts = [u["content"].get("text") for u in replayed if u["sessionUpdate"] == "user_message_chunk"]
    assert user_texts[0] == "fix the bug" and user_texts[1] == "and run the tests"
    again = _user_chunks(replayed, "client-1")
    assert [c["content"]["type"] for c in again] == ["text", "resource"]
    replay_landed = replayed.index(again[0])
    assert (
        _position(replayed, lambda u: u.get("toolCallId") == "b1" and u.get("status") == "completed")
        < replay_landed
        < _position(replayed, lambda u: u["sessionUpdate"] == "agent_message_chunk")
    )
    assert await second.prompt(session_id, "and now?") == "end_turn"
    reloaded = sent_messages(server, 2)
    assert [m["role"] for m in reloaded] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
        "user",
    ]
    assert reloaded[4]["content"] == steered
    # It started no prompt of its own: the session is still titled by its first prompt.
    listed = await second.request("session/list", {"cwd": str(workspace)})
    assert [s["title"] for s in listed["sessions"]] == ["fix the bug"]


async def test_a_prompt_sent_during_the_final_answer_takes_one_more_step(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    hold = Hold()
    server.enqueue(SSE(chat_chunks(text="All done here."), hold=hold, hold_after=2), chat(text="Noted."))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    first = asyncio.ensure_future(bridge.prompt(session_id, "tidy up"))
    await hold.wait_reached()
    steer = _steer(bridge, session_id, [{"type": "text", "text": "also the README"}])
    await _read_by_bridge(bridge, session_id)
    hold.release()
    assert await first == "end_turn"
    assert (await steer)["_meta"] == {"acpBridge": {"steered": True, "turn": 1}}
    assert len(server.requests) == 2
    messages = sent_messages(server, 1)
    assert [(m["role"], m.get("content")) for m in messages[1:]] == [
        ("user", "tidy up"),
        ("assistant", "All done here."),
        ("user", "also the README"),
    ]
    # One turn: the first prompt is answered only after the extra step.
    answers = _prompt_answers(bridge)
    noted = _frame_of_update(bridge, lambda u: u.get("content", {}).get("text") == "Noted.")
    assert len(answers) == 2 and all(index > noted for index, _ in answers)
    assert text_of(bridge.updates(session_id)) == "All done here.Noted."


async def test_with_steer_late_turn_a_prompt_sent_during_the_final_answer_runs_next(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    hold = Hold()
    server.enqueue(SSE(chat_chunks(text="All done here."), hold=hold, hold_after=2), chat(text="Noted."))
    bridge = await openai_bridge(bridges, server, "--steer-late", "turn")
    session_id = await bridge.new_session(workspace)
    first = asyncio.ensure_future(bridge.prompt(session_id, "tidy up"))
    await hold.wait_reached()
    steer = _steer(bridge, session_id, [{"type": "text", "text": "also the README"}], message_id="m2")
    await _read_by_bridge(bridge, session_id)
    hold.release()
    assert await first == "end_turn"
    # Its own turn, not steered into the first one: its answer has its own turn's tokens.
    assert await steer == {
        "stopReason": "end_turn",
        "usage": {"totalTokens": 18, "inputTokens": 11, "outputTokens": 7},
        "_meta": {"acpBridge": {"turn": 2}},
    }
    messages = sent_messages(server, 1)
    assert [(m["role"], m.get("content")) for m in messages[1:]] == [
        ("user", "tidy up"),
        ("assistant", "All done here."),
        ("user", "also the README"),
    ]
    # The first prompt answered before the next one started, which is echoed where it starts.
    (first_answer, _), (second_answer, _) = _prompt_answers(bridge)
    echo = _frame_of_update(bridge, lambda u: u.get("messageId") == "m2")
    noted = _frame_of_update(bridge, lambda u: u.get("content", {}).get("text") == "Noted.")
    assert first_answer < echo < noted < second_answer


async def test_cancel_answers_both_cancelled_and_leaves_no_process(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, fifo: Fifo
) -> None:
    mark = new_mark()
    server.enqueue(chat(tool_calls=[_bash("b1", fifo.command(mark))]))
    bridge = await openai_bridge(bridges, server, *ALLOW_BASH)
    session_id = await bridge.new_session(workspace)
    first = asyncio.ensure_future(bridge.prompt(session_id, "long job"))
    await eventually(lambda: marked(mark, named=True), within=10, what="the command to run")
    steer = _steer(bridge, session_id, [{"type": "text", "text": "actually, stop"}])
    await _read_by_bridge(bridge, session_id)
    await bridge.conn.cancel(session_id=session_id)
    assert await first == "cancelled"
    assert (await steer)["stopReason"] == "cancelled"
    await assert_all_gone(mark, within=5.0)
    assert len(server.requests) == 1  # the steer never reached the model
    assert not [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "user_message_chunk"]
    # The session takes prompts again.
    server.enqueue(chat(text="fresh"))
    assert await bridge.prompt(session_id, "hello") == "end_turn"


async def test_a_steer_the_turn_could_not_take_is_refused_or_run_next(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, fifo: Fifo
) -> None:
    """Bad content is refused at once, the turn going on; a command waits for the turn, then runs."""
    server.enqueue(chat(tool_calls=[_bash("b1", fifo.command(new_mark()))]), chat(text="done"))
    bridge = await openai_bridge(bridges, server, *ALLOW_BASH)
    session_id = await bridge.new_session(workspace)
    first = asyncio.ensure_future(bridge.prompt(session_id, "work"))
    await bridge.wait_for(lambda: _running(bridge, "b1"))
    with pytest.raises(RequestError) as refused:
        await _steer(bridge, session_id, [{"type": "audio", "mimeType": "audio/wav", "data": "AAAA"}])
    assert refused.value.code == -32602
    command = _steer(bridge, session_id, [{"type": "text", "text": "/title Renamed meanwhile"}])
    await _read_by_bridge(bridge, session_id)
    fifo.release()
    assert await first == "end_turn"
    assert await command == {"stopReason": "end_turn"}
    assert len(server.requests) == 2
    assert all("/title" not in str(m.get("content")) for m in sent_messages(server, 1))
    info = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "session_info_update"]
    assert info and info[-1].get("title") == "Renamed meanwhile"
