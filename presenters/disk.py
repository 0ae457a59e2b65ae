"""Descriptor-level disk primitives for `fs_access`: where an opened file really is, the landing rule, a
directory opened without following links swapped in, our temporary files' names, and the removal of the
ones a killed writer left behind.

The landing rule (`check_landing`): a path named inside the session's roots must land inside them. The
path the model named (made absolute, links not resolved) is compared with where the opened descriptor
really is (`real_path_of`: `/proc/self/fd/N` on Linux, `F_GETPATH` on macOS, else a re-resolved path
checked against the descriptor's device and inode). Links that lead inside the roots are followed; a path
named outside the roots is the user's approved choice and is followed as the system resolves it.

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


def check_landing(named: str, real: str, roots: Sequence[str] | None, display: str) -> None:
    """Refuse (OUTSIDE_WORKSPACE) a path named inside `roots` whose file really is `real`, outside them: a
    symbolic link leads out, one the permission decision may never have seen (swapped in after it).
    `roots` None: no session, no rule."""
    if roots is None or real == named or not _named_inside(named, roots):
        return
    if is_inside_roots(real, roots):
        return
    raise ToolError(
        f"{display} leads outside the workspace through a symbolic link (to {real}); it was neither read "
        f"nor written. If that file is meant, name it by its own path ({real}): the user is then asked, as "
        "for any file outside the workspace.",
        code="OUTSIDE_WORKSPACE",
    )


def check_named(named: str, roots: Sequence[str] | None, display: str) -> None:
    """The landing rule for a path a host (the editor) opens itself: judged on the links as they are now."""
    if roots is not None:
        check_landing(named, os.path.realpath(named), roots, display)


# --- directories and temporary files ------------------------------------------------------------------


def open_directory(directory: str, named: str, leaf: str, roots: Sequence[str] | None, display: str) -> int:
    """A descriptor of `directory` (absolute, links resolved), creating the missing part of it.

    The deepest existing ancestor is opened, and where `leaf` would land below it is judged by the landing
    rule before anything is created; each missing directory is then created and opened relative to its
    parent's descriptor without following links, so a link swapped in on the way is refused (ELOOP), never
    followed. `named`: the path the model named, for the rule."""
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
        if roots is not None:
            landing = os.path.join(real_path_of(fd, current, display), *reversed(missing), leaf)
            check_landing(named, landing, roots, display)
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


def remove_stale_temps_soon(roots: Iterable[str]) -> threading.Thread:
    """Run `remove_stale_temps_in(roots)` on a daemon thread: a session starts without waiting for it, and
    it can only remove dead writers' files, never those of a write this process is making."""
    thread = threading.Thread(
        target=remove_stale_temps_in, args=(tuple(roots),), name="stale-temp-cleanup", daemon=True
    )
    thread.start()
    return thread
