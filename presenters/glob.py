"""`glob`: find files by name pattern, newest first, and its `search` card (shape "paths").

- Patterns: `*`, `?`, `[...]`, `{a,b}` and `**` (any number of directories), matched against the path
  relative to `path` (default: the working directory). A literal leading part ("src/**/*.ts") is where the
  walk starts; without `**` the walk stops at the pattern's depth.
- The walk is `ignore.walk`'s set of files: .gitignore'd files and hidden files are skipped, unless the
  pattern names a hidden segment (".github/**/*.yml"); symbolic links are not followed.
- Results: absolute paths, most recently modified first (ties by path), at most 100, with `truncated`
  and the true `total` of the files that match.

Two backends, one result (as `grep`'s): ripgrep lists the files (`ripgrep.files`, in parallel, told the
names the pattern's last segment allows when it is simple, so it hands back little more than the
matches) when `rg` is on PATH; else `ignore.walk`. Either way the pattern is then matched here, and every
match is stat'ed for its modification time (the newest 100 need every match's): with ripgrep, in pieces
of its listing handed to a few threads as it comes (a stat is mostly kernel time, the GIL released), so
the stat-ing runs alongside ripgrep's walk; the newest 100 are then picked (`heapq.nsmallest`), never a
full sort.

presentation_meta: {"pattern", "path" (abs root), "cwd", "paths" (abs), "total", "truncated"}.

Must not: read file contents, or follow symlinks out of the tree.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import heapq
import os
import shutil
import threading
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from registry_core import (
    GenericCallView,
    Output,
    SearchResultView,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from . import ripgrep
from .cards import call_paths, failure_card, meta_field
from .ignore import compile_glob, expand_braces, reincluded, walk
from .paths import display_path, resolve, session_cwd, session_roots
from .runtime import check, run_blocking

Backend = Literal["auto", "ripgrep", "python"]
MAX_RESULTS = 100
BACKEND_ENV = "ACP_BRIDGE_GREP"  # "python" forces the pure-Python walk, as for grep
_GLOB_CHARS = frozenset("*?[{")
# (-modification time, absolute path) of each match: newest first, then by path, as tuples order.
Found = list[tuple[float, str]]
# What a name glob handed to ripgrep may not hold (see `_names`); `?` is one byte to ripgrep, one character
# to `compile_glob`.
_NOT_FOR_RG = frozenset("?[]{}\\,:")


class GlobArgs(BaseModel):
    pattern: str = Field(min_length=1, description='Glob pattern, e.g. "**/*.py" or "src/**/*.{ts,tsx}".')
    path: str | None = Field(
        default=None, description="Directory to search in (default: every workspace root)."
    )


class GlobValue(BaseModel):
    pattern: str
    root: str
    cwd: str
    paths: list[str]
    total: int
    truncated: bool


def _split(root: str, pattern: str) -> tuple[str, str]:
    """(directory to walk, pattern relative to it): the pattern's literal leading segments join the root."""
    segments = pattern.split("/")
    literal = 0
    while literal < len(segments) - 1 and not (_GLOB_CHARS & set(segments[literal])):
        literal += 1
    # An absolute prefix replaces the root (os.path.join keeps the last absolute part).
    start = os.path.normpath(os.path.join(root, "/".join(segments[:literal]))) if literal else root
    return start, "/".join(segments[literal:])


class _Walk:
    """One root's search: where it starts, the pattern below it, and how the files are listed."""

    def __init__(self, start: str, rest: str) -> None:
        self.start = start
        self.rest = rest
        self.regex = compile_glob(rest, anchored=True)
        segments = rest.split("/")
        self.hidden = any(s.startswith(".") and s not in (".", "..") for s in segments)
        self.depth = None if any("**" in s for s in segments) else len(segments)
        self.skip = len(start.rstrip("/")) + 1  # POSIX paths: the relative path starts there

    def matches(self, paths: list[str], stop: threading.Event, *, matched: bool = False) -> Found:
        """(-mtime, path) of each of `paths` (absolute, below `start`) that the pattern matches (all of
        them when `matched`)."""
        if not matched:
            match, skip = self.regex.match, self.skip
            paths = [path for path in paths if match(path, skip)]
        found: Found = []
        stat = os.stat
        for at in range(0, len(paths), 1024):
            check(stop)
            some = paths[at : at + 1024]
            try:
                found += [(-stat(path).st_mtime, path) for path in some]
            except OSError:  # one went away meanwhile: the others, one at a time
                for path in some:
                    try:
                        found.append((-stat(path).st_mtime, path))
                    except OSError:
                        continue
        return found


