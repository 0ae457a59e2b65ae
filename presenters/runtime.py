"""Running blocking work (file I/O, diffs, the pure-Python search) off the event loop, cancellably; and
the session's scratch directory.

`run_blocking(fn)` runs `fn(stop)` in the default thread pool. When the calling task is cancelled (the
registry cancels a tool body when its signal fires), `stop` is set so the work can end early, and the
caller still waits for the thread to settle before the CancelledError propagates: a cancelled `write`
therefore never commits after its call has been reported as cancelled (the commit checks `stop` first).

`BlockingBatches` does the same for work that comes in batches while something else produces them (a
process's output): each batch runs in the pool as soon as it is handed over, so the work overlaps the
producer and uses the pool's threads side by side; `results()` waits for them all.

`ScratchDir` is what a host puts in `agent.services["scratch"]`: a private directory for one session's
temporary files (the full output of long commands), created on first use and deleted with everything in
it when the host calls `remove()` (the session ends).

Invariant: never blocks the event loop itself; never swallows a cancellation.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from registry_core import Agent

T = TypeVar("T")
B = TypeVar("B")
SETTLE_S = 2.0
SCRATCH_SERVICE = "scratch"  # agent.services key of the session's ScratchDir


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


class BlockingBatches(Generic[B, T]):
    """`fn(batch, stop)` for each batch `add`ed, in the default thread pool, started at once; `results()`
    gives their results in the order the batches were added. Cancelled while waiting (or `abandon()`ed by
    a caller that stops early), it sets `stop` and lets the threads settle, as `run_blocking`."""

    def __init__(self, fn: Callable[[B, threading.Event], T]) -> None:
        self._fn = fn
        self._stop = threading.Event()
        self._futures: list[asyncio.Future[T]] = []

    def add(self, batch: B) -> None:
        loop = asyncio.get_running_loop()
        self._futures.append(loop.run_in_executor(None, self._fn, batch, self._stop))

    async def results(self) -> list[T]:
        try:
            return list(await asyncio.shield(asyncio.gather(*self._futures)))
        except asyncio.CancelledError:
            await self.abandon()
            raise

    async def abandon(self) -> None:
        """Stop the work (`stop` is set) and wait, bounded, for the threads to settle; errors dropped."""
        self._stop.set()
        if self._futures:
            await asyncio.wait(self._futures, timeout=SETTLE_S)
        for future in self._futures:
            if future.done() and not future.cancelled():
                future.exception()


class ScratchDir:
    """A private directory (mode 0700) for one session's temporary files, made on first `path()` inside
    `parent()` (default: the temp directory) and deleted, with its contents, by `remove()`; after that
    `path()` raises, so nothing is left behind by work that outlives its session."""

    def __init__(self, parent: Callable[[], str] | None = None, prefix: str = "session-") -> None:
        self._parent = parent
        self._prefix = prefix
        self._path: str | None = None
        self._removed = False

    def path(self) -> str:
        """The directory, created now if needed. Raises OSError (it cannot be created, or was removed)."""
        if self._removed:
            raise FileNotFoundError(errno.ENOENT, "the session's scratch directory was removed (it ended)")
        if self._path is None or not os.path.isdir(self._path):
            self._path = tempfile.mkdtemp(prefix=self._prefix, dir=self._parent() if self._parent else None)
        return self._path

    def remove(self) -> None:
        """Delete the directory and everything in it (files still open are freed when closed)."""
        self._removed = True
        path, self._path = self._path, None
        if path is not None:
            shutil.rmtree(path, ignore_errors=True)


def scratch_of(agent: Agent | None) -> ScratchDir | None:
    """The host's scratch directory for the agent's session, when it provides one."""
    service: Any = agent.services.get(SCRATCH_SERVICE) if agent is not None else None
    return service if isinstance(service, ScratchDir) else None
