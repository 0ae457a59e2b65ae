"""`grep`: search file contents by regular expression, and its `search` card (shape "matches").

Parameters follow Claude Code's Grep (`pattern`, `path`, `glob`, `output_mode`, `-i`, `-n`, `-A`, `-B`,
`-C`, `head_limit`), so recorded sessions replay unchanged.

Two backends, one result: ripgrep (`ripgrep.py`: the process and its output) when `rg` is on PATH, else
the pure-Python search over the same files (`python_search.py`: `ignore.walk` mirrors ripgrep's
hidden-file and ignore-file rules). ripgrep runs with `--no-config
--no-ignore-global` so neither a user's config nor global gitignore makes the two differ. A pattern
ripgrep's regex engine rejects but Python's accepts (look-around, backreferences) is searched by the
Python backend. Known remaining differences: regex dialect corner cases, and a NUL byte past a file's
first 64 KiB (ripgrep reports matches before it; Python stops at the line before it). What is kept is
`search_results.Collector`'s (the backends' sink): the first entries in path order, whatever order the
files arrive in, and the true totals. This module is the tool: its schema, the text and the cards.

Totals are the search's, never what is shown: "18,316 matching lines in 6,136 files; showing the first 200
in 56 files" (content mode, truncated), the card's "18,316 matches in 6,136 files; showing the first 200
matches in 56 files".

presentation_meta: {"mode", "pattern", "path" (abs search root), "cwd", "total" (matching lines in
content mode, else files), "total_files" (files with matches), "truncated", "backend": "ripgrep" |
"python", "files": [{"path" (abs), "count", "lines": [{"number", "text"}]}]}; `lines` holds matching
lines only (content mode), `count` the file's matching lines.

Must not: keep more than the capped entries, or fail on a long line (a line of any length shows cut, at
`MAX_LINE_CHARS`; the backends' own bounds are in their docstrings).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable, Mapping
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

from . import python_search, ripgrep
from .cards import call_paths, failure_card, meta_field
from .paths import display_path, resolve, session_cwd, session_roots
from .runtime import run_blocking
from .search_results import Collector, Mode

Backend = Literal["auto", "ripgrep", "python"]
DEFAULT_LIMITS: dict[str, int] = {"content": 200, "files_with_matches": 200, "count": 200}
MAX_LINE_CHARS = 1000
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
    total_files: int = 0  # 0 in values logged before it was: then unknown
    truncated: bool
    backend: Literal["ripgrep", "python"]
    line_numbers: bool


def _cut(text: str) -> str:
    text = text.removesuffix("\n").removesuffix("\r")
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + " … [line cut]"


def _invalid_regex(pattern: str, detail: str) -> ToolError:
    return ToolError(
        f"Invalid regular expression {pattern!r}: {detail.strip()}. Escape special characters such as "
        "( ) [ ] { } . * + ? | with a backslash to search for them literally.",
        code="INVALID_REGEX",
    )


async def _search_ripgrep(rg: str, query: ripgrep.Query, roots: list[str], collector: Collector) -> bool:
    """Search `roots` with ripgrep into `collector`. False: the Python backend must search instead (rg
    would not start, or rejected a pattern Python's engine takes: look-around, backreferences)."""
    for index, searched in enumerate(roots):
        collector.root = index
        try:
            # One character more than a line shows: a long line's start comes back long enough to show cut.
            await ripgrep.search(
                rg, query, searched, collector, line_chars=MAX_LINE_CHARS + 1, keep=collector.limit
            )
        except ripgrep.Unavailable:
            return False
        except ripgrep.PatternRejected as rejected:
            if collector.total:
                continue  # ripgrep took this very pattern for an earlier root: not the pattern's fault
            try:
                re.compile(query.pattern)
            except re.error:
                raise _invalid_regex(query.pattern, rejected.detail) from None
            return False
    return True


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
        narrow = "the search with path or glob, or raise head_limit."
        if value.mode == "content":
            shown = sum(1 for f in value.files for line in f.lines if line.match)
            out.append(f"\n({value.total:,} matching lines in {_files(value.total_files)}; showing the first "
                       f"{shown:,} in {_files(len(value.files))}. Narrow {narrow})")  # fmt: skip
        else:
            out.append(f"\n(Showing {len(value.files)} of {value.total} files; narrow {narrow})")
    return "\n".join(out)


def _files(n: int) -> str:
    return f"{n:,} file{'' if n == 1 else 's'}"


def _meta(_args: GrepArgs, value: GrepValue) -> dict[str, Any]:
    return {
        "mode": value.mode,
        "pattern": value.pattern,
        "path": value.root,
        "cwd": value.cwd,
        "total": value.total,
        "total_files": value.total_files,
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
        query = ripgrep.Query(
            pattern=args.pattern,
            mode=mode,
            case_insensitive=args.case_insensitive,
            glob=args.glob,
            context=args.context,
            before=args.before,
            after=args.after,
        )
        collector = Collector(mode, args.head_limit or DEFAULT_LIMITS[mode], query.lines_after)
        chosen = backend
        if chosen == "auto":
            chosen = "python" if os.environ.get(BACKEND_ENV) == "python" else "ripgrep"
        rg = shutil.which("rg") if chosen == "ripgrep" else None
        used: Literal["ripgrep", "python"] = "python"
        if rg is not None:
            if await _search_ripgrep(rg, query, roots, collector):
                used = "ripgrep"
            else:
                collector = Collector(mode, collector.limit, collector.after)
        if used == "python":
            for index, searched in enumerate(roots):
                collector.root = index
                try:
                    await run_blocking(functools.partial(python_search.search, query, searched, collector))
                except python_search.InvalidPattern as exc:
                    raise _invalid_regex(args.pattern, str(exc)) from None
        shown = collector.shown()
        return GrepValue(
            mode=mode,
            pattern=args.pattern,
            root=root,
            cwd=session,
            files=[
                GrepFile(
                    path=f.path,
                    count=f.count,
                    lines=[GrepLine(number=n, text=_cut(text), match=m) for n, text, m in f.lines],
                )
                for f in shown
            ],
            total=collector.total,
            total_matches=collector.total_matches,
            total_files=collector.total_files,
            truncated=collector.shown_entries(shown) < collector.total,
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
            files=meta_field(result.meta, "total_files", int) if mode == "content" else None,
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
