"""ripgrep (`rg`) as a search backend: one process per searched root, its output read as a stream.

`search(rg, query, root, sink)` runs `rg` on `root` and hands each file with matches to `sink.add(path,
count, lines)` once, in no particular order (ripgrep searches in parallel; `search_results.Collector`
puts them in path order): `path` absolute when `root` is; `count` its matching lines; `lines` (content
mode only) its matching and context lines as `(number, text, is_match)`, the text without its line feed
(a carriage return stays), of which at most `keep` matching lines, and the context lines after the last
of them up to the next match (`search_results.capped`: what can be shown), while `count` counts them
all. It returns when ripgrep has exited; it raises `Unavailable` when `rg` cannot be started or the query
cannot be put on a command line (a NUL byte), and `PatternRejected` when ripgrep refused the pattern
(with ripgrep's explanation). What to do then is the caller's: this module knows the process and its
formats, not the tool.

`files(rg, root, ...)` lists the files below `root` that a search would read (`ignore.walk`'s set),
optionally only those whose name matches one of some simple globs, for `glob`.

The query (`Query`) is the search `grep` offers: a regular expression, case, a glob filter, the output
mode and context lines. ripgrep runs with `--no-config --no-ignore-global`, so neither a user's config
nor their global gitignore changes what it finds.

Bounds: output is read a chunk at a time. Content mode reads ripgrep's plain lines ("path\\0N:text", far
less to make and to parse than `--json` events): a line up to `LINE_CAP` bytes is read whole, a longer one
(a minified file's line can be hundreds of MB) only up to that cap, and its text is given as its start,
at least `line_chars` characters of it. Of one file, at most `keep` matching lines are held until ripgrep
ends that file. Of stderr, the first 64 KiB are kept, the rest read and dropped.

Must not: fail on a line of any length, let ripgrep block on a full pipe, or leave the process running:
it is killed and reaped on every way out (a cancelled search included).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .search_results import Line, Mode

STDERR_KEPT = 64 * 1024
CHUNK = 1 << 18
_BASE = ("--no-config", "--no-ignore-global")


@dataclass(frozen=True, slots=True)
class Query:
    """What to search for. `context`, `before` and `after` are ripgrep's -C, -B and -A (None: not given;
    -A and -B win over -C)."""

    pattern: str
    mode: Mode
    case_insensitive: bool = False
    glob: str | None = None
    context: int | None = None
    before: int | None = None
    after: int | None = None

    @property
    def lines_before(self) -> int:
        return self.before if self.before is not None else self.context or 0

    @property
    def lines_after(self) -> int:
        return self.after if self.after is not None else self.context or 0


class Sink(Protocol):
    """Where a search puts each file with matches (`count` > 0), once."""

    def add(self, path: str, count: int, lines: Iterable[Line] = ()) -> None: ...


class Unavailable(Exception):
    """ripgrep could not run this query: `rg` would not start, or no command line can carry the query."""


class PatternRejected(Exception):
    """ripgrep refused the pattern; `detail` is its explanation."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def command(rg: str, query: Query, target: str) -> list[str]:
    cmd = [rg, *_BASE, "--color", "never", "-e", query.pattern]
    if query.case_insensitive:
        cmd.append("-i")
    if query.glob:
        cmd += ["--glob", query.glob]
    if query.mode == "content":
        cmd += ["--line-number", "--with-filename", "--null", "--no-context-separator"]
        if query.context is not None:
            cmd += ["-C", str(query.context)]
        if query.before is not None:
            cmd += ["-B", str(query.before)]
        if query.after is not None:
            cmd += ["-A", str(query.after)]
    elif query.mode == "count":
        cmd += ["--count", "--null", "--with-filename"]
    else:
        cmd += ["--files-with-matches", "--null"]
    return [*cmd, "--", target]


async def _start(argv: list[str], cwd: str) -> asyncio.subprocess.Process:
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,  # ripgrep matches --glob paths relative to its cwd
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, ValueError):
        # An rg on PATH that cannot run, or an argument no command line can carry (a NUL byte in the
        # pattern).
        raise Unavailable from None


