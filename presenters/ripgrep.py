"""ripgrep (`rg`) as a search backend: one process per searched root, its output read as a stream.

`search(rg, query, root, sink)` runs `rg` on `root` and hands each file with matches to `sink.add(path,
count, lines)`, in ripgrep's order (`--sort path`): `path` absolute when `root` is; `count` its matching
lines; `lines` (content mode only) its matching and context lines as `(number, text, is_match)`, the text
with its line ending. It returns when ripgrep has exited; it raises `Unavailable` when `rg` cannot be
started or the query cannot be put on a command line (a NUL byte), and `PatternRejected` when ripgrep
refused the pattern (with ripgrep's explanation). What to do then is the caller's: this module knows the
process and its formats, not the tool.

The query (`Query`) is the search `grep` offers: a regular expression, case, a glob filter, the output
mode and context lines. ripgrep runs with `--no-config --no-ignore-global`, so neither a user's config
nor their global gitignore changes what it finds.

Bounds: output is read a chunk at a time. Content mode reads ripgrep's JSON events (one a line): an
event up to `JSON_EVENT_CAP` bytes is parsed whole; a longer one (a minified file's line can be hundreds
of MB) is kept only up to that cap, and its line is given as its start, at least `line_chars` characters
of it. One file's lines are held until ripgrep ends that file. Of stderr, the first 64 KiB are kept, the
rest read and dropped.

Must not: fail on a line of any length, let ripgrep block on a full pipe, or leave the process running:
it is killed and reaped on every way out (a cancelled search included).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Mode = Literal["content", "files_with_matches", "count"]
Line = tuple[int, str, bool]  # (number, text, is_match)

STDERR_KEPT = 64 * 1024
CHUNK = 1 << 16


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
    """Where a search puts each file with matches (`count` > 0), in order."""

    def add(self, path: str, count: int, lines: Iterable[Line] = ()) -> None: ...


class Unavailable(Exception):
    """ripgrep could not run this query: `rg` would not start, or no command line can carry the query."""


class PatternRejected(Exception):
    """ripgrep refused the pattern; `detail` is its explanation."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def command(rg: str, query: Query, target: str) -> list[str]:
    cmd = [rg, "--no-config", "--no-ignore-global", "--sort", "path", "--color", "never", "-e", query.pattern]
    if query.case_insensitive:
        cmd.append("-i")
    if query.glob:
        cmd += ["--glob", query.glob]
    if query.mode == "content":
        cmd.append("--json")
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


async def search(rg: str, query: Query, root: str, sink: Sink, *, line_chars: int) -> None:
    """Search `root` (a directory, or one file) with the `rg` executable; see the module docstring."""
    cwd = root if os.path.isdir(root) else os.path.dirname(root)  # noqa: ASYNC240 - a stat
    try:
        proc = await asyncio.create_subprocess_exec(
            *command(rg, query, root),
            cwd=cwd,  # ripgrep matches --glob paths relative to its cwd
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, ValueError):
        # An rg on PATH that cannot run, or an argument no command line can carry (a NUL byte in the
        # pattern).
        raise Unavailable from None
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(_drain(proc.stderr))
    try:
        if query.mode == "content":
            found = await _read_json(proc.stdout, sink, line_chars)
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


async def _drain(stream: asyncio.StreamReader, keep: int = STDERR_KEPT) -> bytes:
    """Read a stream to its end, keeping its start: ripgrep must never block on a full stderr pipe
    (one warning per unreadable file adds up)."""
    kept = bytearray()
    while chunk := await stream.read(CHUNK):
        kept += chunk[: max(0, keep - len(kept))]
    return bytes(kept)


# --- content mode: JSON events ------------------------------------------------------------------------

# One ripgrep JSON event is one line, as long as the matching line it carries (a minified file's can be
# hundreds of MB). Up to this many bytes an event is parsed whole; a longer one is cut: its first bytes are
# kept (they hold the event's type and the start of the line) and the rest is only scanned for the line
# number, so memory stays bounded and the line comes back as its start.
JSON_EVENT_CAP = 1 << 20
_LINE_NUMBER_KEY = b',"line_number":'
_EVENT_TYPE = re.compile(rb'\A\{"type":"(\w+)"')
_DIGITS = re.compile(rb"[0-9]*")


