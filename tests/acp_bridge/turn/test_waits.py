"""acp_bridge.turn.waits: the silence watch on a clock the test advances (no waiting), and the words and
shapes a wait is told in (a notice carrying the wait as data, or a thought)."""

from __future__ import annotations

from acp_bridge.models import Waiting
from acp_bridge.turn.waits import SilenceWatch, tell
from tests.support.manual_clock import ManualClock


def _watch(every: float) -> tuple[SilenceWatch, ManualClock, list[Waiting]]:
    clock = ManualClock()
    told: list[Waiting] = []
    return SilenceWatch(every, told.append, clock), clock, told


def test_a_silent_model_is_told_after_every_seconds_and_again_every_seconds() -> None:
    watch, clock, told = _watch(20)
    watch.start()
    clock.advance(19.9)
    assert told == []
    clock.advance(0.1)
    clock.advance(20)
    assert [w.describe() for w in told] == [
        "waiting for the model for 20 s",
        "waiting for the model for 40 s",
    ]


def test_an_event_starts_the_silence_anew_and_a_retry_wait_is_not_counted_as_silence() -> None:
    watch, clock, told = _watch(20)
    watch.start()
    clock.advance(15)
    watch.heard()
    clock.advance(15)
    assert told == []
    watch.heard(after=30)  # the backend said it waits 30 s before retrying: that was told already
    clock.advance(49)
    assert told == []
    clock.advance(1)
    assert [w.seconds for w in told] == [20]


def test_a_stopped_watch_tells_nothing_and_zero_means_never() -> None:
    watch, clock, told = _watch(20)
    watch.start()
    watch.stop()
    clock.advance(100)
    never, clock2, told2 = _watch(0)
    never.start()
    clock2.advance(1000)
    assert told == [] and told2 == []


def test_a_wait_is_a_notice_with_its_data_or_a_thought() -> None:
    waiting = Waiting("rate_limited", 2.0, 1, 3, 429)
    assert tell(waiting, notices=True) == {
        "sessionUpdate": "notice",
        "severity": "warning",
        "title": "Rate limited, retrying in 2 s (attempt 1 of 3)",
        "_meta": {"acpBridge": {"wait": {"reason": "rate_limited", "seconds": 2.0, "attempt": 1, "of": 3}}},
    }
    assert tell(waiting, notices=False) == {
        "sessionUpdate": "agent_thought_chunk",
        "content": {"type": "text", "text": "(rate limited, retrying in 2 s (attempt 1 of 3))\n"},
    }
    silent = tell(Waiting("silent", 40.2), notices=True)
    assert silent["sessionUpdate"] == "notice" and silent["severity"] == "info"
    assert silent["title"] == "Waiting for the model for 40 s"
    assert Waiting("unreachable", 0.4, 2, 3).describe() == (
        "the model API did not answer, retrying in 1 s (attempt 2 of 3)"
    )
