"""`grep`: search file contents by regular expression, and its `search` card (shape "matches").

Parameters follow Claude Code's Grep (`pattern`, `path`, `glob`, `output_mode`, `-i`, `-n`, `-A`, `-B`,
`-C`, `head_limit`), so recorded sessions replay unchanged.

Two backends, one result: ripgrep (`rg`) when it is on PATH, else a pure-Python search over the same
files (`ignore.walk` mirrors ripgrep's hidden-file and ignore-file rules; both sort by path). ripgrep runs
with `--no-config --no-ignore-global` so neither a user's config nor global gitignore makes the two
differ. A pattern ripgrep's regex engine rejects but Python's accepts (look-around, backreferences) is
searched by the Python backend. Known remaining differences: regex dialect corner cases, and a NUL byte
past a file's first 64 KiB (ripgrep reports matches before it; Python stops at the line before it).

presentation_meta: {"mode", "pattern", "path" (abs search root), "cwd", "total", "truncated",
"backend": "ripgrep" | "python", "files": [{"path" (abs), "count", "lines": [{"number", "text"}]}]};
`lines` holds matching lines only (content mode), `count` the file's matching lines.

Must not: load more than one file at a time (Python backend), keep more than the capped entries, or fail
on a long line (ripgrep's JSON events are read in bounded pieces; a line of any length shows cut).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import re
import shutil
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from registry_core import (
    GenericCallView,
    Output,
    SearchFileMatches,
    SearchLine,
    SearchResultView,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .cards import call_paths, failure_card, meta_field
from .ignore import Overrides, walk
from .paths import display_path, resolve, session_cwd, session_roots
from .runtime import check, run_blocking

Mode = Literal["content", "files_with_matches", "count"]
Backend = Literal["auto", "ripgrep", "python"]
DEFAULT_LIMITS: dict[str, int] = {"content": 200, "files_with_matches": 200, "count": 200}
MAX_LINE_CHARS = 1000
BINARY_SNIFF = 64 * 1024
BACKEND_ENV = "ACP_BRIDGE_GREP"  # "python" forces the pure-Python backend (tests, machines without rg)


class GrepArgs(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    pattern: str = Field(min_length=1, description="Regular expression to search for.")
    path: str | None = Field(
        default=None, description="File or directory to search (default: every workspace root)."
    )
    glob: str | None = Field(
        default=None, description='Only files matching this glob (e.g. "*.py", "*.{ts,tsx}").'
    )
    output_mode: Mode = Field(
        default="files_with_matches",
        description='"files_with_matches" (default: paths), "content" (matching lines), "count" (per file).',
    )
    case_insensitive: bool = Field(default=False, alias="-i", description="Case-insensitive search.")
    line_numbers: bool = Field(default=True, alias="-n", description="Show line numbers (content mode).")
    after: int | None = Field(default=None, ge=0, le=100, alias="-A", description="Lines after each match.")
    before: int | None = Field(default=None, ge=0, le=100, alias="-B", description="Lines before each match.")
    context: int | None = Field(
        default=None, ge=0, le=100, alias="-C", description="Lines around each match."
    )
    head_limit: int | None = Field(default=None, ge=1, le=5000, description="Show at most this many entries.")


class GrepLine(BaseModel):
    number: int
    text: str
    match: bool = True


class GrepFile(BaseModel):
    path: str
    count: int
    lines: list[GrepLine] = []


class GrepValue(BaseModel):
    mode: Mode
    pattern: str
    root: str
    cwd: str
    files: list[GrepFile]
    total: int
    total_matches: int
    truncated: bool
    backend: Literal["ripgrep", "python"]
    line_numbers: bool


@dataclass
class _Collector:
    """Keeps at most `limit` entries (files, or matching lines in content mode); counts everything."""

    mode: Mode
    limit: int
    after: int
    files: list[GrepFile] = field(default_factory=list)
    total: int = 0
    total_matches: int = 0
    stored: int = 0

    def add(self, path: str, count: int, lines: Iterable[tuple[int, str, bool]] = ()) -> None:
        if count <= 0:
            return
        self.total_matches += count
        if self.mode != "content":
            self.total += 1
            if self.stored < self.limit:
                self.files.append(GrepFile(path=path, count=count))
                self.stored += 1
            return
        self.total += count
        kept: list[GrepLine] = []
        tail_left = 0  # context lines still kept after the last stored match, once the limit is hit
        for number, text, is_match in lines:
            if is_match:
                if self.stored >= self.limit:
                    tail_left = 0
                    continue
                self.stored += 1
                tail_left = self.after
            elif self.stored >= self.limit:
                if tail_left <= 0:
                    continue
                tail_left -= 1
            kept.append(GrepLine(number=number, text=_cut(text), match=is_match))
        if kept:
            self.files.append(GrepFile(path=path, count=count, lines=kept))


def _cut(text: str) -> str:
    text = text.removesuffix("\n").removesuffix("\r")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " … [line cut]"


def _invalid_regex(pattern: str, detail: str) -> ToolError:
    return ToolError(
        f"Invalid regular expression {pattern!r}: {detail.strip()}. Escape special characters such as "
        "( ) [ ] { } . * + ? | with a backslash to search for them literally.",
        code="INVALID_REGEX",
    )


# --- the Python backend ----------------------------------------------------------------------------


def _python_search(args: GrepArgs, root: str, collector: _Collector, stop: threading.Event) -> None:
    flags = re.IGNORECASE if args.case_insensitive else 0
    try:
        regex = re.compile(args.pattern, flags)
    except re.error as exc:
        raise _invalid_regex(args.pattern, str(exc)) from None
    # Whole-text prefilter (re.M gives ^/$ their per-line meaning): a file without a whole-text match
    # has no matching line. \A and \Z mean "line start/end" per line, so they skip the prefilter.
    whole = None if "\\A" in args.pattern or "\\Z" in args.pattern else re.compile(args.pattern, flags | re.M)
    before = args.before if args.before is not None else args.context or 0
    after = args.after if args.after is not None else args.context or 0
    files = (
        [root] if os.path.isfile(root) else walk(root, Overrides([args.glob]) if args.glob else None, stop)
    )
    for path in files:
        check(stop)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            continue  # unreadable files are skipped, as ripgrep does
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            text = data.decode("utf-16", "replace")  # ripgrep transcodes UTF-16 with a BOM
        else:
            if b"\x00" in data[:BINARY_SNIFF]:
                continue  # binary: ripgrep skips it
            nul = data.find(b"\x00")
            if nul >= 0:
                data = data[: data.rfind(b"\n", 0, nul) + 1]
            text = data.decode("utf-8", "replace").removeprefix("\ufeff")
        if whole is not None and whole.search(text) is None:
            continue
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()
        if args.output_mode == "files_with_matches":  # the first match decides, like `rg -l`
            if any(regex.search(line) for line in lines):
                collector.add(path, 1)
            continue
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        if not hits:
            continue
        if args.output_mode != "content":
            collector.add(path, len(hits))
            continue
        shown: dict[int, bool] = {}
        for i in hits:
            for k in range(max(0, i - before), min(len(lines), i + after + 1)):
                shown.setdefault(k, False)
            shown[i] = True
        collector.add(path, len(hits), ((k + 1, lines[k], shown[k]) for k in sorted(shown)))


# --- the ripgrep backend ---------------------------------------------------------------------------


class _FallBack(Exception):
    """Search with the Python backend instead: ripgrep rejected a pattern Python accepts, or could not
    be started."""


def _rg_command(rg: str, args: GrepArgs, target: str) -> list[str]:
    cmd = [rg, "--no-config", "--no-ignore-global", "--sort", "path", "--color", "never", "-e", args.pattern]
    if args.case_insensitive:
        cmd.append("-i")
    if args.glob:
        cmd += ["--glob", args.glob]
    if args.output_mode == "content":
        cmd.append("--json")
        if args.context is not None:
            cmd += ["-C", str(args.context)]
        if args.before is not None:
            cmd += ["-B", str(args.before)]
        if args.after is not None:
            cmd += ["-A", str(args.after)]
    elif args.output_mode == "count":
        cmd += ["--count", "--null", "--with-filename"]
    else:
        cmd += ["--files-with-matches", "--null"]
    return [*cmd, "--", target]


def _text_of(node: Any) -> str:
    if "text" in node:
        return str(node["text"])
    return base64.b64decode(node.get("bytes", "")).decode("utf-8", "replace")


async def _rg_search(rg: str, args: GrepArgs, root: str, collector: _Collector) -> None:
    cwd = root if os.path.isdir(root) else os.path.dirname(root)  # noqa: ASYNC240 - a stat
    try:
        proc = await asyncio.create_subprocess_exec(
            *_rg_command(rg, args, root),
            cwd=cwd,  # ripgrep matches --glob paths relative to its cwd
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
    except (OSError, ValueError):
        # An rg on PATH that cannot run, or an argument no command line can carry (a NUL byte in the
        # pattern): the Python backend still can.
        raise _FallBack from None
    assert proc.stdout is not None and proc.stderr is not None
    errors = asyncio.ensure_future(_drain(proc.stderr))
    try:
        if args.output_mode == "content":
            await _read_json(proc.stdout, collector)
        else:
            await _read_null(proc.stdout, collector, args.output_mode == "count")
        code = await proc.wait()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        stderr = (await errors).decode("utf-8", "replace") if not errors.cancelled() else ""
    if code == 2 and collector.total == 0 and ("regex" in stderr or "error parsing" in stderr):
        try:
            re.compile(args.pattern)
        except re.error:
            raise _invalid_regex(args.pattern, stderr.split("error:", 1)[-1].split("\n\n")[0]) from None
        raise _FallBack


async def _drain(stream: asyncio.StreamReader, keep: int = 64 * 1024) -> bytes:
    """Read a stream to its end, keeping its start: ripgrep must never block on a full stderr pipe
    (one warning per unreadable file adds up)."""
    kept = bytearray()
    while chunk := await stream.read(1 << 16):
        kept += chunk[: max(0, keep - len(kept))]
    return bytes(kept)


# One ripgrep JSON event is one line, as long as the matching line it carries (a minified file's can be
# hundreds of MB). Up to this many bytes an event is parsed whole; a longer one is cut: its first bytes are
# kept (they hold the event's type and the start of the line) and the rest is only scanned for the line
# number, so memory stays bounded and the line shows cut, with a marker, like any long line.
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

    def line_text(self) -> str:
        """The start of the line the event carries: enough of it to show (a cut line is marked by
        `_cut`); the whole line when it fits (an event long only because of its many submatches)."""
        head = self.head.decode("utf-8", "replace")
        for key in ('"lines":{"text":"', '"lines":{"bytes":"'):
            at = head.find(key)
            if at < 0:
                continue
            body = head[at + len(key) : at + len(key) + (MAX_LINE_CHARS + 1) * 12]  # \uXXXX\uXXXX a char
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
    while chunk := await stdout.read(1 << 16):
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


async def _read_json(stdout: asyncio.StreamReader, collector: _Collector) -> None:
    path, count = "", 0
    lines: list[tuple[int, str, bool]] = []
    async for raw in _json_events(stdout):
        if isinstance(raw, _LongEvent):
            kind = raw.kind()  # only a match or context event carries a line that long
            if kind in ("match", "context") and raw.line_number is not None:
                count += kind == "match"
                lines.append((raw.line_number, raw.line_text(), kind == "match"))
            continue
        event = json.loads(raw)
        kind, data = event.get("type"), event.get("data", {})
        if kind == "begin":
            path, count, lines = _text_of(data["path"]), 0, []
        elif kind in ("match", "context"):
            count += kind == "match"
            lines.append((int(data["line_number"]), _text_of(data["lines"]), kind == "match"))
        elif kind == "end":
            collector.add(path, count, lines)


async def _read_null(stdout: asyncio.StreamReader, collector: _Collector, counts: bool) -> None:
    """`-l --null` prints "path\0" records; `--count --null` prints "path\0N\n" lines."""
    buffer = b""
    separator = b"\n" if counts else b"\0"
    while chunk := await stdout.read(1 << 16):
        *records, buffer = (buffer + chunk).split(separator)
        for record in records:
            _record(record, collector, counts)
    if buffer:
        _record(buffer, collector, counts)


def _record(record: bytes, collector: _Collector, counts: bool) -> None:
    text = record.decode("utf-8", "replace")
    if counts:
        name, _, number = text.rpartition("\0")
        collector.add(name, int(number))
    else:
        collector.add(text, 1)


# --- the tool ---------------------------------------------------------------------------------------


def _title(args: GrepArgs, cwd: str | None) -> str:
    where = f" in {call_paths(args.path, cwd)[0]}" if args.path else ""
    return f'Search "{args.pattern}"{where}' + (f" ({args.glob})" if args.glob else "")


def _render(args: GrepArgs, value: GrepValue) -> str:
    show: Callable[[str], str] = lambda p: display_path(p, value.cwd)  # noqa: E731
    if not value.files:
        return f"No matches for {value.pattern!r}."
    if value.mode == "files_with_matches":
        out = [f"Found {value.total} file{'s' if value.total != 1 else ''}"] + [
            show(f.path) for f in value.files
        ]
    elif value.mode == "count":
        out = [f"{show(f.path)}:{f.count}" for f in value.files]
        out.append(f"\n{value.total_matches} matching lines in {value.total} files.")
    else:
        out = []
        for f in value.files:
            previous = None
            for line in f.lines:
                if out and (previous is None or line.number != previous + 1):
                    out.append("--")
                sep = ":" if line.match else "-"
                number = f"{line.number}{sep}" if value.line_numbers else ""
                out.append(f"{show(f.path)}{sep}{number}{line.text}")
                previous = line.number
    if value.truncated:
        what = "matching lines" if value.mode == "content" else "files"
        out.append(f"\n(Showing {sum(1 for _ in _entries(value))} of {value.total} {what}; narrow the search "
                   "with path or glob, or raise head_limit.)")  # fmt: skip
    return "\n".join(out)


def _entries(value: GrepValue) -> Iterable[object]:
    if value.mode != "content":
        return value.files
    return [line for f in value.files for line in f.lines if line.match]


def _meta(_args: GrepArgs, value: GrepValue) -> dict[str, Any]:
    return {
        "mode": value.mode,
        "pattern": value.pattern,
        "path": value.root,
        "cwd": value.cwd,
        "total": value.total,
        "truncated": value.truncated,
        "backend": value.backend,
        "files": [
            {
                "path": f.path,
                "count": f.count,
                "lines": [{"number": x.number, "text": x.text} for x in f.lines if x.match],
            }
            for f in value.files
        ],
    }


def grep_tool(*, cwd: str | None = None, backend: Backend = "auto") -> ToolDefinition:
    """The `grep` tool. `backend`: "auto" (ripgrep when on PATH; env ACP_BRIDGE_GREP=python forces
    Python), "ripgrep" or "python". `cwd`: the session cwd for the call card's title (display only)."""

    async def execute(args: GrepArgs, ctx: ToolRunContext) -> GrepValue:
        session = session_cwd(ctx.agent)
        root = resolve(args.path, session) if args.path else session
        if not os.path.exists(root):  # noqa: ASYNC240 - a stat
            raise ToolError(f"Path not found: {display_path(root, session)}.", code="NOT_FOUND")
        # Without a path, every workspace root is searched, the cwd first (each root's hits by path).
        roots = [root]
        if not args.path:
            roots = [r for r in session_roots(ctx.agent) if os.path.isdir(r)] or roots  # noqa: ASYNC240
        mode: Mode = args.output_mode
        after = args.after if args.after is not None else args.context or 0
        collector = _Collector(mode, args.head_limit or DEFAULT_LIMITS[mode], after)
        chosen = backend
        if chosen == "auto":
            chosen = "python" if os.environ.get(BACKEND_ENV) == "python" else "ripgrep"
        rg = shutil.which("rg") if chosen == "ripgrep" else None
        used: Literal["ripgrep", "python"] = "python"
        if rg is not None:
            try:
                for searched in roots:
                    await _rg_search(rg, args, searched, collector)
                used = "ripgrep"
            except _FallBack:
                collector = _Collector(mode, collector.limit, after)
        if used == "python":
            for searched in roots:
                await run_blocking(functools.partial(_python_search, args, searched, collector))
        return GrepValue(
            mode=mode,
            pattern=args.pattern,
            root=root,
            cwd=session,
            files=collector.files,
            total=collector.total,
            total_matches=collector.total_matches,
            truncated=collector.stored < collector.total,
            backend=used,
            line_numbers=args.line_numbers,
        )

    def present_call(args: GrepArgs) -> GenericCallView:
        return GenericCallView(title=_title(args, cwd), kind="search")

    def present_result(args: GrepArgs, result: ToolResult) -> Any:
        files = result.meta.get("files") if isinstance(result.meta, Mapping) else None
        total = meta_field(result.meta, "total", int)
        if result.is_error or not isinstance(files, (list, tuple)) or total is None:
            return failure_card(_title(args, cwd), result)
        mode = meta_field(result.meta, "mode", str)
        matches = tuple(
            SearchFileMatches(
                path=f["path"],
                lines=tuple(SearchLine(number=x["number"], text=x["text"]) for x in f["lines"]),
                count=f["count"] if mode == "count" else None,
            )
            for f in files
        )
        return SearchResultView(
            shape="matches",
            title=_title(args, cwd),
            truncated=bool(meta_field(result.meta, "truncated", bool)),
            total=total,
            matches=matches,
        )

    return define_tool(
        name="grep",
        description=(
            "Search file contents with a regular expression (ripgrep syntax). output_mode "
            '"files_with_matches" (default) lists matching files, "content" shows matching lines (with -n '
            'line numbers and -A/-B/-C context), "count" counts matching lines per file. Filter files with '
            "glob; hidden and .gitignore'd files are skipped. Results are sorted by path."
        ),
        parameters=GrepArgs,
        output=Output(type=GrepValue, render=_render, presentation_meta=_meta),
        execute=execute,
        timeout_ms=120_000,
        concurrency_safe=True,
        present_call=present_call,
        present_result=present_result,
    )


def searched_paths(arguments: Mapping[str, Any], cwd: str) -> tuple[str, ...]:
    """The path a `grep` call with these (unvalidated) arguments searches, absolute, for the permission
    policy to judge: `path` (default `cwd`), as `execute` resolves it. `glob` only filters the files below
    it (ripgrep's `--glob` and `ignore.walk`'s overrides match paths relative to the root), so it cannot
    move the search elsewhere."""
    path = arguments.get("path")
    return (resolve(path, cwd) if isinstance(path, str) and path else cwd,)
