"""`SessionStore`'s group commit and reading: the events of one loop iteration go to disk in one write at a
flush point (the end of the iteration, before any frame leaves the process, at once for a change already
made), and `load` reads with orjson exactly what the standard library reads."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge.history import store as store_module
from acp_bridge.history.store import SessionStore
from acp_bridge.runtime.stdio import FrameWriter, set_output_barrier

SESSION = "sess_" + "a" * 32
OTHER = "sess_" + "b" * 32


def lines(store: SessionStore, session_id: str = SESSION) -> list[dict[str, Any]]:
    path = store.root / f"{session_id}.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines()] if path.exists() else []


def kinds(store: SessionStore, session_id: str = SESSION) -> list[str]:
    return [line["type"] for line in lines(store, session_id)]


async def test_the_events_of_one_iteration_are_written_together_at_its_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    assert kinds(store) == ["session"]  # the header at once: an answered session/new is resumable
    writes: list[int] = []
    real = store_module.SessionStore._write
    monkeypatch.setattr(
        store_module.SessionStore, "_write", lambda s, i, ls: (writes.append(len(ls)), real(s, i, ls))
    )

    for n in range(5):
        store.append(SESSION, {"type": "assistant", "text": f"step {n}"})
    store.append(OTHER, {"type": "user", "text": "elsewhere"})
    assert kinds(store) == ["session"] and kinds(store, OTHER) == []  # queued
    await asyncio.sleep(0)  # the iteration ends

    assert kinds(store) == ["session", *["assistant"] * 5]
    assert kinds(store, OTHER) == ["user"]
    assert sorted(writes) == [1, 5]  # one write per session
    store.close()


async def test_a_change_already_made_is_written_at_once_with_what_came_before(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.append(SESSION, {"type": "assistant", "text": "writing", "toolCalls": []})
    store.append(SESSION, {"type": "tool/commit", "callId": "w1", "name": "write", "summary": "wrote"})

    assert kinds(store) == ["session", "assistant", "tool/commit"]
    store.close()


async def test_no_frame_leaves_before_the_events_logged_ahead_of_it(tmp_path: Path) -> None:
    # The frame writer was told of a frame first (its flush is scheduled before the store's), then the
    # event is logged, then the frame that tells the client about it: the log still goes first.
    store = SessionStore(tmp_path / "state")
    store.begin(SESSION, "/w", ("/w",))
    read_end, write_end = os.pipe()
    writer = FrameWriter(write_end)
    await writer.start()
    logged_when_written: list[list[str]] = []

    def barrier() -> None:
        store.flush()
        logged_when_written.append(kinds(store))

    set_output_barrier(barrier)
    try:
        writer.send({"jsonrpc": "2.0", "method": "session/update", "params": {"n": 1}})
        store.append(SESSION, {"type": "tool/result", "callId": "r1", "name": "read", "content": []})
        writer.send({"jsonrpc": "2.0", "method": "session/update", "params": {"about": "r1"}})
        await asyncio.sleep(0)
        await asyncio.sleep(0)
    finally:
        set_output_barrier(None)
    frames = os.read(read_end, 1 << 16).splitlines()
    assert len(frames) == 2 and logged_when_written[0] == ["session", "tool/result"]
    writer.close()
    os.close(read_end)
    store.close()


def test_without_an_event_loop_each_event_is_written_at_once(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.append(SESSION, {"type": "user", "text": "hi"})
    assert kinds(store) == ["session", "user"]
    store.close()


async def test_load_close_and_delete_flush_or_drop_what_is_queued(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.append(SESSION, {"type": "user", "text": "hi"})
    loaded = store.load(SESSION)
    assert loaded is not None and [e["type"] for e in loaded[1]] == ["user"]

    store.begin(OTHER, "/w", ("/w",))
    store.append(OTHER, {"type": "user", "text": "doomed"})
    assert store.delete(OTHER) and not (store.root / f"{OTHER}.jsonl").exists()
    await asyncio.sleep(0)
    assert not (store.root / f"{OTHER}.jsonl").exists()  # nothing queued wrote it back

    store.append(SESSION, {"type": "assistant", "text": "bye"})
    store.close()
    assert kinds(store) == ["session", "user", "assistant"]


def test_an_event_that_cannot_be_encoded_is_dropped_not_raised(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.append(SESSION, {"type": "user", "text": object()})  # json_bytes spells an exotic value
    store.append(SESSION, {"type": "user", "text": "after"})
    assert kinds(store)[-1] == "user" and lines(store)[-1]["text"] == "after"
    store.close()


TRICKY = [
    b'{"type":"x","id":18446744073709551616}',  # past 64 bits: orjson would read a float
    b'{"type":"x","id":-9223372036854775809}',
    b'{"type":"x","id":12345678901234567890123}',
    b'{"type":"x","v":NaN,"w":Infinity}',  # the standard library's extensions
    b'{"type":"x","v":1e400}',
    b'{"type":"x","s":"\\ud800 lone"}',  # a lone surrogate escape
    b'{"type":"x","s":"digits 12345678901234567890 in a string"}',
    b'{"type":"x","a":1,"a":2}',
    b'{"type":"x","f":0.1,"g":-0.0,"h":-0,"big":9223372036854775807}',
    b'\xef\xbb\xbf{"type":"x"}',
]


@pytest.mark.parametrize("line", TRICKY)
def test_a_line_reads_as_the_standard_library_reads_it(line: bytes) -> None:
    expected = json.loads(line)
    got = store_module._loads(line)
    assert repr(got) == repr(expected)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_stored_value_reads_back_as_the_standard_library_reads_it(value: Any) -> None:
    line = json.dumps({"type": "x", "v": value}).encode()
    assert repr(store_module._loads(line)) == repr(json.loads(line))


def test_a_torn_last_line_is_skipped(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.append(SESSION, {"type": "user", "text": "kept"})
    store.close()
    with open(store.root / f"{SESSION}.jsonl", "ab") as f:
        f.write(b'{"type":"assistant","te')
    loaded = store.load(SESSION)
    assert loaded is not None and [e["type"] for e in loaded[1]] == ["user"]


def test_an_append_after_a_torn_line_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    store.close()
    with open(store.root / f"{SESSION}.jsonl", "ab") as f:
        f.write(b'{"type":"assistant","te')  # a write cut short by a kill
    again = SessionStore(tmp_path)
    again.append(SESSION, {"type": "user", "text": "after the restart"})
    again.close()
    loaded = again.load(SESSION)
    assert loaded is not None and loaded[1] == [{"type": "user", "text": "after the restart"}]


def test_a_loop_that_closed_before_its_flush_ran_does_not_hold_later_lines(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))

    async def queue(text: str) -> None:
        store.append(SESSION, {"type": "user", "text": text})

    first = asyncio.new_event_loop()
    first.run_until_complete(queue("first"))  # its flush callback has not run: the loop closes now
    first.close()

    async def later() -> None:
        await queue("second")
        await asyncio.sleep(0)

    asyncio.run(later())
    assert [line.get("text") for line in lines(store)] == [None, "first", "second"]
    store.close()


@pytest.fixture
def fine_thread_switches() -> Iterator[None]:
    """Threads switch as often as the interpreter allows, so a race between them has its best chance."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.usefixtures("fine_thread_switches")
