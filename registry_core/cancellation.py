"""Cancellation handles: the Python counterpart of the seed's AbortSignal.

A `CancelSignal` is a read-only view that fires once, with a reason; a `CancelController` owns it.
`fuse()` builds a signal that fires when any of its parents fires, which is how the pipeline keeps the
caller's cancellation alive under an execute wrapper's replacement signal (wrappers may replace the
handle, never remove it).

Tool bodies observe cancellation in two ways: the pipeline cancels the body's asyncio task when the
signal fires (so every `await` is a checkpoint), and long-running code may poll `signal.cancelled` or
`await signal.wait()` to clean up owned work (e.g. kill a process group) before it settles.

`until_cancelled(awaitable, signal)` is the one race of an awaitable against a signal: its value, or None
once the signal fires (the awaitable cancelled and settled first). Nothing else hand-writes that race.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CancelReason:
    """Why a signal fired. `code` is a registry error code (CANCELLED, TIMEOUT, ...)."""

    code: str
    message: str


class CancelSignal:
    """Fires at most once. Callbacks run synchronously, in registration order, when it fires."""

    __slots__ = ("_callbacks", "_event", "_reason")

    def __init__(self) -> None:
        self._reason: CancelReason | None = None
        self._callbacks: list[Callable[[CancelReason], None]] | None = []
        self._event: asyncio.Event | None = None

    @property
    def cancelled(self) -> bool:
        return self._reason is not None

    @property
    def reason(self) -> CancelReason | None:
        return self._reason

    @property
    def callback_count(self) -> int:
        """Callbacks waiting for this signal (a leak check: per-call work must not pile up here)."""
        return len(self._callbacks or ())

    def on_cancel(self, callback: Callable[[CancelReason], None]) -> Callable[[], None]:
        """Run `callback(reason)` when the signal fires (at once if it already has). Returns a disposer."""
        if self._reason is not None:
            callback(self._reason)
            return _noop
        assert self._callbacks is not None
        self._callbacks.append(callback)

        def dispose() -> None:
            if self._callbacks is not None and callback in self._callbacks:
                self._callbacks.remove(callback)

        return dispose

    async def wait(self) -> CancelReason:
        """Wait until the signal fires; return its reason."""
        if self._reason is not None:
            return self._reason
        if self._event is None:
            self._event = asyncio.Event()
        await self._event.wait()
        assert self._reason is not None
        return self._reason

    def _fire(self, reason: CancelReason) -> None:
        if self._reason is not None:
            return
        self._reason = reason
        callbacks, self._callbacks = self._callbacks or [], None
        if self._event is not None:
            self._event.set()
        for callback in callbacks:
            callback(reason)


class CancelController:
    """Owns one signal and decides when it fires."""

    __slots__ = ("signal",)

    def __init__(self) -> None:
        self.signal = CancelSignal()

    def cancel(self, reason: CancelReason | None = None) -> None:
        self.signal._fire(reason or CancelReason("CANCELLED", "cancelled"))


def _noop() -> None:
    return None


async def until_cancelled(awaitable: Awaitable[T], signal: CancelSignal) -> T | None:
    """`awaitable`'s value, or None when `signal` fires first (already fired included).

    The awaitable runs as a task of its own (a future or task given is used as is); when the signal wins,
    that task is cancelled and awaited, so its cleanup has run when None is returned. If it ends anyway
    (done before the cancel reached it, or it swallowed the cancel), its value or error is what comes
    back. Its errors propagate; so does the caller's own cancellation (the awaitable is cancelled with
    it), even when the signal has fired too. No callback is left on the signal once this returns or
    raises. A `T` that may itself be None cannot be told apart from a cancel: check `signal.cancelled`.
    """
    task = asyncio.ensure_future(awaitable)

    def stop(_reason: CancelReason) -> None:
        task.cancel()

    dispose = signal.on_cancel(stop)
    try:
        return await task
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if signal.cancelled and (current is None or current.cancelling() == 0):
            return None  # ours: the signal cancelled the task, nobody cancelled the caller
        raise
    finally:
        dispose()


NEVER = CancelSignal()
"""A signal that never fires, for callers with no cancellation of their own."""


class FusedSignal(CancelSignal):
    """A signal that fires with the first of its parents. `close()` detaches it from its parents: a
    long-lived parent (a session's turn signal) must not collect a dead callback per call."""

    __slots__ = ("_detach", "parents")

    def __init__(self, parents: tuple[CancelSignal, ...]) -> None:
        super().__init__()
        self.parents = parents
        self._detach: list[Callable[[], None]] = []

    def trigger(self, reason: CancelReason) -> None:
        """Fire this signal itself (its parents are unaffected), e.g. from a timer."""
        self._fire(reason)

    def close(self) -> None:
        detach, self._detach = self._detach, []
        for dispose in detach:
            dispose()


def linked(parent: CancelSignal) -> FusedSignal:
    """A signal that fires when `parent` does, or on its own `trigger()`. `close()` it when done.

    Cheaper than `fuse(parent, CancelController().signal)`: one callback on the parent, no controller."""
    if parent is NEVER:
        return FusedSignal(())
    child = FusedSignal((parent,))
    if parent.cancelled:
        assert parent.reason is not None
        child._fire(parent.reason)
    else:
        child._detach.append(parent.on_cancel(child._fire))
    return child


def fuse(*signals: CancelSignal) -> CancelSignal:
    """A signal that fires with the first parent's reason. One parent: returned as is (no copy).

    The result may be a `FusedSignal`; whoever creates one should `close()` it when the work it guards
    has settled (see `close_fused`)."""
    distinct = [s for s in dict.fromkeys(signals) if s is not NEVER]
    if not distinct:
        return NEVER
    if len(distinct) == 1:
        return distinct[0]
    fused = FusedSignal(tuple(distinct))
    for parent in distinct:
        if parent.cancelled:
            assert parent.reason is not None
            fused._fire(parent.reason)
            return fused
    for parent in distinct:
        fused._detach.append(parent.on_cancel(fused._fire))
    return fused


def close_fused(signal: CancelSignal) -> None:
    """Detach `signal` from its parents when it is a signal `fuse` made; otherwise nothing."""
    if isinstance(signal, FusedSignal):
        signal.close()


def derives_from(signal: CancelSignal, ancestor: CancelSignal) -> bool:
    """True when `ancestor` firing fires `signal` (it is the ancestor, or fused from it)."""
    if signal is ancestor or ancestor is NEVER:
        return True
    if isinstance(signal, FusedSignal):
        parents = signal.parents
        # The usual case, a signal linked straight to the caller's, without a generator.
        return ancestor in parents or any(derives_from(parent, ancestor) for parent in parents)
    return False
