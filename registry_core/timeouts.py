"""The timeout policy: an execute wrapper that enforces a tool's `timeout_ms` cooperatively.

It replaces the execution's signal with one fused from the caller's signal and a timer; when the timer
fires first, the body's task is cancelled and the pipeline reports a TIMEOUT error result. `timeout_ms` is
host-only metadata: it is never sent to a model. The pipeline copies it from the resolved definition onto
the `ToolExecution`, so this wrapper needs neither the registry nor the pipeline.
"""

from __future__ import annotations

import asyncio

from .cancellation import CancelReason, linked
from .errors import TIMEOUT
from .execution import ToolExecution, ToolExecutionResult
from .policy import ExecuteNext


def _format_ms(ms: float) -> str:
    return f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"


async def timeout_wrapper(execution: ToolExecution, call_next: ExecuteNext) -> ToolExecutionResult:
    timeout_ms = execution.timeout_ms
    if timeout_ms is None:
        return await call_next(execution)
    reason = CancelReason(TIMEOUT, f"Tool {execution.name!r} timed out after {_format_ms(timeout_ms)}.")
    signal = linked(execution.signal)  # fires on the caller's cancel, or on the timer
    handle = asyncio.get_running_loop().call_later(timeout_ms / 1000, signal.trigger, reason)
    try:
        return await call_next(execution.with_signal(signal))
    finally:
        handle.cancel()
        signal.close()
