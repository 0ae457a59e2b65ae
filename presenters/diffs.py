"""Applied hunks: the change a `write` or `edit` made, as line ranges with context.

Two producers, one `Hunk` shape:
- `site_hunks`: an `edit`'s hunks come straight from its replacement sites (char offsets), so a
  `replace_all` on a 5 MB file costs a few `find`/`count` calls, never a whole-file diff.
- `line_diff_hunks`: a `write` that overwrites a file uses a real line diff (`line_blocks`).

Lines end at "\\n" only (a CRLF line keeps its "\\r"), so hunk texts are exact slices of the files. Hunk
numbers are 1-based and give where the hunk's lines sit (`old_start`/`new_start` point at the first line
even when the count is 0), so `apply_hunks(old, hunks) == new`. `line` is the hunk's first changed line in
the NEW file (for the editor's follow-along), clamped to an existing line.

Diff algorithm, chosen by measurement (benchmarks/presenters_bench.py's file: 100,000 code-like lines,
4.8 MB, 1% of lines replaced; CPython 3.11, one core of a shared 2-core VM):
- difflib.SequenceMatcher, autojunk=True:  15.4 s   (20,000-line slice: ~0.42 s)
- difflib.SequenceMatcher, autojunk=False: 67.3 s
- Myers O(ND), edit distance only, no path recovery yet: 0.63 s
- patience (unique-line anchors, longest increasing subsequence, recursion into the gaps; difflib only
  inside small gaps without a unique line): 0.11-0.15 s (20,000-line slice: ~17 ms)
- a scan that skips equal runs with galloping slice comparisons and resynchronises after each change on
  the nearest run of 3 equal lines, with patience inside each changed region and for anything the scan
  cannot resynchronise (rewrites, moved blocks): ~0.04 s  <- used (`line_blocks`)
The benchmark's "overwrite line diff" row re-measures the 20,000-line slice against difflib on every run.
Invariant: pure functions of their inputs; no I/O.
"""

from __future__ import annotations

import difflib
from bisect import bisect_left
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from itertools import compress, pairwise, repeat
from operator import and_, eq, lt, not_, sub
from typing import Any

CONTEXT = 3
# Above this many line pairs, an anchorless gap is reported as one replacement instead of running
# difflib on it (whose cost grows quadratically); the result stays exact, only less minimal.
_DIFFLIB_GAP_LIMIT = 250_000


@dataclass(frozen=True, slots=True)
class Hunk:
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    old_text: str | None  # None: the file did not exist (a create)
    new_text: str
    line: int  # first changed line in the new file

    def to_json(self) -> dict[str, Any]:
        return {
            "old_start": self.old_start,
            "old_lines": self.old_lines,
            "new_start": self.new_start,
            "new_lines": self.new_lines,
            "old_text": self.old_text,
            "new_text": self.new_text,
            "line": self.line,
        }


def split_lines(text: str) -> list[str]:
    """Lines of `text`, each keeping its "\\n" (the last one may have none)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def common_prefix_len(a: str, b: str) -> int:
    """Length of the common prefix, by bisection on C-level slice comparisons (no per-char loop)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def create_hunk(content: str) -> Hunk:
    """The whole-file diff of a newly created file."""
    return Hunk(1, 0, 1, count_lines(content), None, content, 1)


def apply_hunks(old: str, hunks: Sequence[Hunk]) -> str:
    """Apply `hunks` (in order) to `old`; raises ValueError when a hunk does not match."""
    lines = split_lines(old)
    out: list[str] = []
    at = 0
    for h in hunks:
        start = h.old_start - 1
        if start < at or "".join(lines[start : start + h.old_lines]) != (h.old_text or ""):
            raise ValueError(f"hunk at old line {h.old_start} does not match")
        out.extend(lines[at:start])
        out.append(h.new_text)
        at = start + h.old_lines
    out.extend(lines[at:])
    return "".join(out)


# --- line diff (write) ---------------------------------------------------------------------------


def _lis(js: list[int]) -> list[int]:
    """Indices of a longest strictly increasing subsequence of `js` (patience sorting)."""
    tails: list[int] = []
    tails_at: list[int] = []
    prev = [-1] * len(js)
    for k, j in enumerate(js):
        # Mostly-unchanged files give mostly-increasing j: append without bisecting.
        p = len(tails) if not tails or j > tails[-1] else bisect_left(tails, j)
        if p == len(tails):
            tails.append(j)
            tails_at.append(k)
        else:
            tails[p] = j
            tails_at[p] = k
        if p:
            prev[k] = tails_at[p - 1]
    out: list[int] = []
    k = tails_at[-1] if tails_at else -1
    while k != -1:
        out.append(k)
        k = prev[k]
    out.reverse()
    return out


