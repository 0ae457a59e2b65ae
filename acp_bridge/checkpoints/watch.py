"""What changed under a root since the last look, told by the kernel (Linux inotify), so a snapshot of a big
tree where one file changed need not walk the tree.

`TreeWatch.start(root, skip_dirs)` watches every directory of the root but `.git`, nested repositories,
symbolic links and the directories given (the ones git ignores), or returns None: not Linux, no inotify
instance or watch left (`fs.inotify.max_user_*`), or more directories than `MAX_WATCHED_DIRS` or a quarter
of the user's watch limit (editors and other tools need theirs). Nothing runs in the background: the
kernel queues the events and `changed()` drains them when a snapshot asks.

`changed()` answers the paths (relative, `/`-separated; a directory stands for everything under it) that
may have changed since the last call, or None when the watch cannot tell and the caller must look at the
whole tree: the kernel's queue overflowed, a directory was moved or the root itself went, a `.gitignore`
changed (what is recorded changes with it), or too many paths changed to name them. After None the watch
is spent: the caller starts a new one before it looks (so nothing that happens during the look is lost).

A directory created under the root is watched at once, then walked: a file made in it before its watch
existed is found by the walk's caller, which looks at the directory's path as a whole.

Must not: miss a change made after `start` returned (every case it cannot follow answers None), or
follow a symbolic link out of the root.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection

from acp_bridge.checkpoints.inotify import Inotify, available

log = logging.getLogger(__name__)

MAX_WATCHED_DIRS = 50_000
# More changed paths than this in one look: the caller's whole-tree look is as cheap as naming them.
MAX_NAMED_PATHS = 2_000

# inotify(7): the events that mean a directory's entries or a file's content or mode changed.
_MODIFY, _ATTRIB, _MOVED_FROM, _MOVED_TO = 0x2, 0x4, 0x40, 0x80
_CREATE, _DELETE, _DELETE_SELF, _MOVE_SELF = 0x100, 0x200, 0x400, 0x800
_Q_OVERFLOW, _IGNORED, _ISDIR = 0x4000, 0x8000, 0x40000000
_ONLYDIR, _DONT_FOLLOW, _EXCL_UNLINK = 0x01000000, 0x02000000, 0x04000000
_MASK = (
    _MODIFY | _ATTRIB | _MOVED_FROM | _MOVED_TO | _CREATE | _DELETE | _DELETE_SELF | _MOVE_SELF
    | _ONLYDIR | _DONT_FOLLOW | _EXCL_UNLINK
)  # fmt: skip


class _Spent(Exception):
    """The watch cannot follow any more: the caller must look at the whole tree."""


def _inotify() -> Inotify | None:
    """A non-blocking inotify instance, or None where there is none (not Linux)."""
    return Inotify() if available() else None


def _watch_limit() -> int:
    try:
        with open("/proc/sys/fs/inotify/max_user_watches", encoding="ascii") as handle:
            user_limit = int(handle.read().strip())
    except (OSError, ValueError):
        user_limit = 8192
    return min(MAX_WATCHED_DIRS, user_limit // 4)


class TreeWatch:
    """The inotify watch of one root (see the module docstring). Not thread-safe: its store's lock
    serialises the callers."""

    def __init__(self, root: str, notify: Inotify, limit: int) -> None:
        self.root = root
        self._notify = notify
        self._limit = limit
        self._dirs: dict[int, str] = {}  # watch descriptor → directory, relative ("" for the root)

    @classmethod
    def start(cls, root: str, skip_dirs: Collection[str] = ()) -> TreeWatch | None:
        """Watch `root` (see the module docstring); `skip_dirs`: relative directories not to watch."""
        try:
            notify = _inotify()
        except OSError as exc:
            log.debug("no inotify instance for %s: %s", root, exc)
            return None
        if notify is None:
            return None
        watch = cls(root, notify, _watch_limit())
        try:
            watch._add_tree("", frozenset(s.rstrip("/") for s in skip_dirs))
        except (_Spent, OSError) as exc:
            log.info("changes under %s are found by walking the tree: %s", root, exc or "too many folders")
            watch.close()
            return None
        return watch

    @property
    def watched_dirs(self) -> int:
        return len(self._dirs)

    def close(self) -> None:
        self._notify.close()
        self._dirs.clear()

    def _add_tree(self, top: str, skip: Collection[str] = ()) -> None:
        """Watch `top` (relative) and every directory below it, each watched before it is listed."""
        pending = [top]
        while pending:
            rel = pending.pop()
            full = os.path.join(self.root, rel) if rel else self.root
            if len(self._dirs) >= self._limit:
                raise _Spent(f"more than {self._limit} folders")
            try:
                wd = self._notify.add_watch(full, _MASK)
            except FileNotFoundError:
                continue  # gone already: its parent's event says so
            except NotADirectoryError:
                continue
            try:
                entries = list(os.scandir(full))
            except (FileNotFoundError, NotADirectoryError):
                entries = []
            if rel and any(e.name == ".git" for e in entries):
                self._notify.rm_watch(wd)  # a nested repository: left out of snapshots as a whole
                continue
            self._dirs[wd] = rel
            for entry in entries:
                if entry.name == ".git" or not entry.is_dir(follow_symlinks=False):
                    continue
                child = f"{rel}/{entry.name}" if rel else entry.name
                if child not in skip:
                    pending.append(child)

    def changed(self) -> set[str] | None:
        """The paths that may have changed since the last call, or None (see the module docstring)."""
        found: set[str] = set()
        try:
            while True:
                events = self._notify.read()
                if not events:
                    return found
                for wd, mask, _cookie, name in events:
                    self._note(wd, mask, name, found)
                if len(found) > MAX_NAMED_PATHS:
                    raise _Spent(f"more than {MAX_NAMED_PATHS} paths changed")
        except (_Spent, OSError) as exc:
            log.debug("the watch of %s is spent: %s", self.root, exc)
            self.close()
            return None

    def _note(self, wd: int, mask: int, name: str, found: set[str]) -> None:
        if mask & _Q_OVERFLOW:
            raise _Spent("the kernel's event queue overflowed")
        if mask & _IGNORED:
            self._dirs.pop(wd, None)  # the directory went (its parent's event named it)
            return
        parent = self._dirs.get(wd)
        if parent is None:
            return
        if mask & (_DELETE_SELF | _MOVE_SELF):
            if not parent or mask & _MOVE_SELF:
                raise _Spent("a watched folder was moved, or the root went")
            return
        path = f"{parent}/{name}" if parent else name
        if name == ".gitignore":
            raise _Spent("a .gitignore changed")
        if mask & _ISDIR:
            if mask & _MOVED_FROM:
                raise _Spent("a folder was moved")
            if mask & (_CREATE | _MOVED_TO):
                self._add_tree(path)
        found.add(path)
