"""The step plumbing a turn and a compaction share (`model_step.stream_model_step`): a step streams under a
cancel signal, and its stream is closed however the step ends: after a normal end, when the signal
interrupts the consumer, when the consumer's own task is cancelled. The close is shielded (it runs in full
though the step's scope is cancelled) and bounded by `STREAM_CLOSE_DEADLINE_S` even when it hangs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from acp_bridge.models import ModelError, StepComplete, StepEvent, StepRequest, TextDelta, Waiting
from acp_bridge.turn import model_step
from acp_bridge.turn.model_step import StepDelta, stream_model_step
from registry_core import CancelController

REQUEST = StepRequest(messages=(), tools=(), turn_index=0, step_index=0)


class Backend:
    """A model whose every step is the stream `make` returns; counts the steps it was asked for."""

    name = "test"

    def __init__(self, make: Callable[[], AsyncIterator[StepEvent]]) -> None:
        self.make = make
        self.asked = 0

    def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        self.asked += 1
        return self.make()

    async def aclose(self) -> None:
        return None


class Stream:
    """A stream that is no async generator: only its `aclose` releases it, and a real one awaits there
    (an HTTP response to give back), so an unshielded close in a cancelled scope would not finish."""

    def __init__(self, events: list[StepEvent], *, hang_on_close: bool = False) -> None:
        self.events = events
        self.hang_on_close = hang_on_close
        self.closed = False
        self.close_interrupted = False

    def __aiter__(self) -> Stream:
        return self

    async def __anext__(self) -> StepEvent:
        if not self.events:
            raise StopAsyncIteration
        return self.events.pop(0)

    async def aclose(self) -> None:
        try:
            await anyio.sleep(0.01)
            if self.hang_on_close:
                await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.close_interrupted = True
            raise
        self.closed = True


class Consumer:
    """`on_event`: keeps what it is given; from the `wait_at`-th event on, it waits (a slow client's drain)
    until it is cancelled."""

    def __init__(self, wait_at: int | None = None) -> None:
        self.seen: list[StepDelta] = []
        self.wait_at = wait_at
        self.waiting = asyncio.Event()

    async def __call__(self, event: StepDelta) -> None:
        self.seen.append(event)
        if self.wait_at is not None and len(self.seen) >= self.wait_at:
            self.waiting.set()
            await asyncio.Event().wait()


def three_events() -> list[StepEvent]:
    return [TextDelta("a"), TextDelta("b"), StepComplete(finish_reason="stop")]


async def test_a_normal_end_gives_the_step_end_and_closes_the_stream() -> None:
    stream = Stream(three_events())
    consumer = Consumer()
    complete = await stream_model_step(Backend(lambda: stream), REQUEST, CancelController().signal, consumer)
    assert complete == StepComplete(finish_reason="stop")
    assert consumer.seen == [TextDelta("a"), TextDelta("b")]  # the end is returned, not given
    assert stream.closed


async def test_a_cancel_through_the_signal_interrupts_the_consumer_and_closes_the_stream() -> None:
    stream = Stream(three_events())
    controller = CancelController()
    consumer = Consumer(wait_at=1)
    step = asyncio.ensure_future(
        stream_model_step(Backend(lambda: stream), REQUEST, controller.signal, consumer)
    )
    await asyncio.wait_for(consumer.waiting.wait(), 2)
    controller.cancel()
    assert await asyncio.wait_for(step, 2) is None
    # Closed in full although the step's scope was cancelled: the close is shielded.
    assert stream.closed and not stream.close_interrupted


async def test_an_async_generator_left_at_a_yield_runs_its_cleanup_when_cancelled() -> None:
    cleaned: list[str] = []

    async def generator() -> AsyncIterator[StepEvent]:
        try:
            for event in three_events():
                yield event
        finally:
            await anyio.sleep(0.01)  # its cleanup awaits, as closing an HTTP response does
            cleaned.append("done")

    controller = CancelController()
    consumer = Consumer(wait_at=1)
    step = asyncio.ensure_future(stream_model_step(Backend(generator), REQUEST, controller.signal, consumer))
    await asyncio.wait_for(consumer.waiting.wait(), 2)
    controller.cancel()
    assert await asyncio.wait_for(step, 2) is None
    assert cleaned == ["done"]


async def test_a_cancel_of_the_consumers_own_task_propagates_and_still_closes_the_stream() -> None:
    stream = Stream(three_events())
    consumer = Consumer(wait_at=1)
    signal = CancelController().signal
    step = asyncio.ensure_future(stream_model_step(Backend(lambda: stream), REQUEST, signal, consumer))
    await asyncio.wait_for(consumer.waiting.wait(), 2)
    step.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(step, 2)
    assert stream.closed


async def test_a_close_that_hangs_is_given_up_after_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_step, "STREAM_CLOSE_DEADLINE_S", 0.1)
    stream = Stream(three_events(), hang_on_close=True)
    controller = CancelController()
    consumer = Consumer(wait_at=1)
    step = asyncio.ensure_future(
        stream_model_step(Backend(lambda: stream), REQUEST, controller.signal, consumer)
    )
    await asyncio.wait_for(consumer.waiting.wait(), 2)
    started = time.monotonic()
    controller.cancel()
    assert await asyncio.wait_for(step, 2) is None
    elapsed = time.monotonic() - started
    assert 0.1 <= elapsed < 1.0
    assert stream.close_interrupted and not stream.closed


async def test_a_signal_cancelled_before_the_step_asks_the_model_nothing() -> None:
    controller = CancelController()
    controller.cancel()
    backend = Backend(lambda: Stream(three_events()))
    assert await stream_model_step(backend, REQUEST, controller.signal, Consumer()) is None
    assert backend.asked == 0


async def test_a_stream_that_ends_without_completing_is_a_protocol_error_and_is_closed() -> None:
    stream = Stream([TextDelta("half a summary")])
    with pytest.raises(ModelError) as raised:
        await stream_model_step(
            Backend(lambda: stream), REQUEST, CancelController().signal, Consumer(), what="summary"
        )
    assert raised.value.kind == "protocol"
    assert raised.value.message == "the model's summary ended without completing"
    assert stream.closed


async def test_the_signal_keeps_no_callback_of_a_finished_step() -> None:
    signal = CancelController().signal
    for _ in range(3):
        await stream_model_step(Backend(lambda: Stream(three_events())), REQUEST, signal, Consumer())
    assert signal.callback_count == 0


async def test_a_backend_s_wait_goes_to_on_wait_never_to_on_event() -> None:
    waiting = Waiting("rate_limited", 2.0, 1, 3, 429)
    stream = Stream([waiting, TextDelta("hi"), StepComplete()])
    seen: list[StepDelta] = []
    told: list[Waiting] = []

    async def on_event(event: StepDelta) -> None:
        seen.append(event)

    complete = await stream_model_step(
        Backend(lambda: stream), REQUEST, CancelController().signal, on_event, on_wait=told.append
    )
    assert complete == StepComplete()
    assert told == [waiting] and seen == [TextDelta("hi")]
