"""A clock a test advances by hand (`acp_bridge.turn.live_output.Clock`): timers fire, in the order they fall
due, only inside `advance`, so a test of paced output asserts on exactly what went out by a given time
instead of sleeping past it."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class ManualTimer:
    when: float
    callback: Callable[[], object]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class ManualClock:
    # Far from zero, as the event loop's clock is: code that starts from "the last frame left at 0.0"
    # behaves as it does against the loop.
    now: float = 1000.0
    _due: list[tuple[float, int, ManualTimer]] = field(default_factory=list)
    _order: itertools.count[int] = field(default_factory=itertools.count)

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[[], object], /) -> ManualTimer:
        timer = ManualTimer(self.now + max(0.0, delay), callback)
        heapq.heappush(self._due, (timer.when, next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move the time on by `seconds`, firing every timer that falls due on the way (those its callbacks
        set too), each at its own time."""
        end = self.now + seconds
        while self._due and self._due[0][0] <= end:
            when, _, timer = heapq.heappop(self._due)
            if not timer.cancelled:
                self.now = when
                timer.callback()
        self.now = end
