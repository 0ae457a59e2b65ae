"""`until_cancelled`: an awaitable raced against a `CancelSignal`, the one implementation the pipeline's
approval wait and the MCP servers' waits share. Each test bounds its waits, so a broken race fails
instead of hanging."""

from __future__ import annotations

import asyncio

import pytest

from registry_core import NEVER, CancelController, CancelReason, until_cancelled

BOUND_S = 2.0


async def forever(started: asyncio.Event) -> None:
    """Say it started, then wait until cancelled."""
    started.set()
    await asyncio.Event().wait()


async def test_the_value_comes_back_and_no_callback_stays_on_the_signal() -> None:
    controller = CancelController()

    async def work() -> int:
        await asyncio.sleep(0)
        return 42

    assert await until_cancelled(work(), controller.signal) == 42
    assert controller.signal.callback_count == 0
    controller.cancel()  # firing later reaches nothing left over


async def test_the_signal_wins_the_awaitable_is_cancelled_and_settled_first() -> None:
    controller = CancelController()
    started = asyncio.Event()
    events: list[str] = []

    async def work() -> str:
        try:
            await forever(started)
        except asyncio.CancelledError:
            events.append("cancelled")
            await asyncio.sleep(0)  # cleanup that itself awaits
            events.append("cleaned up")
            raise
        return "never"

    racing = asyncio.ensure_future(until_cancelled(work(), controller.signal))
    await asyncio.wait_for(started.wait(), BOUND_S)
    assert controller.signal.callback_count == 1
    controller.cancel()
    assert await asyncio.wait_for(racing, BOUND_S) is None
    assert events == ["cancelled", "cleaned up"]  # done before the race returned
    assert controller.signal.callback_count == 0


async def test_a_signal_already_fired_returns_none_without_running_the_awaitable() -> None:
    controller = CancelController()
    controller.cancel(CancelReason("TIMEOUT", "too slow"))
    ran: list[bool] = []

    async def work() -> int:
        ran.append(True)
        return 1

    assert await asyncio.wait_for(until_cancelled(work(), controller.signal), BOUND_S) is None
    assert ran == []
    assert controller.signal.callback_count == 0


async def test_a_future_given_is_cancelled_when_the_signal_wins() -> None:
    controller = CancelController()
    future: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    racing = asyncio.ensure_future(until_cancelled(future, controller.signal))
    await asyncio.sleep(0)
    controller.cancel()
    assert await asyncio.wait_for(racing, BOUND_S) is None
    assert future.cancelled()


async def test_the_awaitables_error_propagates_and_the_callback_goes() -> None:
    controller = CancelController()

    async def work() -> int:
        raise KeyError("broken")

    with pytest.raises(KeyError):
        await until_cancelled(work(), controller.signal)
    assert controller.signal.callback_count == 0


@pytest.mark.parametrize("signal_fired_too", [False, True])
async def test_the_callers_own_cancellation_propagates(signal_fired_too: bool) -> None:
    controller = CancelController()
    started = asyncio.Event()
    inner_cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await forever(started)
        except asyncio.CancelledError:
            inner_cancelled.set()
            raise

    racing = asyncio.ensure_future(until_cancelled(work(), controller.signal))
    await asyncio.wait_for(started.wait(), BOUND_S)
    racing.cancel()
    if signal_fired_too:
        controller.cancel()  # both at once: the caller's cancellation is still not swallowed
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(racing, BOUND_S)
    assert inner_cancelled.is_set()
    assert controller.signal.callback_count == 0


async def test_a_cancellation_not_from_the_signal_is_not_mistaken_for_it() -> None:
    async def work() -> None:
        raise asyncio.CancelledError  # the awaitable's own, the signal has not fired

    with pytest.raises(asyncio.CancelledError):
        await until_cancelled(work(), CancelController().signal)


async def test_an_awaitable_that_finishes_despite_the_cancel_gives_its_value() -> None:
    controller = CancelController()
    started = asyncio.Event()

    async def stubborn() -> str:
        try:
            await forever(started)
        except asyncio.CancelledError:
            return "finished anyway"
        return "never"

    racing = asyncio.ensure_future(until_cancelled(stubborn(), controller.signal))
    await asyncio.wait_for(started.wait(), BOUND_S)
    controller.cancel()
    assert await asyncio.wait_for(racing, BOUND_S) == "finished anyway"


async def test_the_never_signal_only_waits() -> None:
    async def work() -> str:
        return "done"

    assert await until_cancelled(work(), NEVER) == "done"
    assert NEVER.callback_count == 0
