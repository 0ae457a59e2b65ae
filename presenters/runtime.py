"""Running blocking work (file I/O, diffs, the pure-Python search) off the event loop, cancellably.

`run_blocking(fn)` runs `fn(stop)` in the default thread pool. When the calling task is cancelled (the
registry cancels a tool body when its signal fires), `stop` is set so the work can end early, and the
caller still waits for the thread to settle before the CancelledError propagates: a cancelled `write`
therefore never commits after its call has been reported as cancelled (the commit checks `stop` first).

Invariant: never blocks the event loop itself; never swallows a cancellation.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
SETTLE_S = 2.0


class Stopped(Exception):
    """Raised inside blocking work that noticed its `stop` flag (the caller is being cancelled)."""


def check(stop: threading.Event) -> None:
    """Raise `Stopped` when the work should end (call it between units of work)."""
    if stop.is_set():
        raise Stopped


async def run_blocking(fn: Callable[[threading.Event], T]) -> T:
    """Run `fn(stop)` in a worker thread; on cancellation set `stop`, let the thread settle, re-raise."""
    stop = threading.Event()
    future = asyncio.get_running_loop().run_in_executor(None, fn, stop)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        stop.set()
        # Let the thread settle so no file is written after the call ends (a second cancellation while
        # we wait is honoured). Bounded: a thread stuck in a system call must not hold the cancellation
        # forever, and work that commits checks `stop` just before, so it does not commit late.
        await asyncio.wait([future], timeout=SETTLE_S)  # asyncio.wait never re-raises the work's error
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: the cancellation is what the caller reports
        raise
