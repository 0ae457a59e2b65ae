"""The bridge as the keeper of what its tools start: no process and no temporary file outlives its owner.

- `become_subreaper()` (start-up, Linux): the bridge becomes a child subreaper (prctl(2),
  `PR_SET_CHILD_SUBREAPER`), so a command's orphans (`setsid`, `nohup`, `&`, double-forked daemons) are
  re-parented to the bridge instead of PID 1: they stay its descendants, where they can be found,
  attributed (`presenters.process_tree`: the command's session and the token in its environment) and
  reaped. Elsewhere it does nothing.
- `SessionResources`, one per session: its `ProcessScope` (what the session's commands left running in
  the background), its `BackgroundCommands` (what `bash` runs with `run_in_background`) and its
  `ScratchDir` (the full output of long commands), given to the tools through `agent.services`.
  `close()` stops the background commands and the processes and deletes the directory: on
  `session/close` and when the bridge shuts down.
- `release_all()`, the last thing before the process exits, on every path (stdin EOF, SIGTERM, SIGHUP,
  the client gone, an exception): kills every descendant still running (with the subreaper, every
  process a tool ever started is one, even one that cleared its environment and left its session) and
  deletes the bridge's scratch root, which holds every session's directory.

Who is attributed what: a call's processes stop with the call when it is cancelled or times out; what a
call that ended normally left in the background stops with its session; everything stops with the bridge.

Must not: signal anything but our own descendants; reap a child asyncio is waiting for (see
`presenters.process_tree`).
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import defaultdict

from presenters.background import BACKGROUND_SERVICE, BackgroundCommands
from presenters.process_tree import (
    KILL_GRACE_S,
    PROCESSES_SERVICE,
    Proc,
    ProcessScope,
    all_processes,
    read_proc,
)
from presenters.runtime import SCRATCH_SERVICE, ScratchDir

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
EXIT_GRACE_S = 0.2  # at exit: SIGTERM → SIGKILL for whatever no session stopped

_scratch_root: str | None = None


def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); False where that is not possible."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # only here: ~2 ms of import, on the spawn → initialize path

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    except (OSError, AttributeError) as exc:
        log.warning("cannot adopt orphaned tool processes (PR_SET_CHILD_SUBREAPER): %s", exc)
        return False
    return True


def scratch_root() -> str:
    """The bridge's private temporary directory (made on first use), parent of every session's."""
    global _scratch_root
    if _scratch_root is None or not os.path.isdir(_scratch_root):
        _scratch_root = tempfile.mkdtemp(prefix="acp-bridge-")
    return _scratch_root


class SessionResources:
    """A session's background processes and scratch directory, handed to its tools as services."""

    def __init__(self) -> None:
        self.processes = ProcessScope()
        self.background = BackgroundCommands()
        self.scratch = ScratchDir(parent=scratch_root, prefix="session-")

    @property
    def services(self) -> dict[str, object]:
        return {
            PROCESSES_SERVICE: self.processes,
            BACKGROUND_SERVICE: self.background,
            SCRATCH_SERVICE: self.scratch,
        }

    async def close(self, grace: float = KILL_GRACE_S) -> None:
        """Stop the session's background commands (each end reported to its watcher) and what its commands
        left running, then delete its scratch directory (a path the model was given stops existing with
        the session)."""
        try:
            try:
                await self.background.stop_all(grace=grace)
            finally:
                await self.processes.stop(grace)
        finally:
            self.scratch.remove()


def _descendants() -> list[Proc]:
    """Every running descendant of this process (one scan of /proc)."""
    children: defaultdict[int, list[Proc]] = defaultdict(list)
    for proc in all_processes():
        children[proc.ppid].append(proc)
    found: list[Proc] = []
    stack = [os.getpid()]
    while stack:
        for child in children.pop(stack.pop(), ()):
            found.append(child)
            stack.append(child.pid)
    return [p for p in found if not p.zombie]


def _signal_each(procs: list[Proc], sig: int) -> None:
    for proc in procs:
        current = read_proc(proc.pid)
        if current is not None and current.start == proc.start and not current.zombie:
            try:
                os.kill(proc.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def kill_descendants(grace: float = EXIT_GRACE_S, within: float = 0.5) -> int:
    """SIGTERM every running descendant, SIGKILL those still running after `grace` s, until none runs
    (at most `within` s more: a killed parent's children are re-parented to us and killed next round).
    Returns how many were found at first. Synchronous: it runs after the event loop has closed."""
    found = _descendants()
    if not found:
        return 0
    log.info("stopping %d leftover tool process(es)", len(found))
    _signal_each(found, signal.SIGTERM)
    deadline = time.monotonic() + grace
    left = found
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = _descendants()
    deadline = time.monotonic() + within
    while left and time.monotonic() < deadline:
        _signal_each(left, signal.SIGKILL)
        time.sleep(0.005)
        left = _descendants()
    return len(found)


def release_all() -> None:
    """At exit, on every path: kill what is left of the tools' processes and delete the scratch root."""
    global _scratch_root
    try:
        kill_descendants()
    except Exception:  # exiting anyway: never let cleanup mask the exit status
        log.exception("stopping leftover tool processes failed")
    root, _scratch_root = _scratch_root, None
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)
