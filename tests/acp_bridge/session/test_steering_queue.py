"""The steering queue's rules in process (`session/steering.py`), against a fake session: what a running
turn takes (up to a command), when a late steer takes one more step, how every waiting request is answered
when the turn ends (its stop reason, its error, `cancelled`, or run as the next prompt, in arrival order),
and the client's message id. The bridge end to end is test_steering.py."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acp_bridge.client.channel import Update
from acp_bridge.common.errors import InternalError
from acp_bridge.mapping import WireContext
from acp_bridge.session.prompt_blocks import Prompt, read_prompt
from acp_bridge.session.steering import PromptAnswer, SessionSteering, client_message_id
from acp_bridge.turn.loop import StopReason


class FakeTurn:
    cancelled = False


class FakeSession:
    """A session whose turn runs until the test ends it; a prompt run next starts a turn."""

    def __init__(self) -> None:
        self.turn_index = 0  # the turns that ended (the number of the running one, once it ended)
        self._turn: FakeTurn | None = FakeTurn()
        self.wire = WireContext(cwd="/w")
        self.sent: list[Update] = []
        self.prompts: list[object] = []
        self.finish: asyncio.Future[StopReason] | None = None
        self.usage: dict[str, int] | None = None  # the running (or last) prompt's tokens

    @property
    def turn(self) -> FakeTurn | None:
        return self._turn

    @turn.setter
    def turn(self, turn: FakeTurn | None) -> None:
        if turn is None and self._turn is not None:
            self.turn_index += 1  # as a session counts a turn when it ends
        self._turn = turn

    @property
    def busy(self) -> bool:
        return self.turn is not None

    def read(self, blocks: object) -> Prompt:
        return read_prompt(blocks)

    async def prompt(self, blocks: object) -> StopReason:
        assert not self.busy
        self.prompts.append(blocks)
        self.turn = FakeTurn()
        self.finish = asyncio.get_running_loop().create_future()
        return await self.finish

    def prompt_usage(self) -> Any:
        return self.usage

    def send(self, update: Update) -> None:
        self.sent.append(update)


def _text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


async def _queued(steering: SessionSteering, session: FakeSession, *texts: str) -> list[asyncio.Task[Any]]:
    tasks = []
    for text in texts:
        tasks.append(asyncio.ensure_future(steering.submit(_text(text), text)))
        await asyncio.sleep(0)  # the request runs until it waits: queued
    assert steering.waiting == len(texts)
    return tasks


async def test_the_turn_takes_messages_up_to_a_command_and_answers_them_with_its_stop_reason() -> None:
    session = FakeSession()
    steering = SessionSteering(session, "step")
    one, two, command, three = await _queued(steering, session, "one", "two", "/title x", "three")
    taken = steering.take()
    assert [(s.text, s.message_id) for s in taken] == [("one", "one"), ("two", "two")]
    assert steering.take() == [] and steering.waiting == 2
    assert not steering.takes_step()  # a command first: the rest waits for the turn to end
    session.turn = None
    first = session.usage = {"totalTokens": 3, "inputTokens": 2, "outputTokens": 1}
    steering.turn_ended("end_turn")
    # Answered with the turn's stop reason and its tokens, the figures its own prompt answers with.
    assert await one == await two == PromptAnswer("end_turn", steered=True, usage=first, turn=1)
    # What is left runs next, in arrival order: the command starts a prompt, and the message after it
    # waits for that one (a fake turn here, which the test ends).
    await asyncio.sleep(0)
    assert session.prompts == [_text("/title x")]
    assert [u.get("messageId") for u in session.sent] == ["/title x"]
    assert not three.done() and steering.waiting == 1
    assert [s.text for s in steering.take()] == ["three"]
    assert session.finish is not None
    second = session.usage = {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}
    session.finish.set_result("end_turn")
    session.turn = None
    steering.turn_ended("end_turn")
    assert await command == PromptAnswer("end_turn", usage=second, turn=2)  # the fake's prompt ran a turn
    assert await three == PromptAnswer("end_turn", steered=True, usage=second, turn=2)
    assert (await three).response() == {
        "stopReason": "end_turn",
        "usage": second,
        "_meta": {"acpBridge": {"steered": True, "turn": 2}},
    }


@pytest.mark.parametrize(("late", "takes"), [("step", True), ("turn", False)])
async def test_a_late_message_takes_one_more_step_or_waits(late: Any, takes: bool) -> None:
    session = FakeSession()
    steering = SessionSteering(session, late)
    assert not steering.takes_step()  # nothing arrived
    await _queued(steering, session, "late")
    assert steering.takes_step() is takes


async def test_a_failed_turn_fails_what_it_took_and_runs_the_rest_next() -> None:
    session = FakeSession()
    steering = SessionSteering(session, "step")
    (taken,) = await _queued(steering, session, "taken")
    steering.take()
    (left,) = await _queued(steering, session, "left")  # after the last step boundary
    session.turn = None
    steering.turn_ended(None, InternalError("The model failed: boom"))
    with pytest.raises(InternalError, match="boom"):
        await taken
    await asyncio.sleep(0)
    assert session.prompts == [_text("left")]
    assert session.finish is not None
    session.finish.set_result("end_turn")
    assert await left == PromptAnswer("end_turn")


async def test_cancel_answers_everything_cancelled_and_nothing_joins_a_cancelled_turn() -> None:
    session = FakeSession()
    steering = SessionSteering(session, "step")
    (taken,) = await _queued(steering, session, "taken")
    steering.take()
    (waiting,) = await _queued(steering, session, "waiting")
    steering.cancel()
    assert await waiting == PromptAnswer("cancelled")
    assert session.turn is not None
    session.turn.cancelled = True
    assert await steering.submit(_text("too late")) == PromptAnswer("cancelled")
    session.turn = None
    steering.turn_ended("cancelled")
    assert await taken == PromptAnswer("cancelled", steered=True, turn=1)
    assert session.prompts == [] and session.sent == []


async def test_a_request_that_goes_away_is_forgotten() -> None:
    session = FakeSession()
    steering = SessionSteering(session, "step")
    (gone,) = await _queued(steering, session, "gone")
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert steering.waiting == 0 and steering.take() == []


def test_the_clients_message_id_is_taken_when_usable() -> None:
    assert client_message_id({"acpBridge": {"messageId": "m-1"}}) == "m-1"
    assert client_message_id({"acpBridge": {"messageId": "x" * 129}}) is None
    assert client_message_id({"acpBridge": {"messageId": 7}}) is None
    assert client_message_id({"other": {"messageId": "m-1"}}) is None
    assert client_message_id(None) is None
    assert PromptAnswer("end_turn", steered=True).response() == {
        "stopReason": "end_turn",
        "_meta": {"acpBridge": {"steered": True}},
    }
    assert PromptAnswer("cancelled").response() == {"stopReason": "cancelled"}
