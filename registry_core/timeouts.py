"""The timeout policy: an execute wrapper that enforces a tool's `timeout_ms` cooperatively.

It replaces the execution's signal with one linked to the caller's signal and to a deadline; when the
deadline passes first, the body's task is cancelled and the pipeline reports a TIMEOUT error result.
`timeout_ms` is host-only metadata: it is never sent to a model. The pipeline copies it from the resolved
definition onto the `ToolExecution`, so this wrapper needs neither the registry nor the pipeline.

One timer per event loop serves every in-flight deadline (`_Deadlines`): a call adds its deadline and
removes it when it settles, both O(1). A timer per call would push a handle onto the loop's heap and
leave it there, cancelled, until it falls due, so every later timer of a busy step pays for the heap.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref

from .cancellation import CancelReason, FusedSignal, linked
from .errors import TIMEOUT
from .execution import ToolExecution, ToolExecutionResult
from .policy import ExecuteNext

log = logging.getLogger(__name__)
# As asyncio's loop reads it: a timer may run up to this much before its time.
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution


def _format_ms(ms: float) -> str:
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


class _Deadlines:
    """The pending deadlines of one event loop, and the one timer armed for the earliest of them."""

    __slots__ = ("__weakref__", "_armed_at", "_loop", "_pending", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        # signal → (deadline, tool name, timeout in ms): the reason is spelled out only if it fires.
        self._pending: dict[FusedSignal, tuple[float, str, float]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._armed_at = math.inf

    def add(self, signal: FusedSignal, tool: str, timeout_ms: float) -> None:
        deadline = self._loop.time() + timeout_ms / 1000
        self._pending[signal] = (deadline, tool, timeout_ms)
        if deadline < self._armed_at:
            self._arm(deadline)

    def remove(self, signal: FusedSignal) -> None:
        # The timer stays armed: when it fires with nothing due it re-arms for the next deadline, if any.
        self._pending.pop(signal, None)

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_at(when, self._fire)
        self._armed_at = when

    def _fire(self) -> None:
        self._timer = None
        self._armed_at = math.inf
        # The loop may run a timer up to one clock resolution early.
        now = self._loop.time() + _CLOCK_RESOLUTION
        due = [(signal, tool, ms) for signal, (at, tool, ms) in self._pending.items() if at <= now]
        for signal, _, _ in due:
            del self._pending[signal]
        for signal, tool, ms in due:
            try:
                signal.trigger(CancelReason(TIMEOUT, f"Tool {tool!r} timed out after {_format_ms(ms)}."))
            except Exception:
                log.exception("a timed-out call's cancellation failed")
        if self._pending:
            self._arm(min(at for at, _, _ in self._pending.values()))


_by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Deadlines] = weakref.WeakKeyDictionary()


# The last loop's table, found without a weak-dict look-up: one loop runs every call of a bridge (it
# keeps at most one closed loop alive).
_last: list[_Deadlines] = []


def _deadlines() -> _Deadlines:
    loop = asyncio.get_running_loop()
    if _last and _last[0]._loop is loop:
        return _last[0]
    deadlines = _by_loop.get(loop)
    if deadlines is None:
        deadlines = _by_loop[loop] = _Deadlines(loop)
    _last[:] = [deadlines]
    return deadlines


async def timeout_wrapper(execution: ToolExecution, call_next: ExecuteNext) -> ToolExecutionResult:
    timeout_ms = execution.timeout_ms
    if timeout_ms is None:
        return await call_next(execution)
    signal = linked(execution.signal)  # fires on the caller's cancel, or at the deadline
    deadlines = _deadlines()
    deadlines.add(signal, execution.name, timeout_ms)
    try:
        return await call_next(execution.with_signal(signal))
    finally:
        deadlines.remove(signal)
        signal.close()
