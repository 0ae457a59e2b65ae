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

Bounds: output is read a chunk at a time. Content mode reads ripgrep's plain output, one block of lines a
file (`--heading`: far less to make and to parse than `--json` events; a file's matches are counted by C
code, and its lines parsed only when it may be shown): a file's block up to `BLOCK_CAP` bytes is read
whole, a longer one line by line, a line up to `LINE_CAP` bytes whole, a longer one (a minified file's
line can be hundreds of MB) only up to that cap, and its text is given as its start, at least
`line_chars` characters of it. Of one file, at most `keep` matching lines are held until ripgrep ends
that file. Of stderr, the first 64 KiB are kept, the rest read and dropped.

Must not: fail on a line of any length, let ripgrep block on a full pipe, or leave the process running:
it is killed and reaped on every way out (a cancelled search included).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
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
        cmd += ["--line-number", "--with-filename", "--heading", "--null", "--no-context-separator"]
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
            context = bool(query.lines_before or query.lines_after)
            found = await _read_content(proc.stdout, sink, keep, line_chars, context)
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
    rg: str,
    root: str,
    on_batch: Callable[[list[str]], None],
    *,
    hidden: bool,
    max_depth: int | None,
    names: tuple[str, ...] = (),
) -> None:
    """The files below the directory `root` that a search reads (`ignore.walk`: ignore files, hidden
    files, no symbolic links), absolute (names decoded as `os.fsdecode` does), in no particular order,
    handed to `on_batch` a batch at a time as ripgrep finds them. `hidden`: dot-names too, but no `.git`.
    `max_depth`: files at most that many levels below `root`. `names`: only files whose name matches one
    of these globs (`*` and literal characters only: no `?`, `[`, `]`, `{`, `}`, `\\`, `,` or `:`); a
    hidden file may then come back even without `hidden`, because a name that matches counts as
    re-included (ripgrep's file types): the caller decides about those. Raises `Unavailable` when `rg`
    cannot be started."""
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
    encoding = sys.getfilesystemencoding()
    try:
        rest = b""
        while chunk := await proc.stdout.read(CHUNK):
            end = chunk.rfind(b"\0")
            if end < 0:
                rest += chunk
                continue
            # One decoding for the batch: a NUL never ends a character, so each name decodes as alone.
            on_batch((rest + chunk[:end]).decode(encoding, "surrogateescape").split("\0"))
            rest = chunk[end + 1 :]
        await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await errors


async def _drain(stream: asyncio.StreamReader, keep: int = STDERR_KEPT) -> bytes:
    """Read a stream to its end, keeping its start: ripgrep must never block on a full stderr pipe
    (one warning per unreadable file adds up)."""
    kept = bytearray()
    while chunk := await stream.read(CHUNK):
        kept += chunk[: max(0, keep - len(kept))]
    return bytes(kept)


# --- content mode: one block of lines a file --------------------------------------------------------

# `--heading --null`: a file's block is "path\0" and its lines, "N:text" for a match and "N-text" for
# context, then a blank line before the next file's block. ripgrep writes a file's block at once, even
# when searching in parallel; "\n\n" occurs nowhere else (every line starts with its number).
_BLOCK_END = b"\n\n"
# A file's block up to this size is read whole and handled at once (its matches counted by C code, its
# lines parsed only if the file can be shown); past it, its lines are handled as they come.
BLOCK_CAP = 4 << 20
# A line longer than this is kept only up to it (a minified file's line can be hundreds of MB): its number
# and the start of its text, so memory stays bounded and the line comes back as its start.
LINE_CAP = 1 << 20
_LINE = re.compile(rb"([0-9]+)([:-])")
_MATCH_LINE = re.compile(rb"^[0-9]+:", re.MULTILINE)
# What ripgrep prints about a binary file: a line of its own in the block ("path: WARNING: stopped
# searching binary file after match ..."; the lines before the NUL byte were printed, and are kept), or a
# block of its own without the NUL after the path ("path: binary file matches ...", for a file named on
# the command line: skipped, as the Python backend skips it).
_BINARY_NOTE = b": WARNING: stopped searching binary file after match"