async def test_a_commit_from_a_worker_thread_is_written_at_once_whole_among_the_loops_lines(
    tmp_path: Path,
) -> None:
    # A file tool reports its change from the worker thread that renamed the file into place, while the
    # loop goes on queueing and flushing the session's other events: every line stays whole, the
    # commit is on disk when `append` returns, and the loop's own lines keep their order.
    store = SessionStore(tmp_path)
    store.begin(SESSION, "/w", ("/w",))
    sizes: list[int] = []  # the log's size as each append of a commit returned

    def commits() -> None:
        for n in range(200):
            store.append(
                SESSION, {"type": "tool/commit", "callId": f"w{n}", "name": "write", "summary": "x" * 500}
            )
            sizes.append(os.path.getsize(store.root / f"{SESSION}.jsonl"))

    worker = asyncio.ensure_future(asyncio.to_thread(commits))
    n = 0
    while not worker.done():
        store.append(SESSION, {"type": "assistant", "text": f"step {n}" + "y" * 300})
        n += 1
        if n % 7 == 0:
            store.flush()
        await asyncio.sleep(0)
    await worker
    store.close()

    events = lines(store)  # json.loads of every line: each one whole
    steps = [int(e["text"].split()[1].rstrip("y")) for e in events if e["type"] == "assistant"]
    assert steps == list(range(n))
    assert [e["callId"] for e in events if e["type"] == "tool/commit"] == [f"w{k}" for k in range(200)]
    data = (store.root / f"{SESSION}.jsonl").read_bytes()
    ends = [data.index(f'"callId":"w{k}"'.encode()) for k in range(200)]
    assert all(end < size for end, size in zip(ends, sizes, strict=True))
