"""Telling the user why a model step waits, instead of waiting without a word.

Two kinds of wait:
- the backend waits before trying a request again (HTTP 429 with `Retry-After`, a server error, no
  connection): it yields a `models.Waiting` right before it sleeps, and the turn passes it on;
- the model sends nothing (a reasoning model thinking, an overloaded endpoint: the read timeout is minutes
  long): `SilenceWatch` notices when no event came for `every` seconds, and again every `every` seconds
  after that ("waiting for the model for 40 s"), until the next event or the step's end.

Either way `tell` builds the update: a `notice` carrying the wait as data for a client that advertised
`session.notices`, else an agent thought of one line (`mapping.model_wait`). The watch runs on timers of
a `Clock` (the event loop's, or a test's own), never on a task, so it costs nothing while events flow and
needs no cancelling beyond its timer; a cancelled step stops it with the stream.

Must not: keep the step waiting, or tell the model anything (these are words to the user, not history).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from acp_bridge import mapping
from acp_bridge.common.settings import DEFAULT_WAIT_NOTICE_S
from acp_bridge.mapping import Update
from acp_bridge.models import Waiting
from acp_bridge.turn.live_output import Clock, Timer

__all__ = ["DEFAULT_WAIT_NOTICE_S", "SilenceWatch", "tell"]


def tell(waiting: Waiting, *, notices: bool) -> Update:
    """The update telling the user of `waiting`."""
    return mapping.model_wait(
        waiting.describe(), waiting.reason, waiting.seconds, waiting.attempt, waiting.of, notices=notices
    )


class SilenceWatch:
    """Notices a model that sends nothing: `on_silence(Waiting("silent", seconds))` after `every` seconds
    without an event (`heard`), and every `every` seconds after that. `every` <= 0: never."""

    def __init__(
        self, every: float, on_silence: Callable[[Waiting], None], clock: Clock | None = None
    ) -> None:
        self._every = every
        self._on_silence = on_silence
        self._clock: Clock = clock if clock is not None else asyncio.get_running_loop()
        self._since = 0.0
        self._timer: Timer | None = None
        self._stopped = False

    def start(self) -> None:
        """The request went out: silence counts from now."""
        self.heard()

    def heard(self, after: float = 0.0) -> None:
        """An event came: silence counts from now again, or from `after` seconds on (the backend said it
        waits that long before it tries again: that wait was told already)."""
        if self._stopped or self._every <= 0:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._since = self._clock.time() + after
        self._timer = self._clock.call_later(after + self._every, self._fire)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _fire(self) -> None:
        if self._stopped:
            return
        self._timer = self._clock.call_later(self._every, self._fire)
        self._on_silence(Waiting("silent", self._clock.time() - self._since))