class _ContentReader:
    """Reads `--heading --null --line-number` output a chunk at a time and hands each file to the sink
    when its block has been read. Of each file, at most `keep` matching lines are kept, and the context
    lines after the last of them up to the next match (`search_results.capped`); every matching line is
    counted. `context`: whether context lines were asked for (without, every line is a match)."""

    def __init__(self, sink: Sink, keep: int, text_bytes: int, context: bool) -> None:
        self.sink = sink
        self.keep = keep
        self.text_bytes = text_bytes
        self.context = context
        self.pending = bytearray()  # what was read after the last whole block
        self.searched = 0  # how much of `pending` holds no block end
        self.overflow = False  # the last line of `pending` reached LINE_CAP: its rest is dropped
        # A file whose block is longer than BLOCK_CAP, read line by line.
        self.path: bytes | None = None
        self.count = 0
        self.kept = 0
        self.taking = True
        self.lines: list[tuple[int, bytes, bool]] = []
        self.found = False

    def feed(self, chunk: bytes) -> None:
        if self.overflow:
            end = chunk.find(b"\n")
            if end < 0:
                return
            self.overflow = False
            chunk = chunk[end:]  # the long line ends here
        self.pending += chunk
        end = self.pending.rfind(_BLOCK_END, max(0, self.searched - 1))
        if end < 0:
            self.searched = len(self.pending)
            if len(self.pending) > BLOCK_CAP:
                self._spill()
            return
        blocks = bytes(memoryview(self.pending)[:end]).split(_BLOCK_END)
        del self.pending[: end + 2]
        self.searched = 0
        for block in blocks:
            self._block(block)

    def close(self) -> bool:
        if self.pending:
            self._block(bytes(self.pending).removesuffix(b"\n"))
            self.pending.clear()
        return self.found

    def _block(self, block: bytes) -> None:
        """A file's whole block, or the rest of a long one."""
        if self.path is not None:  # the end of a long block: line by line, as its start was
            self._lines(block.split(b"\n"))
            self._end_long()
            return
        nul = block.find(b"\0")
        if nul < 0:
            return  # "path: binary file matches (...)"
        if self.context or _BINARY_NOTE in block:
            count = len(_MATCH_LINE.findall(block[nul + 1 :]))
        else:
            count = block.count(b"\n", nul) + 1  # every line a match
        if count:
            self.found = True
            self.sink.add(block[:nul].decode("utf-8", "replace"), count, self._parse(block, nul + 1))

    def _parse(self, block: bytes, start: int) -> Iterator[Line]:
        """A block's lines (from `start`) up to its `keep`-th match and the context after it, parsed as
        they are asked for (only a file that may be shown is asked)."""
        text_bytes, line_at, left = self.text_bytes, _LINE.match, self.keep
        for line in block[start:].split(b"\n"):
            found = line_at(line)
            if found is None:
                continue  # ripgrep's note about a binary file
            is_match = found.group(2) == b":"
            if is_match:
                if not left:
                    return
                left -= 1
            text = found.end()
            yield int(found.group(1)), line[text : text + text_bytes].decode("utf-8", "replace"), is_match

    def _spill(self) -> None:
        """Handle the whole lines of a block past BLOCK_CAP now; keep its last, unfinished line (cut at
        LINE_CAP)."""
        last = self.pending.rfind(b"\n")
        lines = bytes(self.pending[:last]).split(b"\n") if last >= 0 else []
        del self.pending[: last + 1]
        if self.path is None and lines:
            first = lines[0]
            nul = first.find(b"\0")
            if nul < 0:  # not a file's block: nothing of ours
                lines = lines[1:]
            else:
                self.path = first[:nul]
                lines[0] = first[nul + 1 :]
        self._lines(lines)
        if len(self.pending) > LINE_CAP:
            del self.pending[LINE_CAP:]
            self.overflow = True
        self.searched = len(self.pending)

    def _lines(self, lines: list[bytes]) -> None:
        line_at = _LINE.match
        for line in lines:
            found = line_at(line)
            if found is None:
                continue  # ripgrep's note about a binary file
            is_match = found.group(2) == b":"
            self.count += is_match
            if not self.taking:
                continue
            if is_match:
                if self.kept == self.keep:
                    self.taking = False  # the lines past it cannot be shown (`search_results.capped`)
                    continue
                self.kept += 1
            text = found.end()
            self.lines.append((int(found.group(1)), line[text : text + self.text_bytes], is_match))

    def _end_long(self) -> None:
        path, self.path = self.path, None
        if path is not None and self.count:
            self.found = True
            lines = [(n, text.decode("utf-8", "replace"), m) for n, text, m in self.lines]
            self.sink.add(path.decode("utf-8", "replace"), self.count, lines)
        self.count, self.kept, self.taking, self.lines = 0, 0, True, []


async def _read_content(
    stdout: asyncio.StreamReader, sink: Sink, keep: int, line_chars: int, context: bool
) -> bool:
    """Hand each file of the content output to `sink`; whether any was. A line's text is decoded from at
    most 4 bytes a character, so a line at least `line_chars` characters long comes back that long."""
    reader = _ContentReader(sink, keep, 4 * line_chars, context)
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