def _literal(start: str, rest: str, _stop: threading.Event) -> Found:
    path = os.path.join(start, rest)
    return [(-os.stat(path).st_mtime, path)] if os.path.isfile(path) else []


def _find_python(walker: _Walk, stop: threading.Event) -> Found:
    files = walk(walker.start, None, stop, hidden=walker.hidden, max_depth=walker.depth)
    return walker.matches(list(files), stop)


def _names(rest: str) -> tuple[tuple[str, ...], bool]:
    """Name globs a file must match for `rest` to match it (each of the pattern's brace variants ends
    with one), when all are simple enough that ripgrep reads them as `compile_glob` does: `*` and literal
    characters; empty: no such filter (a trailing `**`, `?`, a class, an escape). And whether a name
    that matches is all the pattern asks ("*.py" at its depth, "**/*.py" at any)."""
    names, exact = [], True
    for variant in expand_braces(rest):
        head, _, name = variant.rpartition("/")
        if not name or "**" in name or _NOT_FOR_RG & set(name) or name == "*":
            return (), False
        names.append(name)
        exact = exact and head in ("", "**")
    return tuple(dict.fromkeys(names)), exact


def _found_rg(
    walker: _Walk, names: tuple[str, ...], exact: bool, paths: list[str], stop: threading.Event
) -> Found:
    """The matches among ripgrep's listing. A name filter lets a hidden file through as if re-included
    (ripgrep's file types): such a file stays only when an ignore file really re-includes it."""
    if names and not walker.hidden and "/." in "\0".join(paths):  # most pieces hold no dot-name at all
        skip = walker.skip
        paths = [
            p for p in paths
            if p.find("/.", skip - 1) < 0 or not p.startswith(".", p.rindex("/") + 1)
            or reincluded(p[skip:], walker.start)
        ]  # fmt: skip
    return walker.matches(paths, stop, matched=exact)


# A stat per match is most of a big glob's time (in the kernel mostly, with the GIL released): a few
# threads stat pieces of ripgrep's listing while ripgrep goes on walking. One pool for every call.
# More threads than a small machine's cores: while one holds the GIL between two stats, the others are in
# the kernel (1 to 4 measured on 2 cores under load: 4 was best).
STAT_THREADS = 4
STAT_PIECE = 1024  # paths a task: small enough for the stat-ing to follow the walk closely
_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _stat_pool() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(STAT_THREADS, thread_name_prefix="glob-stat")
        return _pool


async def _find_rg(walker: _Walk, rg: str) -> Found:
    """The matches, listed by ripgrep and stat'ed as they come. Raises `ripgrep.Unavailable`."""
    names, exact = _names(walker.rest)
    pool = _stat_pool()
    stop = threading.Event()
    pieces: list[concurrent.futures.Future[Found]] = []

    def batch(paths: list[str]) -> None:  # in ripgrep's reading thread, while ripgrep goes on
        if not stop.is_set():
            pieces.extend(
                pool.submit(_found_rg, walker, names, exact, paths[at : at + STAT_PIECE], stop)
                for at in range(0, len(paths), STAT_PIECE)
            )

    try:
        await ripgrep.files(
            rg, walker.start, batch, hidden=walker.hidden, max_depth=walker.depth, names=names
        )
        # Awaited together: this call resumes once, not once a piece.
        found: Found = []
        for stated in await asyncio.gather(*map(asyncio.wrap_future, pieces)):
            found += stated
        return found
    finally:  # done, or cancelled: what is still queued ends at once
        stop.set()
        for piece in pieces:
            piece.cancel()


async def _find(walker: _Walk, rg: str | None) -> Found:
    if rg is not None:
        with contextlib.suppress(ripgrep.Unavailable):
            return await _find_rg(walker, rg)
    return await run_blocking(functools.partial(_find_python, walker))


def _title(args: GlobArgs, cwd: str | None) -> str:
    where = f" in {call_paths(args.path, cwd)[0]}" if args.path else ""
    return f'Find "{args.pattern}"{where}'


def _render(_args: GlobArgs, value: GlobValue) -> str:
    if not value.paths:
        return f"No files match {value.pattern!r} in {display_path(value.root, value.cwd)}."
    lines = [display_path(p, value.cwd) for p in value.paths]
    if value.truncated:
        lines.append(
            f"\n(Showing the {len(value.paths)} most recently modified of {value.total} files; use a more "
            "specific pattern or path.)"
        )
    return "\n".join(lines)


