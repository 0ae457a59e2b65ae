"""The landing rule for the file tools: which file a call's operation on a path may really open.

The host judges a path, symlinks resolved, before the call runs; a link can be swapped in between that
decision and the file operation. The rule (`disk.Landing`), checked on what was really opened, whenever
the link that changes it appeared:
- a call the user was asked about lands exactly on the file its path led to when the question was asked:
  the host's preview step (`preview_call`, awaited right before asking) pins it (`pin_landing`); any
  other file now is refused (PATH_CHANGED), since the question was about that one;
- a call that ran without a question (a mode or rule allowed it a moment ago): a path named inside the
  session's roots must land inside them (a link that leads out is refused, OUTSIDE_WORKSPACE: the model
  can name the target by its own path, which the policy then asks about); links that stay inside
  (`CLAUDE.md -> AGENTS.md`) and paths named outside (`/tmp` may be a link) are followed.
"Really opened": a read opens the file, then asks the descriptor where it is (`open_regular`; `disk`
finds the path: `/proc/self/fd/N`, macOS `F_GETPATH`); a write opens the target's directory the same way
before creating anything (`fs_access.atomic_write`, with `disk`'s primitives). Through the editor's
service the editor opens the file itself: the rule is then checked on the path's links just before the
request (`Landing.check_named`).

`landing_of(execution, path)` is the rule for one call (its pin, else its session's roots);
`roots_of(agent)` the roots alone, for work without a call.

Must not: decide policy beyond this rule (roots and approvals are the host's), or keep a finished call's
pins (they are keyed weakly by its token); pins are touched on the event loop only.
"""

from __future__ import annotations

import io
import os
import stat
import weakref

from registry_core import Agent, ToolExecution, ToolExecutionToken

from .disk import CLOEXEC, Landing, real_path_of
from .file_errors import is_directory, not_regular
from .paths import session_roots


def roots_of(agent: Agent | None) -> tuple[str, ...] | None:
    """The roots the landing rule holds a tool to: the session's; None without a session."""
    return session_roots(agent) if agent is not None else None


# What the preview step pinned, per call: the named path → the real file it led to when the user was asked.
# Keyed by the call's token, so a finished call's pins go with it; touched on the event loop only.
_PINNED: weakref.WeakKeyDictionary[ToolExecutionToken, dict[str, str]] = weakref.WeakKeyDictionary()


def pin_landing(execution: ToolExecution, path: str) -> None:
    """Pin the file `path` leads to now as the one the user is asked about for this call (a tool's
    `preview_call` does, which the host awaits right before asking): the body must then land there."""
    _PINNED.setdefault(execution.token, {})[path] = os.path.realpath(path)


def landing_of(execution: ToolExecution | None, path: str) -> Landing:
    """Where a call's file operation on `path` may land: the pinned file, or inside the session's roots."""
    if execution is None:
        return Landing()
    # Nothing is pinned unless a preview ran (an asked call): most calls skip the weak look-up.
    pinned = _PINNED.get(execution.token, {}).get(path) if _PINNED else None
    return Landing(roots_of(execution.agent), pinned)


def open_regular(
    path: str, display: str, landing: Landing | None = None
) -> tuple[io.BufferedReader, os.stat_result]:
    """Open a regular file for reading; ToolError for a directory, a device or a pipe, and for a file the
    `landing` rule refuses (judged on the opened descriptor).

    O_NONBLOCK: opening a FIFO must not wait for a writer (the thread would hang past any timeout); it
    has no effect on regular files.
    """
    fd, info = open_regular_fd(path, display, landing)
    return open(fd, "rb"), info  # `os.fdopen` is a Python wrapper around the same call


def open_regular_fd(path: str, display: str, landing: Landing | None = None) -> tuple[int, os.stat_result]:
    """`open_regular`, the same checks, as a bare descriptor the caller closes: for a small file read
    whole at once (`read_to_end`), without the buffered file object, whose opening stats the descriptor
    again and asks whether it is a terminal."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise is_directory(display) if stat.S_ISDIR(info.st_mode) else not_regular(display)
        if landing is not None:
            landing.check(path, real_path_of(fd, path, display), display)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def read_to_end(fd: int, size: int) -> bytes:
    """The bytes from `fd`'s position to the end of the file, as a file object's `read()` returns them;
    `size`: the file's size when opened (one read takes it all, one more finds the end; a file that grew
    meanwhile is read on)."""
    chunks = []
    want = size + 1
    while chunk := os.read(fd, want):
        chunks.append(chunk)
        want = 1 << 16
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