class _LongEvent:
    """A JSON event longer than `JSON_EVENT_CAP`, read piece by piece: its first bytes, and the line number
    found in the rest. `,"line_number":` cannot occur inside a JSON string (its quote would be escaped),
    so its first occurrence is the key, right after the (long) text of the line."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.line_number: int | None = None
        self._window = b""  # the end of what was scanned, for a key split between two pieces
        self._digits: bytearray | None = None

    def feed(self, piece: bytes) -> None:
        if len(self.head) < JSON_EVENT_CAP:
            self.head += piece[: JSON_EVENT_CAP - len(self.head)]
        if self.line_number is not None:
            return
        if self._digits is None:
            text = self._window + piece
            at = text.find(_LINE_NUMBER_KEY)
            if at < 0:
                self._window = text[-len(_LINE_NUMBER_KEY) :]
                return
            self._digits = bytearray()
            piece = text[at + len(_LINE_NUMBER_KEY) :]
        digits = _DIGITS.match(piece)
        assert digits is not None  # `[0-9]*` always matches
        self._digits += digits.group()
        if digits.end() < len(piece) and self._digits:
            self.line_number = int(self._digits)

    def kind(self) -> str | None:
        found = _EVENT_TYPE.match(self.head)
        return found.group(1).decode() if found else None

    def line_text(self, chars: int) -> str:
        """The start of the line the event carries, at least `chars` characters of it when it is that long
        (the whole line when it fits: an event long only because of its many submatches)."""
        head = self.head.decode("utf-8", "replace")
        for key in ('"lines":{"text":"', '"lines":{"bytes":"'):
            at = head.find(key)
            if at < 0:
                continue
            body = head[at + len(key) : at + len(key) + chars * 12]  # \uXXXX\uXXXX a char
            if "bytes" in key:
                encoded = body.split('"', 1)[0]
                return base64.b64decode(encoded[: len(encoded) // 4 * 4]).decode("utf-8", "replace")
            try:
                text: str = json.decoder.scanstring(body, 0)[0]  # type: ignore[attr-defined]
                return text
            except ValueError:  # the string goes on past what is kept: decode its start
                for end in range(len(body), max(len(body) - 12, -1), -1):
                    try:
                        start: str = json.loads(f'"{body[:end]}"')
                        return start
                    except ValueError:
                        continue
        return ""


async def _json_events(stdout: asyncio.StreamReader) -> AsyncIterator[bytes | _LongEvent]:
    """ripgrep's JSON events, one per line: the line itself, or a `_LongEvent` past `JSON_EVENT_CAP`
    (StreamReader.readline would raise ValueError on a line over its limit)."""
    pending = bytearray()
    long: _LongEvent | None = None
    while chunk := await stdout.read(CHUNK):
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if long is not None:
                long.feed(piece)
            else:
                pending += piece
                if len(pending) > JSON_EVENT_CAP:
                    long = _LongEvent()
                    long.feed(bytes(pending))
                    pending.clear()
            if end < 0:
                break
            yield long if long is not None else bytes(pending)
            long = None
            pending.clear()
            start = end + 1
    if long is not None:
        yield long
    elif pending:
        yield bytes(pending)


def _text_of(node: Any) -> str:
    if "text" in node:
        return str(node["text"])
    return base64.b64decode(node.get("bytes", "")).decode("utf-8", "replace")


async def _read_json(stdout: asyncio.StreamReader, sink: Sink, line_chars: int) -> bool:
    """Hand each file of the `--json` stream to `sink`; whether any was."""
    path, count, found = "", 0, False
    lines: list[Line] = []
    async for raw in _json_events(stdout):
        if isinstance(raw, _LongEvent):
            kind = raw.kind()  # only a match or context event carries a line that long
            if kind in ("match", "context") and raw.line_number is not None:
                count += kind == "match"
                lines.append((raw.line_number, raw.line_text(line_chars), kind == "match"))
            continue
        event = json.loads(raw)
        kind, data = event.get("type"), event.get("data", {})
        if kind == "begin":
            path, count, lines = _text_of(data["path"]), 0, []
        elif kind in ("match", "context"):
            count += kind == "match"
            lines.append((int(data["line_number"]), _text_of(data["lines"]), kind == "match"))
        elif kind == "end":
            sink.add(path, count, lines)
            found = found or count > 0
    return found


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
