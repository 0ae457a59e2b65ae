"""`presenters.ripgrep`, the process and its output, on its own contract: what the sink gets, the two ways
it refuses, and the process never left running or blocked (a stand-in `rg` script where the real one
cannot be made to misbehave)."""

from __future__ import annotations

import asyncio
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

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
                ("a.txt", 2, [(1, "needle", True), (2, "x", False), (3, "needle again", True)]),
                ("b.txt", 1, [(1, "one", False), (2, "needle two", True), (3, "three", False)]),
            ],
        ),
        ("count", [("a.txt", 2, []), ("b.txt", 1, [])]),
        ("files_with_matches", [("a.txt", 1, []), ("b.txt", 1, [])]),
    ],
)
async def test_each_file_with_matches_reaches_the_sink_once(
    tmp_path: Path, mode: ripgrep.Mode, expected: list[tuple[str, int, list[Line]]]
) -> None:
    assert RG is not None
    tree(tmp_path)
    sink = Sink()

    await ripgrep.search(RG, Query("needle", mode, context=1), str(tmp_path), sink, line_chars=100)

    assert sorted(sink.files) == [(str(tmp_path / name), count, lines) for name, count, lines in expected]


@needs_rg
async def test_content_keeps_at_most_keep_matching_lines_of_a_file_and_counts_them_all(
    tmp_path: Path,
) -> None:
    assert RG is not None
    (tmp_path / "many.txt").write_text("needle 1\nctx\nneedle 2\nctx\nneedle 3\nneedle 4\n")
    sink = Sink()

    await ripgrep.search(RG, Query("needle", "content", after=1), str(tmp_path), sink, line_chars=100, keep=2)

    # The two kept matches, and the context after the last of them up to the next match.
    assert sink.files == [
        (str(tmp_path / "many.txt"), 4, [(1, "needle 1", True), (2, "ctx", False), (3, "needle 2", True),
                                         (4, "ctx", False)])
    ]  # fmt: skip


@needs_rg
async def test_content_reads_paths_with_line_feeds_crs_and_binary_notes(tmp_path: Path) -> None:
    assert RG is not None
    (tmp_path / "two\nlines.txt").write_text("needle\n")
    (tmp_path / "crlf.txt").write_bytes(b"needle\r\nother\r\n")
    (tmp_path / "late.bin").write_bytes(b"needle one\n" + b"x" * 100_000 + b"\nneedle two\x00\n")
    sink = Sink()

    await ripgrep.search(RG, Query("needle", "content"), str(tmp_path), sink, line_chars=100)

    assert sorted(sink.files) == [
        (str(tmp_path / "crlf.txt"), 1, [(1, "needle\r", True)]),
        (str(tmp_path / "late.bin"), 1, [(1, "needle one", True)]),  # ripgrep stops at the NUL byte
        (str(tmp_path / "two\nlines.txt"), 1, [(1, "needle", True)]),
    ]


@needs_rg
async def test_files_lists_what_a_search_reads_filtered_by_name(tmp_path: Path) -> None:
    assert RG is not None
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("ignored.py\n")
    for name in ("a.py", "b.txt", "ignored.py", "sub/c.py", "sub/deep/d.py", ".hidden/e.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x\n")
    root = str(tmp_path)

    def names(paths: list[str]) -> list[str]:
        return sorted(p[len(root) + 1 :] for p in paths)

    async def listed(**options: Any) -> list[str]:
        batches: list[list[str]] = []
        assert RG is not None
        await ripgrep.files(RG, root, batches.append, **options)
        return [path for batch in batches for path in batch]

    every = await listed(hidden=False, max_depth=None)
    python = await listed(hidden=False, max_depth=2, names=("*.py",))
    hidden = await listed(hidden=True, max_depth=None, names=("*.py",))

    assert names(every) == ["a.py", "b.txt", "sub/c.py", "sub/deep/d.py"]
    assert names(python) == ["a.py", "sub/c.py"]
    assert names(hidden) == [".hidden/e.py", "a.py", "sub/c.py", "sub/deep/d.py"]


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


def heading_output(files: list[tuple[str, list[tuple[int, str, bool]]]]) -> bytes:
    """What `rg --heading --null --line-number` prints for these files."""
    blocks = []
    for path, lines in files:
        body = "\n".join(f"{n}{':' if m else '-'}{text}" for n, text, m in lines)
        blocks.append(f"{path}\0{body}\n".encode())
    return b"\n".join(blocks)


def read_content(output: bytes, chunk: int, keep: int, context: bool) -> list[tuple[str, int, list[Line]]]:
    sink = Sink()
    reader = ripgrep._ContentReader(sink, keep, 4 * 100, context)
    for start in range(0, len(output), chunk):
        reader.feed(output[start : start + chunk])
    reader.close()
    return sink.files


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 16])
@pytest.mark.parametrize("context", [False, True])
def test_content_blocks_read_alike_whatever_the_chunks_and_however_long(
    monkeypatch: pytest.MonkeyPatch, chunk: int, context: bool
) -> None:
    # Small caps, so that long blocks (read line by line) and long lines (cut) come up in a small output.
    monkeypatch.setattr(ripgrep, "BLOCK_CAP", 200)
    monkeypatch.setattr(ripgrep, "LINE_CAP", 500)  # past the 400 bytes of text kept
    files = [
        ("a.txt", [(1, "needle", True), (2, "ctx", False), (3, "needle 2", True)] if context
         else [(1, "needle", True), (3, "needle 2", True)]),
        ("many.txt", [(n, f"needle {n}", True) for n in range(1, 60)]),  # a long block
        ("odd\nname.txt", [(7, "needle \r", True)]),
        ("long.js", [(1, "x" * 1000 + " needle", True), (2, "needle short", True)]),  # a long line
        ("z.txt", [(5, "needle last", True)]),
    ]  # fmt: skip
    output = heading_output(files)

    got = read_content(output, chunk, keep=3, context=context)

    expected = []
    for path, lines in files:
        shown, matches = [], 0
        for n, text, m in lines:
            if m and matches == 3:
                break
            matches += m
            shown.append((n, text[:400], m))
        expected.append((path, sum(m for _, _, m in lines), shown))
    assert got == expected


def test_content_skips_ripgreps_notes_about_binary_files() -> None:
    output = (
        b"late.bin\x001:needle one\nlate.bin: WARNING: stopped searching binary file after match (found "
        b'"\\0" byte around offset 100020)\n\nnamed.bin: binary file matches (found "\\0" byte around '
        b"offset 5)\n\nok.txt\x002:needle\n"
    )
    for context in (False, True):
        assert read_content(output, 5, keep=10, context=context) == [
            ("late.bin", 1, [(1, "needle one", True)]),
            ("ok.txt", 1, [(2, "needle", True)]),
        ]