def _meta(_args: GlobArgs, value: GlobValue) -> dict[str, Any]:
    return {
        "pattern": value.pattern,
        "path": value.root,
        "cwd": value.cwd,
        "paths": value.paths,
        "total": value.total,
        "truncated": value.truncated,
    }


def glob_tool(*, cwd: str | None = None, backend: Backend = "auto") -> ToolDefinition:
    """The `glob` tool. `backend`: "auto" (ripgrep when on PATH; env ACP_BRIDGE_GREP=python forces the
    Python walk), "ripgrep" or "python". `cwd`: the session cwd for the call card's title (display
    only)."""

    async def execute(args: GlobArgs, ctx: ToolRunContext) -> GlobValue:
        session = session_cwd(ctx.agent)
        root = resolve(args.path, session) if args.path else session
        if not os.path.isdir(root):  # noqa: ASYNC240 - a stat
            raise ToolError(f"Not a directory: {display_path(root, session)}.", code="NOT_FOUND")
        # Without a path, every workspace root is searched (an absolute pattern only once).
        roots = [root] if args.path or args.pattern.startswith("/") else list(session_roots(ctx.agent))
        chosen = backend
        if chosen == "auto":
            chosen = "python" if os.environ.get(BACKEND_ENV) == "python" else "ripgrep"
        rg = shutil.which("rg") if chosen == "ripgrep" else None
        found: Found = []
        for searched in dict.fromkeys(roots):
            start, rest = _split(searched, args.pattern)
            if not os.path.isdir(start):  # noqa: ASYNC240 - a stat
                continue
            if not (_GLOB_CHARS & set(rest)):  # a literal path: it exists or not
                found += await run_blocking(functools.partial(_literal, start, rest))
            else:
                found += await _find(_Walk(start, rest), rg)
        newest = heapq.nsmallest(MAX_RESULTS, found)
        return GlobValue(
            pattern=args.pattern,
            root=root,
            cwd=session,
            paths=[path for _, path in newest],
            total=len(found),
            truncated=len(found) > MAX_RESULTS,
        )

    def present_call(args: GlobArgs) -> GenericCallView:
        return GenericCallView(title=_title(args, cwd), kind="search")

    def present_result(args: GlobArgs, result: ToolResult) -> Any:
        paths = result.meta.get("paths") if isinstance(result.meta, Mapping) else None
        total = meta_field(result.meta, "total", int)
        if result.is_error or not isinstance(paths, (list, tuple)) or total is None:
            return failure_card(_title(args, cwd), result)
        return SearchResultView(
            shape="paths",
            title=_title(args, cwd),
            truncated=bool(meta_field(result.meta, "truncated", bool)),
            total=total,
            paths=tuple(str(p) for p in paths),
        )

    return define_tool(
        name="glob",
        description=(
            'Find files by name pattern ("**/*.py", "src/**/*.{ts,tsx}"), relative to path (default: the '
            "working directory). Returns paths, most recently modified first, at most 100. .gitignore'd "
            'files are skipped, and hidden ones unless the pattern names a hidden segment (".github/**").'
        ),
        parameters=GlobArgs,
        output=Output(type=GlobValue, render=_render, presentation_meta=_meta),
        execute=execute,
        timeout_ms=60_000,
        concurrency_safe=True,
        present_call=present_call,
        present_result=present_result,
    )


def searched_paths(arguments: Mapping[str, Any], cwd: str) -> tuple[str, ...]:
    """Every path a `glob` call with these (unvalidated) arguments reads, absolute, for the permission
    policy to judge: the `path` directory (default `cwd`) first, then where the pattern's literal leading
    segments move the walk (`../other/*`, `/etc/*.conf`, `/etc/**`), and the file a pattern without
    wildcards names. Computed as `execute` computes them."""
    path = arguments.get("path")
    root = resolve(path, cwd) if isinstance(path, str) and path else cwd
    pattern = arguments.get("pattern")
    if not isinstance(pattern, str) or not pattern:
        return (root,)
    start, rest = _split(root, pattern)
    paths: tuple[str, ...] = (root,) if start == root else (root, start)
    if not (_GLOB_CHARS & set(rest)):
        paths += (os.path.join(start, rest),)
    return paths
