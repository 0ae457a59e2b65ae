"""What `grep` keeps of a search: the first entries in path order, whatever order the files arrive in, and
the true totals of everything found.

`Collector` is the backends' sink (`ripgrep.Sink`). A backend hands it each file with matches once, in any
order (ripgrep searches in parallel, the Python backend walks in path order); `root` is the index of the
root being searched, so a second root's files come after the first's. The collector counts every file
and every matching line (`total_files`, `total_matches`) and keeps only what may be shown: in content mode
the files holding the first `limit` matching lines in path order (of each, its first `limit` matching
lines and the context lines right after the last of them), in the other modes the first `limit` files.
`shown()` gives them in path order, cut to `limit` entries as before: matching lines (with their context)
in content mode, files otherwise, and the context lines after the last shown match (at most `after`).

Path order is ripgrep's `--sort path`: by path components, each compared as text (the path with "/" made
the least character compares so), roots in search order.

Must not: hold more than about `limit` files' or matching lines' worth of entries (plus one file's
context), or lose a count: the totals are the search's, never what is shown.
"""

from __future__ import annotations

from bisect import insort
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import count as counter
from typing import Literal

Mode = Literal["content", "files_with_matches", "count"]
Line = tuple[int, str, bool]  # (number, text, is_match)
_Key = tuple[int, str]


@dataclass(frozen=True, slots=True)
class Shown:
    """One file as shown: its path, its count of matching lines (1 in files mode) and, in content mode,
    its shown lines."""

    path: str
    count: int
    lines: tuple[Line, ...] = ()


def capped(lines: Iterable[Line], limit: int) -> list[Line]:
    """A file's lines up to its `limit`-th matching line, then the context lines up to the next match:
    all that can be shown of it (the context after the last shown match is cut to -A when shown)."""
    kept: list[Line] = []
    matches = 0
    for line in lines:
        if line[2]:
            if matches == limit:
                break
            matches += 1
        kept.append(line)
    return kept


@dataclass
class Collector:
    mode: Mode
    limit: int
    after: int
    root: int = 0
    total_files: int = 0
    total_matches: int = 0
    # Sorted by key: (key, arrival, path, count, lines). Content mode: the files that may hold one of the
    # first `limit` matching lines; other modes: the first `limit` files.
    _kept: list[tuple[_Key, int, str, int, list[Line]]] = field(default_factory=list)
    _kept_matches: int = 0
    _arrival: counter[int] = field(default_factory=counter)

    def add(self, path: str, count: int, lines: Iterable[Line] = ()) -> None:
        if count <= 0:
            return
        self.total_files += 1
        self.total_matches += count
        kept = self._kept
        # "/" as the least character: the text orders as the components do ("a/b" before "a-b").
        key = (self.root, path.replace("/", "\0"))
        if self.mode != "content":
            if len(kept) == self.limit and key >= kept[-1][0]:
                return  # past the first `limit` files
            insort(kept, (key, next(self._arrival), path, count, []))
            if len(kept) > self.limit:
                kept.pop()
            return
        if kept and self._kept_matches >= self.limit and key > kept[-1][0]:
            return  # `limit` matching lines come before this file: none of its lines can be shown
        insort(kept, (key, next(self._arrival), path, count, capped(lines, self.limit)))
        self._kept_matches += count
        # Files whose lines all come after the first `limit` matching lines can never be shown.
        while len(kept) > 1 and self._kept_matches - kept[-1][3] >= self.limit:
            self._kept_matches -= kept.pop()[3]

    @property
    def total(self) -> int:
        """The entries found: matching lines in content mode, files otherwise."""
        return self.total_matches if self.mode == "content" else self.total_files

    def shown(self) -> list[Shown]:
        """The entries shown, in path order (see the module docstring)."""
        if self.mode != "content":
            return [Shown(path, count) for _, _, path, count, _ in self._kept]
        files: list[Shown] = []
        stored = 0
        for _, _, path, count, lines in self._kept:
            kept: list[Line] = []
            tail_left = 0  # context lines still shown after the last shown match, once the limit is hit
            for line in lines:
                if line[2]:
                    if stored >= self.limit:
                        break
                    stored += 1
                    tail_left = self.after
                elif stored >= self.limit:
                    if tail_left <= 0:
                        break
                    tail_left -= 1
                kept.append(line)
            if kept:
                files.append(Shown(path, count, tuple(kept)))
        return files

    def shown_entries(self, files: list[Shown]) -> int:
        """How many entries `files` (from `shown`) holds: matching lines in content mode, else files."""
        if self.mode != "content":
            return len(files)
        return sum(1 for f in files for line in f.lines if line[2])
