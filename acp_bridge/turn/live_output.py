"""Live terminal output of one running call, coalesced into a bounded number of frames.

A tool reports output chunks synchronously (`ToolRunContext.progress`); sending one frame per chunk would
flood the client, and re-sending the whole output on every chunk is quadratic. So:
- with the client's terminal opt-in, each frame is a *delta* (never re-sending earlier output): a frame
  leaves as soon as 8 KiB are buffered, otherwise at most 50 ms after the first unsent byte; a burst is cut
  into frames of at most 64 Ki characters, so no frame is ever truncated by the update size cap;
- without it, content replaces the card's content, so each frame carries a bounded *tail* of the output
  (the last 200 lines, 16 KiB at most), at most one frame per 100 ms;
- either way the last lines are kept (`tail()`), so the card of a call stopped before it could describe
  its end (cancelled) still shows what it printed;
- when the client reads slower than the tool writes (the channel's backlog is over 4 MiB), delta output
  accumulates here instead; past 32 MiB unsent, the oldest unsent output is dropped with a visible marker.
  So a slow editor bounds our memory and never the tool. (A tail frame is rendered from the kept tail
  alone, so without the opt-in nothing but the tail is kept.)

Must not: await (it runs inside the tool's progress callback), or know the wire shape (the `send`
callback builds the frame through `acp_bridge.mapping`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Protocol

DELTA_BYTES = 8 * 1024
# The most characters one delta frame carries: even if JSON escaping grew every one sixfold (control
# characters become \u00XX) the frame stays under mapping's 512 KiB cap, which would otherwise cut it.
MAX_FRAME_CHARS = 64 * 1024
DELTA_INTERVAL = 0.05
TAIL_INTERVAL = 0.1
TAIL_LINES = 200
TAIL_CHARS = 16 * 1024
CONGESTED_BACKLOG = 4 * 1024 * 1024
MAX_UNSENT = 32 * 1024 * 1024
_KEEP_WHEN_DROPPING = 1024 * 1024

# (delta, rendered tail) → None: posts one frame.
SendFrame = Callable[[str, str], None]


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """The time and the timers the frames are paced by: the running event loop, or a test's own clock,
    which the test advances by hand instead of waiting for the frames to fall due."""

    def time(self) -> float: ...

    def call_later(self, delay: float, callback: Callable[[], object], /) -> Timer: ...


class LiveOutput:
    """Coalesces one call's output chunks into frames. Create it on the event loop's thread."""

    def __init__(
        self, send: SendFrame, *, deltas: bool, backlog: Callable[[], int], clock: Clock | None = None
    ) -> None:
        self._send = send
        self._deltas = deltas
        self._backlog = backlog
        self._clock: Clock = clock if clock is not None else asyncio.get_running_loop()
        # Deltas: the output not sent yet. Tail frames: nothing is buffered, `_dirty` says a frame is due.
        self._unsent: deque[str] = deque()
        self._unsent_size = 0
        self._dirty = False
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._timer: Timer | None = None
        self._last_frame = 0.0
        self._closed = False
        self.frames = 0
        self.dropped = 0

    @property
    def sent(self) -> bool:
        """Whether any output went out live (the completed card must then not repeat it)."""
        return self.frames > 0

    def feed(self, data: str) -> None:
        if self._closed or not data:
            return
        self._remember_tail(data)
        if not self._deltas:
            self._dirty = True
        else:
            self._unsent.append(data)
            self._unsent_size += len(data)
            if self._unsent_size > MAX_UNSENT:
                self._drop_oldest()
            if self._unsent_size >= DELTA_BYTES and not self._congested():
                self._flush()
                return
        if self._timer is None:
            interval = DELTA_INTERVAL if self._deltas else TAIL_INTERVAL
            delay = (
                max(0.0, self._last_frame + interval - self._clock.time()) if not self._deltas else interval
            )
            self._timer = self._clock.call_later(delay, self._on_timer)

    def tail(self) -> str:
        """The last lines of the output so far (at most `TAIL_LINES` lines and `TAIL_CHARS` characters,
        behind "…" when cut)."""
        return self._render_tail()

    def close(self) -> None:
        """Send whatever is still buffered (deltas only: a tail frame would be replaced at once anyway)."""
        if self._closed:
            return
        self._closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._deltas and self._unsent:
            self._flush(final=True)

    def _congested(self) -> bool:
        return self._backlog() > CONGESTED_BACKLOG

    def _on_timer(self) -> None:
        self._timer = None
        if self._closed or not (self._unsent if self._deltas else self._dirty):
            return
        if self._congested():
            self._timer = self._clock.call_later(DELTA_INTERVAL, self._on_timer)
            return
        self._flush()

    def _flush(self, *, final: bool = False) -> None:
        """Send what is buffered: deltas in frames of at most MAX_FRAME_CHARS, stopping (until the next
        timer) while the client is congested unless `final`; or one tail frame."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._last_frame = self._clock.time()
        if not self._deltas:
            self._dirty = False
            self.frames += 1
            self._send("", self._render_tail())
            return
        while self._unsent and (final or not self._congested()):
            piece: list[str] = []
            size = 0
            while self._unsent and size < MAX_FRAME_CHARS:
                chunk = self._unsent[0]
                room = MAX_FRAME_CHARS - size
                if len(chunk) <= room:
                    piece.append(self._unsent.popleft())
                    size += len(chunk)
                else:
                    piece.append(chunk[:room])
                    self._unsent[0] = chunk[room:]
                    size += room
            self._unsent_size -= size
            self.frames += 1
            self._send("".join(piece), "")
        if self._unsent and not final:
            self._timer = self._clock.call_later(DELTA_INTERVAL, self._on_timer)

    def _drop_oldest(self) -> None:
        text = "".join(self._unsent)
        cut = len(text) - _KEEP_WHEN_DROPPING
        self.dropped += cut
        marker = f"\r\n[acp-bridge: {cut} characters of output skipped: the editor is reading slowly]\r\n"
        kept = marker + text[cut:]
        self._unsent = deque([kept])
        self._unsent_size = len(kept)

    def _remember_tail(self, data: str) -> None:
        self._tail.append(data)
        self._tail_size += len(data)
        while self._tail_size > 2 * TAIL_CHARS and len(self._tail) > 1:
            self._tail_size -= len(self._tail.popleft())

    def _render_tail(self) -> str:
        text = "".join(self._tail)
        lines = text.splitlines(keepends=True)
        hidden = False
        if len(lines) > TAIL_LINES:
            lines = lines[-TAIL_LINES:]
            hidden = True
        out = "".join(lines)
        if len(out) > TAIL_CHARS:
            out = out[-TAIL_CHARS:]
            hidden = True
        return ("…\n" + out) if hidden else out