async def search(
    rg: str, query: Query, root: str, sink: Sink, *, line_chars: int, keep: int = 1 << 62
) -> None:
    """Search `root` (a directory, or one file) with the `rg` executable; see the module docstring."""
    cwd = root if os.path.isdir(root) else os.path.dirname(root)  # noqa: ASYNC240 - a stat
    proc = await _start(command(rg, query, root), cwd)
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(_drain(proc.stderr))
    try:
        if query.mode == "content":
            found = await _read_content(proc.stdout, sink, keep, line_chars)
        else:
            found = await _read_null(proc.stdout, sink, query.mode == "count")
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        stderr = (await errors).decode("utf-8", "replace") if not errors.cancelled() else ""
    if code == 2 and not found and ("regex" in stderr or "error parsing" in stderr):
        raise PatternRejected(stderr.split("error:", 1)[-1].split("\n\n")[0])


async def files(
    rg: str, root: str, *, hidden: bool, max_depth: int | None, names: tuple[str, ...] = ()
) -> list[str]:
    """The files below the directory `root` that a search reads (`ignore.walk`: ignore files, hidden
    files, no symbolic links), absolute (names decoded as `os.fsdecode` does), in no particular order.
    `hidden`: dot-names too, but no `.git`. `max_depth`: files at most that many levels below `root`.
    `names`: only files whose name matches one of these globs (`*` and literal characters only: no `?`,
    `[`, `]`, `{`, `}`, `\\`, `,` or `:`); a hidden file may then come back even without `hidden`,
    because a name that matches counts as re-included (ripgrep's file types): the caller decides about
    those. Raises `Unavailable` when `rg` cannot be started."""
    cmd = [rg, *_BASE, "--files", "--null"]
    if hidden:
        cmd += ["--hidden", "--glob", "!.git"]
    if max_depth is not None:
        cmd += ["--max-depth", str(max_depth)]
    if names:
        cmd += [arg for name in names for arg in ("--type-add", f"acpbridgeglob:{name}")]
        cmd += ["--type", "acpbridgeglob"]
    proc = await _start([*cmd, "--", root], root)
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(_drain(proc.stderr))
    try:
        out = bytearray()
        while chunk := await proc.stdout.read(CHUNK):
            out += chunk
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await errors
    # One decoding for them all: a NUL never ends a character, so each name decodes as on its own.
    return out.decode(sys.getfilesystemencoding(), "surrogateescape").split("\0")[:-1]


async def _drain(stream: asyncio.StreamReader, keep: int = STDERR_KEPT) -> bytes:
    """Read a stream to its end, keeping its start: ripgrep must never block on a full stderr pipe
    (one warning per unreadable file adds up)."""
    kept = bytearray()
    while chunk := await stream.read(CHUNK):
        kept += chunk[: max(0, keep - len(kept))]
    return bytes(kept)


# --- content mode: "path\0N:text" lines ---------------------------------------------------------------

# A line longer than this is kept only up to it (a minified file's line can be hundreds of MB): it holds
# the path, the line number and the start of the text, so memory stays bounded and the line comes back as
# its start.
LINE_CAP = 1 << 20
_NUMBER = re.compile(rb"([0-9]+)([:-])")
# What ripgrep prints about a binary file, on a line of its own without the NUL after the path.
_BINARY_NOTE = re.compile(
    rb': (?:WARNING: stopped searching binary file after match|binary file matches) \(found "\\0" byte '
    rb"around offset [0-9]+\)\Z"
)
_PATH_MAX = 4096


