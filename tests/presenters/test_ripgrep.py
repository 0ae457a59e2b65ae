"""`presenters.ripgrep`, the process and its output, on its own contract: what the sink gets, the two ways
it refuses, and the process never left running or blocked (a stand-in `rg` script where the real one
cannot be made to misbehave)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path

import psutil  # type: ignore[import-untyped]
import pytest

from presenters import ripgrep
from presenters.ripgrep import Line, Query

RG = shutil.which("rg")
needs_rg = pytest.mark.skipif(RG is None, reason="ripgrep is not on PATH")
BOUND_S = 20.0


class Sink:
    def __init__(self) -> None:
        self.files: list[tuple[str, int, list[Line]]] = []
        self.added = asyncio.Event()

    def add(self, path: str, count: int, lines: Iterable[Line] = ()) -> None:
        self.files.append((path, count, list(lines)))
        self.added.set()


def tree(root: Path) -> None:
    (root / "b.txt").write_text("one\nneedle two\nthree\n")
    (root / "a.txt").write_text("needle\nx\nneedle again\n")
    (root / "c.txt").write_text("nothing here\n")


def fake_rg(tmp_path: Path, script: str) -> str:
    path = tmp_path / "fake-rg"
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


@needs_rg
@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (
            "content",
            [
                ("a.txt", 2, [(1, "needle\n", True), (2, "x\n", False), (3, "needle again\n", True)]),
                ("b.txt", 1, [(1, "one\n", False), (2, "needle two\n", True), (3, "three\n", False)]),
            ],
        ),
        ("count", [("a.txt", 2, []), ("b.txt", 1, [])]),
        ("files_with_matches", [("a.txt", 1, []), ("b.txt", 1, [])]),
    ],
)
async def test_each_file_with_matches_reaches_the_sink_in_path_order(
    tmp_path: Path, mode: ripgrep.Mode, expected: list[tuple[str, int, list[Line]]]
) -> None:
    assert RG is not None
    tree(tmp_path)
    sink = Sink()

    await ripgrep.search(RG, Query("needle", mode, context=1), str(tmp_path), sink, line_chars=100)

    assert sink.files == [(str(tmp_path / name), count, lines) for name, count, lines in expected]


@needs_rg
async def test_a_pattern_ripgrep_refuses_says_why(tmp_path: Path) -> None:
    assert RG is not None
    tree(tmp_path)
    with pytest.raises(ripgrep.PatternRejected) as refused:
        await ripgrep.search(RG, Query("foo(bar", "content"), str(tmp_path), Sink(), line_chars=100)
    assert "unclosed group" in refused.value.detail


@pytest.mark.parametrize("cause", ["no such program", "a NUL byte in the pattern"])
async def test_what_cannot_be_run_is_unavailable(tmp_path: Path, cause: str) -> None:
    rg = str(tmp_path / "missing-rg") if cause == "no such program" else (RG or "rg")
    with pytest.raises(ripgrep.Unavailable):
        await ripgrep.search(rg, Query("a\x00b", "count"), str(tmp_path), Sink(), line_chars=100)


async def test_a_cancelled_search_leaves_no_process(tmp_path: Path) -> None:
    # One file's matches, then a process that would run for a minute.
    rg = fake_rg(tmp_path, "printf 'a.txt\\0'\nexec sleep 60\n")
    sink = Sink()
    search = asyncio.ensure_future(
        ripgrep.search(rg, Query("x", "files_with_matches"), str(tmp_path), sink, line_chars=100)
    )
    await asyncio.wait_for(sink.added.wait(), BOUND_S)
    sleeping = [p for p in psutil.Process().children(recursive=True) if p.name() == "sleep"]
    assert sleeping

    search.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(search, BOUND_S)
    assert not [p for p in sleeping if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert sink.files == [("a.txt", 1, [])]


def test_a_flood_on_stderr_never_blocks_ripgrep(tmp_path: Path) -> None:
    # 4 MiB of warnings, far past a pipe's capacity, before the one record on stdout. The search runs on
    # a loop of its own in a daemon thread, so one that blocks fails this test instead of hanging it.
    rg = fake_rg(tmp_path, "head -c 4194304 /dev/zero | tr '\\0' w >&2\nprintf 'a.txt\\0'\n")
    sink = Sink()
    ended = threading.Event()

    def run() -> None:
        asyncio.run(ripgrep.search(rg, Query("x", "files_with_matches"), str(tmp_path), sink, line_chars=9))
        ended.set()

    threading.Thread(target=run, daemon=True).start()
    if not ended.wait(BOUND_S):
        for process in psutil.Process().children(recursive=True):
            if rg in " ".join(process.cmdline()):
                process.kill()
        pytest.fail("the search blocked")
    assert sink.files == [("a.txt", 1, [])]
