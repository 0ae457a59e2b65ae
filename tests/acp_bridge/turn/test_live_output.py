"""Coalescing of live terminal output: deltas at most every 50 ms or 8 KiB, never re-sent; a bounded tail
without the terminal opt-in; and bounded memory when the client reads slowly. The frames' timers run on a
clock the tests advance (`ManualClock`), so what went out by a given time is exact, not raced."""

from __future__ import annotations

import pytest

from acp_bridge.turn import live_output
from acp_bridge.turn.live_output import LiveOutput
from tests.support.manual_clock import ManualClock


class Frames:
    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []
        self.backlog = 0

    def send(self, delta: str, tail: str) -> None:
        self.sent.append((delta, tail))


async def test_fast_output_leaves_in_8_kib_frames_with_every_byte_once() -> None:
    frames = Frames()
    out = LiveOutput(frames.send, deltas=True, backlog=lambda: frames.backlog)
    chunks = [chr(ord("a") + i % 26) * 100 for i in range(1000)]
    for chunk in chunks:
        out.feed(chunk)
    out.close()
    assert "".join(d for d, _ in frames.sent) == "".join(chunks)
    assert len(frames.sent) <= 100_000 // 8192 + 1
    assert all(len(d) >= 8192 for d, _ in frames.sent[:-1])
    assert out.sent


def test_a_trickle_leaves_within_50_ms() -> None:
    frames, clock = Frames(), ManualClock()
    out = LiveOutput(frames.send, deltas=True, backlog=lambda: 0, clock=clock)
    out.feed("first\n")
    assert frames.sent == []
    clock.advance(0.08)
    assert frames.sent == [("first\n", "")]
    out.feed("second\n")
    out.close()  # what is buffered at the end still goes out
    assert frames.sent[-1] == ("second\n", "")


def test_nothing_is_sent_after_close_and_nothing_at_all_for_no_output() -> None:
    frames, clock = Frames(), ManualClock()
    out = LiveOutput(frames.send, deltas=True, backlog=lambda: 0, clock=clock)
    out.close()
    out.feed("late")
    clock.advance(0.08)
    assert frames.sent == []
    assert not out.sent


def _congested(
    monkeypatch: pytest.MonkeyPatch, clock: ManualClock, *, deltas: bool
) -> tuple[Frames, LiveOutput]:
    """A client reading too slowly (its backlog over the mark), with a 50 kB cap on unsent output."""
    monkeypatch.setattr(live_output, "MAX_UNSENT", 50_000)
    monkeypatch.setattr(live_output, "_KEEP_WHEN_DROPPING", 10_000)
    frames = Frames()
    frames.backlog = live_output.CONGESTED_BACKLOG + 1
    return frames, LiveOutput(frames.send, deltas=deltas, backlog=lambda: frames.backlog, clock=clock)


def test_a_congested_client_gets_no_frames_and_memory_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = ManualClock()
    frames, out = _congested(monkeypatch, clock, deltas=True)
    for _ in range(100):
        out.feed("x" * 1000)
    assert frames.sent == []
    assert out.dropped > 0
    frames.backlog = 0
    clock.advance(0.12)
    (delta, _), *_ = frames.sent
    assert "characters of output skipped" in delta
    assert len(delta) < 20_000
    out.close()


def test_without_the_opt_in_frames_carry_a_bounded_tail_at_most_every_100_ms() -> None:
    frames, clock = Frames(), ManualClock()
    out = LiveOutput(frames.send, deltas=False, backlog=lambda: 0, clock=clock)
    for i in range(1000):
        out.feed(f"line {i}\n")
    clock.advance(0.01)
    out.feed("more\n")
    clock.advance(0.15)
    out.close()
    assert 1 <= len(frames.sent) <= 3
    tail = frames.sent[-1][1]
    assert tail.endswith("more\n")
    assert tail.startswith("…\n")
    assert tail.count("\n") <= live_output.TAIL_LINES + 1


def test_without_the_opt_in_nothing_but_the_tail_is_kept_for_a_congested_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A tail frame is rendered from the kept tail alone: buffering (and then dropping) the unsent output
    # would only cost memory and a join of up to MAX_UNSENT characters.
    clock = ManualClock()
    frames, out = _congested(monkeypatch, clock, deltas=False)
    for i in range(100):
        out.feed(f"{i:03} " + "x" * 995 + "\n")
    clock.advance(0.12)
    assert frames.sent == []
    assert out.dropped == 0
    frames.backlog = 0
    clock.advance(0.12)
    assert len(frames.sent) == 1
    delta, tail = frames.sent[0]
    assert delta == ""
    assert tail.endswith("099 " + "x" * 995 + "\n")
    assert "skipped" not in tail
    out.close()
