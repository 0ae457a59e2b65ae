"""Descriptor-level disk primitives for `fs_access` and `landing`: where an opened file really is, the
landing rule, a directory opened without following links swapped in, our temporary files' names, and the
removal of the ones a killed writer left behind.

The landing rule (`Landing`, stated in `landing`): where the opened descriptor really is (`real_path_of`:
`/proc/self/fd/N` on Linux, `F_GETPATH` on macOS, else a re-resolved path checked against the
descriptor's device and inode) is compared with what the call may touch: exactly the file the user was
asked about, or, for a call that ran without a question, anywhere inside the roots for a path named there.

Temporary files: `.<name>.acp-bridge-tmp-<pid>-<8 hex>.tmp`, next to the file they replace, so a file left
by a writer killed mid-write is recognisable as ours and as a dead process's (`remove_stale_temps`).

Invariant: no policy beyond the landing rule (roots and approvals are the host's); every descriptor opened
here is closed on every path.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import stat
import sys
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from registry_core import ToolError

from .paths import is_inside_roots, relative_inside

log = logging.getLogger(__name__)

CLOEXEC = getattr(os, "O_CLOEXEC", 0)
TEMP_MARK = "acp-bridge-tmp-"
_TEMP_NAME = re.compile(r"\A\..*\." + re.escape(TEMP_MARK) + r"(?P<pid>[0-9]+)-[0-9a-f]{8}\.tmp\Z", re.S)
_TEMP_STEM_BYTES = 120  # keeps a temporary name well inside NAME_MAX (255 bytes) whatever the file's name

# The stale-temp scan: breadth first from a root, never into these (ours are never written there by a
# model, and they are where trees get huge), at most this many directory entries per root.
SCAN_SKIP = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
                       ".mypy_cache", ".pytest_cache", ".ruff_cache"})  # fmt: skip
MAX_SCAN_ENTRIES = 20_000


# --- where a descriptor is, and the landing rule ----------------------------------------------------


def _kernel_path(fd: int) -> str | None:
    """The path the kernel holds for `fd`, where it tells (Linux `/proc`, macOS `F_GETPATH`)."""
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/self/fd/{fd}")
    if sys.platform == "darwin":
        import fcntl

        with contextlib.suppress(OSError):
            raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), bytes(1024))
            return os.fsdecode(raw.split(b"\0", 1)[0])
    return None


def path_changed(display: str) -> ToolError:
    return ToolError(
        f"{display} changed while it was being opened (a symbolic link appeared on its path); nothing was "
        "read or written. Look at the path (e.g. `ls -l`) before retrying.",
        code="PATH_CHANGED",
    )


def real_path_of(fd: int, opened_as: str, display: str) -> str:
    """Where the open descriptor `fd` (opened by the path `opened_as`) really is. Without a kernel answer,
    the path is resolved again and must still name the very file the descriptor holds."""
    real = _kernel_path(fd)
    if real is not None:
        return real
    real = os.path.realpath(opened_as)
    try:
        same = os.path.samestat(os.stat(real), os.fstat(fd))
    except OSError:
        same = False
    if not same:
        raise path_changed(display)
    return real


def _named_inside(named: str, roots: Sequence[str]) -> bool:
    """Whether `named` is spelled inside a root (or a root's real path), links not followed."""
    normal = [os.path.normpath(r) for r in roots]
    if any(relative_inside(named, r) is not None for r in normal):
        return True
    return any(relative_inside(named, os.path.realpath(r)) is not None for r in normal)


@dataclass(frozen=True, slots=True)
class Landing:
    """Where a file operation on one named path may land (the landing rule).

    `pinned`: the file the path led to when the user was asked about the call (the host's preview step
    pins it): the operation must land exactly there, since that is what was approved. Otherwise `roots`:
    a path named inside them must land inside them (None: no session, no rule)."""

    roots: tuple[str, ...] | None = None
    pinned: str | None = None

    def check(self, named: str, real: str, display: str) -> None:
        """Refuse landing at `real` (where the opened descriptor really is) for the path `named`."""
        if self.pinned is not None:
            if real != self.pinned:
                raise ToolError(
                    f"{display} led to {self.pinned} when the user was asked about this call, and leads to "
                    f"{real} now (a symbolic link on its path changed); nothing was read or written.",
                    code="PATH_CHANGED",
                )
            return
        if self.roots is None or real == named or not _named_inside(named, self.roots):
            return
        if is_inside_roots(real, self.roots):
            return
        raise ToolError(
            f"{display} leads outside the workspace through a symbolic link (to {real}); it was neither read "
            f"nor written. If that file is meant, name it by its own path ({real}): the user is then asked, "
            "as for any file outside the workspace.",
            code="OUTSIDE_WORKSPACE",
        )

    def check_named(self, named: str, display: str) -> None:
        """The rule for a path a host (the editor) opens itself: judged on its links as they are now."""
        if self.pinned is not None or self.roots is not None:
            self.check(named, os.path.realpath(named), display)


# --- directories and temporary files ------------------------------------------------------------------


def open_directory(directory: str, named: str, leaf: str, landing: Landing | None, display: str) -> int:
    """A descriptor of `directory` (absolute, links resolved), creating the missing part of it.

    The deepest existing ancestor is opened, and where `leaf` would land below it is judged by the landing
    rule before anything is created; each missing directory is then created and opened relative to its
    parent's descriptor without following links, so a link swapped in on the way is refused (ELOOP), never
    followed. `named`: the path the model named, for the rule (None: no rule)."""
    missing: list[str] = []
    current = directory
    while True:
        try:
            fd = os.open(current, os.O_RDONLY | os.O_DIRECTORY | CLOEXEC)
            break
        except FileNotFoundError:
            parent = os.path.dirname(current)
            if parent == current:
                raise
            missing.append(os.path.basename(current))
            current = parent
    try:
        if landing is not None:
            real = os.path.join(real_path_of(fd, current, display), *reversed(missing), leaf)
            landing.check(named, real, display)
        for part in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def lstat_at(name: str, dir_fd: int) -> os.stat_result | None:
    """`name` in the directory `dir_fd`, not following a link; None when there is nothing."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def create_temp(name: str, dir_fd: int) -> tuple[int, str]:
    """(descriptor, name) of a new empty temporary file for `name`, in the directory `dir_fd`."""
    stem = os.fsdecode(os.fsencode(name)[:_TEMP_STEM_BYTES])
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC
    for _ in range(100):
        tmp = f".{stem}.{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            return os.open(tmp, flags, 0o600, dir_fd=dir_fd), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", name)


# --- stale temporary files ----------------------------------------------------------------------------


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists, owned by someone else
    return True


def _stale(entry: os.DirEntry[str]) -> bool:
    """One of our temporary files whose writer is dead: our name, a regular file of ours."""
    found = _TEMP_NAME.match(entry.name)
    if found is None or _alive(int(found["pid"])):
        return False
    try:
        info = entry.stat(follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()


def remove_stale_temps(root: str, max_entries: int = MAX_SCAN_ENTRIES) -> int:
    """Remove the temporary files a writer killed mid-write (`kill -9`) left under `root`; returns how
    many. Only files named as ours whose process is gone, and only regular files owned by this user.

    Bounded, since it runs when a session starts: breadth first (the shallow directories, where most
    writes go, first), skipping `SCAN_SKIP` directories and symbolic links, and stopping after
    `max_entries` directory entries. A leftover deeper in a larger tree stays until a later scan reaches
    it; it is inert (a hidden, unreferenced file), never a half-written version of the real file."""
    removed = seen = 0
    pending = deque([root])
    while pending and seen < max_entries:
        directory = pending.popleft()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    seen += 1
                    if seen > max_entries:
                        break
                    if entry.name.endswith(".tmp") and _stale(entry):
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)
                            removed += 1
                    elif entry.name not in SCAN_SKIP and entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue  # unreadable or gone: nothing of ours to find there
    if removed:
        log.info("removed %d stale temporary file(s) under %s", removed, root)
    return removed


def remove_stale_temps_in(roots: Iterable[str]) -> int:
    """`remove_stale_temps` of each root; never raises (a failed clean-up must not stop a session)."""
    total = 0
    for root in roots:
        try:
            total += remove_stale_temps(root)
        except Exception:  # housekeeping only: never stops a session
            log.warning("clean-up of stale temporary files under %s failed", root, exc_info=True)
    return total


_scanned: set[str] = set()  # roots this process has cleaned (or is cleaning) already
_scanned_lock = threading.Lock()


def remove_stale_temps_soon(roots: Iterable[str]) -> threading.Thread | None:
    """Run `remove_stale_temps_in` on a daemon thread for the roots this process has not cleaned yet (the
    first session in a workspace pays for the scan, the next ones nothing): a session starts without
    waiting for it, and it only removes dead writers' files, never those of a write this process makes."""
    with _scanned_lock:
        fresh = tuple(root for root in dict.fromkeys(roots) if root not in _scanned)
        _scanned.update(fresh)
    if not fresh:
        return None
    thread = threading.Thread(
        target=remove_stale_temps_in, args=(fresh,), name="stale-temp-cleanup", daemon=True
    )
    thread.start()
    return thread
