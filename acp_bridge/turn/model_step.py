"""One model step streamed under a cancel signal, then closed: the plumbing a turn's steps and a
compaction's summary share (`stream_model_step`).

The stream runs in an anyio cancel scope that the signal cancels: a cancel interrupts whatever the step
awaits (the model's network read, a slow client's drain in `on_event`) at once, and only that; a
cancellation of the caller's own task (the connection going away) is not the scope's and still
propagates. The scope's cancellation is level-triggered: cleanup inside the backend's generator must
shield its own awaits, as httpx does when it closes a response (httpcore's `AsyncShieldCancellation`).
A backend's `Waiting` (before a retry) and the model's silence go to `on_wait` (`waits.py`), never to
`on_event`. However the step ends, the stream is then closed (`close_stream`): shielded, because the
scope may be cancelled, and bounded by `STREAM_CLOSE_DEADLINE_S`, because a cancel must not wait on a
server that does not answer.

Must not: wait on a stream's close longer than `STREAM_CLOSE_DEADLINE_S`, leave a stream for the garbage
collector to close, or swallow a cancellation that is not the signal's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import anyio

from acp_bridge.models import (
    ModelBackend,
    ModelError,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallStarted,
    Waiting,
)
from acp_bridge.turn.waits import SilenceWatch
from registry_core import CancelSignal

# How long closing an interrupted model stream may take (an HTTP response to release) before the step
# goes on without it. Shorter than the session's `CANCEL_GRACE`, so a stream that will not close still
# lets a cancelled turn stop by itself rather than be abandoned.
STREAM_CLOSE_DEADLINE_S = 0.5

# The events of a step before its end, what `on_event` is given.
StepDelta = ThoughtDelta | TextDelta | ToolCallStarted


async def stream_model_step(
    backend: ModelBackend,
    request: StepRequest,
    signal: CancelSignal,
    on_event: Callable[[StepDelta], Awaitable[None]],
    *,
    what: str = "step",
    on_wait: Callable[[Waiting], None] | None = None,
    silence_after: float = 0.0,
) -> StepComplete | None:
    """Stream one step of `backend`, giving each event before its end to `on_event` (inside the cancel
    scope, so a cancel interrupts its awaits too). The step's `StepComplete`, or None when `signal`
    cancelled it (before it started or mid-stream). Raises `ModelError` when the stream ended without
    completing (`what` names the step in its message), or whatever the backend or `on_event` raised.

    `on_wait` is told of each wait (`waits.py`): the backend's before a retry, and, with `silence_after`
    > 0, a model that sent nothing for that many seconds (and again every as many)."""
    if signal.cancelled:
        return None
    complete: StepComplete | None = None
    silence = SilenceWatch(silence_after if on_wait is not None else 0.0, on_wait or _ignore)
    stream = backend.stream_step(request)
    with anyio.CancelScope() as scope:
        dispose = signal.on_cancel(lambda _reason: scope.cancel())
        silence.start()
        try:
            async for event in stream:
                silence.heard(event.seconds if isinstance(event, Waiting) else 0.0)
                if isinstance(event, StepComplete):
                    complete = event
                elif isinstance(event, Waiting):
                    if on_wait is not None:
                        on_wait(event)
                else:
                    await on_event(event)
        finally:
            # Unhooked first: the step is over, a cancel now has nothing left of it to interrupt.
            silence.stop()
            dispose()
            await close_stream(stream)
    if scope.cancelled_caught:
        return None
    if complete is None:
        raise ModelError(f"the model's {what} ended without completing", kind="protocol")
    return complete


def _ignore(_waiting: Waiting) -> None:
    return None


async def close_stream(stream: AsyncIterator[StepEvent]) -> None:
    """Close a model stream that may have been interrupted, so its HTTP response is released now rather
    than by the garbage collector; shielded and bounded by `STREAM_CLOSE_DEADLINE_S`."""
    if getattr(stream, "ag_frame", True) is None:
        return  # an async generator that ran to its end: nothing to release (the usual step)
    aclose = getattr(stream, "aclose", None)  # every async generator has it; `AsyncIterator` need not
    if aclose is not None:
        with anyio.move_on_after(STREAM_CLOSE_DEADLINE_S, shield=True):
            await aclose()
