"""A session's prompt slot: at most one prompt in flight, its turn running as a task of its own, and how
that task is stopped.

`run` starts the turn's work and returns once it ended, or once a cancel was given up on: `cancel()` fires
the turn's signal, and should the turn not stop within `CANCEL_GRACE` seconds (a tool ignoring it),
`stop_reason` answers `cancelled` anyway and detaches the stuck turn (muted, its cards closed), so a
prompt always answers promptly and the session takes the next one while the stuck task ends in the
background. `stop` waits for that answer; `halt` (the bridge shutting down) cancels the task outright
after a grace.

Must not: know what the session keeps (history, title, log) or how a prompt is read; run two turns at
once (the session checks `busy` before it builds a turn).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

import anyio

from acp_bridge.common.errors import AuthRequired, InternalError
from acp_bridge.models import ModelError
from acp_bridge.turn.loop import StopReason, Turn

log = logging.getLogger(__name__)

# After a cancel, how long the turn gets to stop (tools stop their processes: bash sends SIGTERM, then
# SIGKILL after 0.5 s) before the prompt answers `cancelled` anyway and the turn is abandoned. Cancelling
# the task a second time instead could interrupt a tool's own cleanup and leave a process behind.
CANCEL_GRACE = 0.75

# At shutdown, once a turn ignored its cancel for the grace `halt` gives, its task is cancelled outright
# and gets this long to unwind.
HARD_STOP_S = 0.2


class PromptSlot:
    """The prompt in flight of one session, if any: its turn (`turn`, None when idle) and its task."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id
        self.turn: Turn | None = None
        self._task: asyncio.Task[StopReason] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._abandon: asyncio.Future[None] | None = None

    @property
    def busy(self) -> bool:
        return self._task is not None

    async def run(self, turn: Turn, work: Coroutine[Any, Any, StopReason]) -> asyncio.Task[StopReason]:
        """Run `work` (the turn's) as the slot's task; return the task once it ended or was given up on
        (`stop_reason` tells which). Cancelled itself (the prompt's handler is going away: the connection
        is shutting down), it stops the turn too."""
        self.turn = turn
        # The turn is a plain task, not a child of an anyio task group, on purpose: a task group cannot
        # exit before its children end, so the prompt could not answer until the turn stopped. A turn
        # whose tool ignores the cancel must be left behind instead (`_give_up`, then `Turn.detach`): the
        # prompt answers `cancelled` within `CANCEL_GRACE` and the session takes the next prompt while
        # the stuck task ends in the background. Outliving its parent is what that task is for.
        task = asyncio.ensure_future(work)
        self._task = task
        abandon = self._abandon = asyncio.get_running_loop().create_future()
        task.add_done_callback(self._turn_finished)
        try:
            await asyncio.wait({task, abandon}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            turn.cancel()
            task.cancel()
            raise
        return task

    def stop_reason(self, turn: Turn, task: asyncio.Task[StopReason]) -> StopReason:
        """What the prompt answers once `run` returned `task`: its stop reason, or `cancelled` for a turn
        given up on (detached here). Raises AuthRequired / InternalError (the model failed; the message
        says how) or InternalError (the turn failed)."""
        if not task.done():
            log.warning("session %s: abandoning a turn that ignored its cancellation", self._session_id)
            turn.detach()
            self._release(task)
            return "cancelled"
        if task.cancelled():
            return "cancelled"
        exc = task.exception()
        if exc is None:
            return task.result()
        if isinstance(exc, ModelError):
            if turn.cancelled:
                return "cancelled"
            raise _model_failure(exc) from exc
        log.error("session %s: the turn failed", self._session_id, exc_info=exc)
        raise InternalError(f"The turn failed: {type(exc).__name__}: {exc}") from exc

    def _turn_finished(self, task: asyncio.Task[StopReason]) -> None:
        if self._task is task:
            self._release(task)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("an abandoned turn of session %s ended with %r", self._session_id, task.exception())

    def _release(self, task: asyncio.Task[StopReason]) -> None:
        if self._task is not task:
            return
        self._task = None
        self.turn = None
        self._abandon = None
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def cancel(self) -> None:
        """Cancel the running prompt, if any (model stream, tools, pending questions)."""
        turn, task = self.turn, self._task
        if turn is None or task is None:
            return
        turn.cancel()
        if self._watchdog is None and not task.done():
            self._watchdog = asyncio.get_running_loop().call_later(CANCEL_GRACE, self._give_up, task)

    def _give_up(self, task: asyncio.Task[StopReason]) -> None:
        self._watchdog = None
        abandon = self._abandon
        if not task.done() and self._task is task and abandon is not None and not abandon.done():
            abandon.set_result(None)

    async def stop(self) -> None:
        """Cancel the running prompt, if any, and wait until it answered: the turn stopped, or it ignored
        the cancel for `CANCEL_GRACE` s and was abandoned (detached by `stop_reason`)."""
        task, abandon = self._task, self._abandon
        self.cancel()
        if task is not None and abandon is not None:
            stopped: set[asyncio.Future[Any]] = {task, abandon}
            await asyncio.wait(stopped, return_when=asyncio.FIRST_COMPLETED)

    async def wait_idle(self) -> None:
        task = self._task
        if task is not None:
            await asyncio.wait({task})

    async def halt(self, grace: float) -> None:
        """Stop the running turn for good (the bridge is shutting down): cancel it, wait up to `grace`
        seconds for its task to end (abandoned or not), then cancel the task outright, which may cut a
        tool's cleanup short, and wait `HARD_STOP_S` more."""
        task = self._task
        if task is None:
            return
        self.cancel()
        with anyio.move_on_after(grace):
            await asyncio.wait({task})
        if not task.done():
            task.cancel()
            with anyio.move_on_after(HARD_STOP_S):
                await asyncio.wait({task})


def _model_failure(exc: ModelError) -> Exception:
    data = {"kind": exc.kind, "status": exc.status}
    if exc.kind == "auth":
        return AuthRequired(exc.message, data=data)
    return InternalError(f"The model failed: {exc.message}", data=data)