class _ContentReader:
    """Reads `--null --line-number` output a chunk at a time and hands each file to the sink when its
    last line has been read (ripgrep prints a file's lines together, even when searching in parallel).

    A line is "path\\0N:text" for a match, "path\\0N-text" for context. A line without a NUL is ripgrep's
    note about a binary file (skipped: the file's lines before its NUL byte were printed, and are kept),
    or the start of a path that holds a line feed, kept for the line after it. Of each file, at most
    `keep` matching lines are kept, and the context lines after the last of them up to the next match
    (`search_results.capped`); every matching line is counted."""

    def __init__(self, sink: Sink, keep: int, text_bytes: int) -> None:
        self.sink = sink
        self.keep = keep
        self.text_bytes = text_bytes
        self.partial = bytearray()  # the start of a line whose line feed has not been read yet
        self.overflow = False  # the partial line reached LINE_CAP: the rest of it is dropped
        self.prefix = b""  # the start of a path with a line feed in it
        self.path: bytes | None = None
        self.count = 0
        self.kept = 0
        self.taking = True
        self.lines: list[tuple[int, bytes, bool]] = []
        self.found = False

    def feed(self, chunk: bytes) -> None:
        start = 0
        if self.partial or self.overflow:
            end = chunk.find(b"\n")
            if end < 0:
                self._extend(chunk)
                return
            self._extend(chunk[:end])
            self._lines([bytes(self.partial)])
            self.partial.clear()
            self.overflow = False
            start = end + 1
        last = chunk.rfind(b"\n")
        if last >= start:
            self._lines(chunk[start:last].split(b"\n"))
            start = last + 1
        if start < len(chunk):
            self._extend(chunk[start:])

    def _extend(self, piece: bytes) -> None:
        room = LINE_CAP - len(self.partial)
        if len(piece) > room:
            self.overflow = True
        if room > 0:
            self.partial += piece[:room]

    def _lines(self, lines: list[bytes]) -> None:
        number_at = _NUMBER.match
        for line in lines:
            nul = line.find(b"\0")
            if nul < 0:
                if line and line != b"--" and not _BINARY_NOTE.search(line):
                    self.prefix = (self.prefix + line + b"\n")[-_PATH_MAX:]
                continue
            path = line[:nul]
            if self.prefix:
                path, self.prefix = self.prefix + path, b""
            if path != self.path:
                self._end_file()
                self.path = path
            found = number_at(line, nul + 1)
            if found is None:
                continue
            is_match = found.group(2) == b":"
            if is_match:
                self.count += 1
            if self.taking:
                if is_match:
                    if self.kept == self.keep:
                        self.taking = False
                        continue
                    self.kept += 1
                text = found.end()
                self.lines.append((int(found.group(1)), line[text : text + self.text_bytes], is_match))

    def _end_file(self) -> None:
        if self.path is not None and self.count:
            self.found = True
            lines = [(n, text.decode("utf-8", "replace"), m) for n, text, m in self.lines]
            self.sink.add(self.path.decode("utf-8", "replace"), self.count, lines)
        self.path, self.count, self.kept, self.taking, self.lines = None, 0, 0, True, []

    def close(self) -> bool:
        if self.partial or self.overflow:
            self._lines([bytes(self.partial)])
        self._end_file()
        return self.found


async def _read_content(stdout: asyncio.StreamReader, sink: Sink, keep: int, line_chars: int) -> bool:
    """Hand each file of the content output to `sink`; whether any was. A line's text is decoded from at
    most 4 bytes a character, so a line at least `line_chars` characters long comes back that long."""
    reader = _ContentReader(sink, keep, 4 * line_chars)
    while chunk := await stdout.read(CHUNK):
        reader.feed(chunk)
    return reader.close()


# --- the other modes: NUL-separated records -----------------------------------------------------------


async def _read_null(stdout: asyncio.StreamReader, sink: Sink, counts: bool) -> bool:
    """`-l --null` prints "path\\0" records; `--count --null` prints "path\\0N\\n" lines. Whether any file
    was handed to `sink`."""
    buffer = b""
    separator = b"\n" if counts else b"\0"
    found = False
    while chunk := await stdout.read(CHUNK):
        *records, buffer = (buffer + chunk).split(separator)
        for record in records:
            found = _record(record, sink, counts) or found
    if buffer:
        found = _record(buffer, sink, counts) or found
    return found


def _record(record: bytes, sink: Sink, counts: bool) -> bool:
    text = record.decode("utf-8", "replace")
    if counts:
        name, _, number = text.rpartition("\0")
        count = int(number)
        sink.add(name, count)
        return count > 0
    sink.add(text, 1)
    return True