def _patience(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, n), sorted: a[i:i+n] == b[j:j+n]. Patience diff."""
    blocks: list[tuple[int, int, int]] = []
    stack = [(0, len(a), 0, len(b))]
    while stack:  # an explicit stack: nesting depth is input-controlled, recursion could overflow
        alo, ahi, blo, bhi = stack.pop()
        start = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        if alo > start:
            blocks.append((start, blo - (alo - start), alo - start))
        end = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        if end > ahi:
            blocks.append((ahi, bhi, end - ahi))
        if alo >= ahi or blo >= bhi:
            continue
        if ahi - alo == 1 or bhi - blo == 1:
            # One line on a side (the usual "line replaced" gap): find it on the other side, C-fast.
            if ahi - alo == 1:
                at = _index(b, a[alo], blo, bhi)
                if at >= 0:
                    blocks.append((alo, at, 1))
            else:
                at = _index(a, b[blo], alo, ahi)
                if at >= 0:
                    blocks.append((at, blo, 1))
            continue
        sa, sb = a[alo:ahi], b[blo:bhi]
        unique = _once(sa) & _once(sb)
        if unique:
            # The per-line work is done by C-level map/compress (this loop dominates a 100k-line diff).
            mask = list(map(unique.__contains__, sa))
            anchors_i = list(compress(range(alo, ahi), mask))
            where = dict(zip(sb, range(blo, bhi), strict=True))  # exact for the unique lines looked up
            anchors_j = list(map(where.__getitem__, compress(sa, mask)))
            if not all(map(lt, anchors_j, anchors_j[1:])):  # lines moved: keep the LIS
                keep = _lis(anchors_j)
                anchors_i = [anchors_i[k] for k in keep]
                anchors_j = [anchors_j[k] for k in keep]
            # Anchors where a run of consecutive matches breaks; between them, runs are one block each.
            steps = map(
                and_,
                map(eq, map(sub, anchors_i[1:], anchors_i), repeat(1)),
                map(eq, map(sub, anchors_j[1:], anchors_j), repeat(1)),
            )
            breaks = [0, *compress(range(1, len(anchors_i)), map(not_, steps)), len(anchors_i)]
            pi, pj = alo, blo
            for start, stop in pairwise(breaks):
                i, j = anchors_i[start], anchors_j[start]
                if i > pi and j > pj:  # a gap before this run: diff it later
                    stack.append((pi, i, pj, j))
                blocks.append((i, j, stop - start))
                pi, pj = i + stop - start, j + stop - start
            if pi < ahi and pj < bhi:
                stack.append((pi, ahi, pj, bhi))
        elif len(sa) * len(sb) <= _DIFFLIB_GAP_LIMIT:
            matcher = difflib.SequenceMatcher(None, sa, sb, autojunk=False)
            blocks.extend((alo + i, blo + j, n) for i, j, n in matcher.get_matching_blocks() if n)
    blocks.sort()
    merged: list[tuple[int, int, int]] = []
    for i, j, n in blocks:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            pi, pj, pn = merged[-1]
            merged[-1] = (pi, pj, pn + n)
        else:
            merged.append((i, j, n))
    return merged


def _once(lines: Sequence[Hashable]) -> set[Hashable]:
    """The lines that occur exactly once (C-level: no Python loop over the counts)."""
    counts = Counter(lines)
    return set(compress(counts.keys(), map((1).__eq__, counts.values())))


def _index(seq: Sequence[Hashable], item: Hashable, lo: int, hi: int) -> int:
    try:
        return seq.index(item, lo, hi)
    except ValueError:
        return -1


# The scan's resynchronisation: how far it looks for the next common line, and how many equal lines in a
# row make a common line a trustworthy anchor (a lone blank line or "}" is not).
_RESYNC_WINDOW = 256
_RESYNC_RUN = 3


def _equal_run(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int) -> int:
    """How many lines are equal from a[i] and b[j] on: galloping then bisecting on C-level slice
    comparisons, so an unchanged stretch of thousands of lines costs a few dozen Python steps."""
    limit = min(len(a) - i, len(b) - j)
    if limit <= 0 or a[i] != b[j]:
        return 0
    k = 1
    while k < limit:
        step = min(2 * k, limit)
        if a[i : i + step] != b[j : j + step]:
            break
        k = step
    else:
        return limit
    lo, hi = k, min(2 * k, limit) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[i : i + mid] == b[j : j + mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _resync(a: Sequence[Hashable], b: Sequence[Hashable], i: int, j: int) -> tuple[int, int] | None:
    """The nearest (i2, j2) past a mismatch at (i, j) where a trustworthy run of equal lines starts,
    searching ever larger distances d = max(i2 - i, j2 - j) up to the window; None beyond it."""
    n, m = len(a), len(b)
    for d in range(1, _RESYNC_WINDOW + 1):
        if i + d < n:
            jj = _index(b, a[i + d], j, min(j + d + 1, m))
            if jj >= 0 and _equal_run(a, b, i + d, jj) >= min(_RESYNC_RUN, n - i - d, m - jj):
                return i + d, jj
        if j + d < m:
            ii = _index(a, b[j + d], i, min(i + d + 1, n))
            if ii >= 0 and _equal_run(a, b, ii, j + d) >= min(_RESYNC_RUN, n - ii, m - j - d):
                return ii, j + d
        if i + d >= n and j + d >= m:
            break
    return None


def line_blocks(a: Sequence[Hashable], b: Sequence[Hashable]) -> list[tuple[int, int, int]]:
    """Matching blocks (i, j, n), sorted: a[i:i+n] == b[j:j+n].

    Local edits (the usual overwrite) are found by a scan: equal runs are skipped by galloping slice
    comparisons, and after a mismatch the nearest trustworthy common run is taken (each small changed
    region is then diffed by `_patience`, which also finds matches inside it). Where no common run lies
    within the window (a rewrite, moved blocks), the rest of the files goes to `_patience`, which handles
    such structure well. 100,000 lines with 1% changed: ~40 ms, against ~120 ms for `_patience` alone.
    """
    blocks: list[tuple[int, int, int]] = []
    i = j = 0
    n, m = len(a), len(b)
    while i < n and j < m:
        k = _equal_run(a, b, i, j)
        if k:
            blocks.append((i, j, k))
            i, j = i + k, j + k
            continue
        found = _resync(a, b, i, j)
        if found is None:
            blocks.extend((i + x, j + y, z) for x, y, z in _patience(a[i:], b[j:]))
            break
        i2, j2 = found
        if i2 > i and j2 > j:
            blocks.extend((i + x, j + y, z) for x, y, z in _patience(a[i:i2], b[j:j2]))
        i, j = i2, j2
    return blocks


class _Lines:
    """A text's lines for diffing without copying each line: `keys` compare lines (an unterminated last
    line is a 1-tuple so it never equals a terminated line of the same content), `text(s, e)` rebuilds
    the exact slice of lines s..e-1."""

    __slots__ = ("keys", "parts", "terminated")

    def __init__(self, text: str) -> None:
        parts = text.split("\n")
        self.terminated = len(parts) - 1
        if parts[-1] == "":
            parts.pop()
            self.keys: list[Hashable] = list(parts)
        else:
            self.keys = [*parts[:-1], (parts[-1],)]
        self.parts = parts

    def __len__(self) -> int:
        return len(self.parts)

    def text(self, start: int, end: int) -> str:
        if start >= end:
            return ""
        body = "\n".join(self.parts[start:end])
        return body + "\n" if end <= self.terminated else body


def _groups(changes: Sequence[tuple[int, int, int, int]], context: int) -> list[tuple[int, int]]:
    """Changes (i1, i2, j1, j2) grouped into hunks, as (first, last) indices: a gap of at most
    2*context equal lines joins two changes (their context lines would touch or overlap)."""
    groups: list[tuple[int, int]] = []
    for k, change in enumerate(changes):
        if groups and change[0] - changes[groups[-1][1]][1] <= 2 * context:
            groups[-1] = (groups[-1][0], k)
        else:
            groups.append((k, k))
    return groups


def line_diff_hunks(old: str, new: str, context: int = CONTEXT) -> list[Hunk]:
    """Hunks of a whole-file overwrite, from a line diff."""
    a, b = _Lines(old), _Lines(new)
    changes: list[tuple[int, int, int, int]] = []
    pi = pj = 0
    for i, j, n in [*line_blocks(a.keys, b.keys), (len(a), len(b), 0)]:
        if i > pi or j > pj:
            changes.append((pi, i, pj, j))
        pi, pj = i + n, j + n
    hunks = []
    for first, last in _groups(changes, context):
        i1, j1 = changes[first][0], changes[first][2]
        i2, j2 = changes[last][1], changes[last][3]
        before = min(context, i1)
        after = min(context, len(a) - i2)
        cs, ce = i1 - before, i2 + after
        ns, ne = j1 - before, j2 + after
        line = min(j1 + 1, max(len(b), 1))  # a pure deletion points at the line now at its place
        hunks.append(Hunk(cs + 1, ce - cs, ns + 1, ne - ns, a.text(cs, ce), b.text(ns, ne), max(line, 1)))
    return hunks


# --- replacement sites (edit) --------------------------------------------------------------------


def _line_end(text: str, pos: int) -> int:
    """Offset just past the line containing `pos` (its "\\n" included), or len(text)."""
    idx = text.find("\n", pos)
    return len(text) if idx == -1 else idx + 1


def site_hunks(old: str, sites: Sequence[int], old_s: str, new_s: str, context: int = CONTEXT) -> list[Hunk]:
    """Hunks of replacing `old_s` (non-empty) by `new_s` at the ascending, non-overlapping `sites`."""
    n = len(old)
    # 1. Regions: the whole lines around each site; sites sharing a line share a region. A region whose
    #    new text would end inside a line (new_s lost the old "\n") absorbs the next line, which changes.
    regions: list[tuple[int, int, str, int]] = []  # (old start, old end, new text, first site)
    k = 0
    while k < len(sites):
        first_site = sites[k]
        rs = old.rfind("\n", 0, first_site) + 1
        re_ = rs
        members: list[int] = []
        new_region = ""
        while True:
            while k < len(sites) and (not members or sites[k] < re_):
                members.append(sites[k])
                re_ = max(re_, _line_end(old, sites[k] + len(old_s) - 1))
                k += 1
            new_region = _new_region(old, rs, re_, members, old_s, new_s)
            if re_ < n and new_region and not new_region.endswith("\n"):
                re_ = _line_end(old, re_)
                continue
            break
        regions.append((rs, re_, new_region, first_site))

    # 2. Line numbers of each region, counted incrementally (offsets only grow).
    changes: list[tuple[int, int, int, int]] = []
    line_at, counted_to, delta = 0, 0, 0
    for rs, re_, new_region, _ in regions:
        line_at += old.count("\n", counted_to, rs)
        counted_to = rs
        old_count, new_count = count_lines(old[rs:re_]), count_lines(new_region)
        changes.append((line_at, line_at + old_count, line_at + delta, line_at + delta + new_count))
        delta += new_count - old_count
    total_new = count_lines(old) + delta
    first_change = common_prefix_len(old_s, new_s)

    # 3. Hunks: regions whose contexts touch share a hunk; context lines are found by walking line breaks.
    hunks: list[Hunk] = []
    for first, last in _groups(changes, context):
        cs, before = regions[first][0], 0
        while before < context and cs > 0:
            cs = old.rfind("\n", 0, cs - 1) + 1
            before += 1
        ce, after = regions[last][1], 0
        while after < context and ce < n:
            ce = _line_end(old, ce)
            after += 1
        parts = [old[cs : regions[first][0]]]
        for r in range(first, last + 1):
            if r > first:
                parts.append(old[regions[r - 1][1] : regions[r][0]])
            parts.append(regions[r][2])
        parts.append(old[regions[last][1] : ce])
        new_text = "".join(parts)
        new_start = changes[first][2] - before + 1
        new_lines = count_lines(new_text)
        # The first changed char: the group's first site plus the common prefix of old_s and new_s.
        rs, _, new_region, site = regions[first]
        line = changes[first][2] + 1 + new_region.count("\n", 0, site - rs + first_change)
        line = min(line, new_start + max(new_lines, 1) - 1, max(total_new, 1))
        old_text = old[cs:ce]
        hunks.append(
            Hunk(
                changes[first][0] - before + 1,
                count_lines(old_text),
                new_start,
                new_lines,
                old_text,
                new_text,
                max(line, 1),
            )
        )
    return hunks


def _new_region(old: str, rs: int, re_: int, members: list[int], old_s: str, new_s: str) -> str:
    parts = [old[rs : members[0]]]
    for a, b in zip(members, [*members[1:], None], strict=True):
        parts.append(new_s)
        parts.append(old[a + len(old_s) : re_ if b is None else b])
    return "".join(parts)
