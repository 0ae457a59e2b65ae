"""Linux inotify(7) through libc: the three calls and the event record a tree watch (`watch.py`) needs.

Written here rather than taken from PyPI: the package for it (`inotify_simple`) ships only a source archive
from 2020, which the project's offline wheelhouse cannot install, and what is needed is three libc
functions and one struct. The descriptor is non-blocking and closed on exec (a tool's process must not
inherit it); `read` returns at once, with what the kernel has queued.

Must not: be imported anywhere but Linux (`available()` says whether it can be used).
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from typing import NamedTuple

_HEADER = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name
_BUFFER = 64 * 1024


class Event(NamedTuple):
    wd: int
    mask: int
    cookie: int
    name: str  # the entry's name in the watched directory ("" for an event on the directory itself)


def available() -> bool:
    return sys.platform.startswith("linux")


class Inotify:
    """One inotify instance. Raises OSError when the kernel refuses (no instance left)."""

    def __init__(self) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._check(self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC))

    @staticmethod
    def _check(result: int) -> int:
        if result < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        return result

    def add_watch(self, path: str, mask: int) -> int:
        return self._check(self._libc.inotify_add_watch(self._fd, os.fsencode(path), ctypes.c_uint32(mask)))

    def rm_watch(self, wd: int) -> None:
        self._libc.inotify_rm_watch(self._fd, wd)  # a watch the kernel removed already: nothing to do

    def read(self) -> list[Event]:
        """The events queued now (an empty list when there are none)."""
        try:
            data = os.read(self._fd, _BUFFER)
        except BlockingIOError:
            return []
        events: list[Event] = []
        at = 0
        while at < len(data):
            wd, mask, cookie, size = _HEADER.unpack_from(data, at)
            at += _HEADER.size
            name = data[at : at + size].split(b"\0", 1)[0]
            at += size
            events.append(Event(wd, mask, cookie, os.fsdecode(name)))
        return events

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
