"""Property tests of the applied hunks (hypothesis): applying the hunks to the old text gives the new
text, and every location points at a changed line, for `edit`'s site hunks, `write`'s line diff, and the
real `edit` tool on real files."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presenters import build_tools
from presenters.diffs import (
    Hunk,
    apply_hunks,
    count_lines,
    line_blocks,
    line_diff_hunks,
    site_hunks,
    split_lines,
)
from registry_core import Agent, ToolExecutionInput, ToolRegistry

# Few distinct pieces, so texts repeat lines and substrings (the hard cases for sites and diffs).
PIECES = ["a", "b", "ab", "x", " ", "\n", "\r\n", "é", "\t"]
texts = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def sites_of(text: str, needle: str) -> list[int]:
    out, at = [], text.find(needle)
    while at >= 0:
        out.append(at)
        at = text.find(needle, at + len(needle))
    return out


def check_locations(hunks: list[Hunk], new: str) -> None:
    new_lines = split_lines(new)
    previous_end = 0
    for h in hunks:
        assert h.old_start >= previous_end + 1 or previous_end == 0, "hunks overlap or are out of order"
        previous_end = h.old_start + h.old_lines - 1
        o, n = split_lines(h.old_text or ""), split_lines(h.new_text)
        assert o != n, "a hunk that changes nothing"
        if not n:  # everything in the hunk was deleted: the nearest existing line
            assert h.line == max(1, min(h.new_start, count_lines(new)))
            continue
        k = h.line - h.new_start
        assert 0 <= k < len(n), "the location is outside the hunk"
        assert new_lines[h.line - 1] == n[k], "the location's number is not the new file's line"
        assert o[:k] == n[:k], "the location comes after a change: it points at an unchanged line"
        cp = next((i for i, (x, y) in enumerate(zip(o, n, strict=False)) if x != y), min(len(o), len(n)))
        if cp < min(len(o), len(n)) and len(o) == len(n):  # lines replaced in place: no ambiguity
            assert k == cp, "the location is not the first changed line"


@settings(max_examples=600, deadline=None)
@given(old=texts, new_s=texts, data=st.data(), context=st.sampled_from([0, 1, 3]))
def test_site_hunks_apply_and_point_at_changes(
    old: str, new_s: str, data: st.DataObject, context: int
) -> None:
    if not old:
        return
    start = data.draw(st.integers(0, len(old) - 1))
    old_s = old[start : data.draw(st.integers(start + 1, min(len(old), start + 6)))]
    if old_s == new_s:
        return
    every = data.draw(st.booleans())
    sites = sites_of(old, old_s) if every else sites_of(old, old_s)[:1]
    new = old.replace(old_s, new_s) if every else old.replace(old_s, new_s, 1)

    hunks = site_hunks(old, sites, old_s, new_s, context)

    assert apply_hunks(old, hunks) == new
    check_locations(hunks, new)


@settings(max_examples=600, deadline=None)
@given(old=texts, new=texts, context=st.sampled_from([0, 1, 3]))
def test_line_diff_hunks_apply_and_point_at_changes(old: str, new: str, context: int) -> None:
    hunks = line_diff_hunks(old, new, context)

    assert apply_hunks(old, hunks) == new
    assert (hunks == []) == (old == new)
    check_locations(hunks, new)


@settings(max_examples=300, deadline=None)
@given(a=st.lists(st.sampled_from("abcde"), max_size=30), b=st.lists(st.sampled_from("abcde"), max_size=30))
def test_line_blocks_are_true_matches_in_order(a: list[str], b: list[str]) -> None:
    blocks = line_blocks(a, b)
    pi = pj = 0
    for i, j, n in blocks:
        assert n > 0 and i >= pi and j >= pj
        assert a[i : i + n] == b[j : j + n]
        pi, pj = i + n, j + n


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=texts.filter(bool), new_s=texts, data=st.data())
def test_edit_tool_on_real_files(old: str, new_s: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(old) - 1))
    old_s = old[start : start + data.draw(st.integers(1, 5))]
    if old_s == new_s or ("\r\n" in old and "\n" in old_s and "\r\n" not in old_s and old_s not in old):
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.txt"
        path.write_bytes(old.encode())
        registry = ToolRegistry()
        for tool in build_tools():
            registry.register(tool)
        args = {"file_path": "f.txt", "old_string": old_s, "new_string": new_s, "replace_all": True}
        result = asyncio.run(
            registry.execute(
                ToolExecutionInput("c", "edit", args, agent=Agent(id="p", cwd=tmp, roots=(tmp,)))
            )
        )
        assert not result.is_error, result.error
        new = path.read_bytes().decode()
        assert new == old.replace(old_s, new_s)
        hunks = [Hunk(**dict(h)) for h in result.meta["hunks"]]
        assert apply_hunks(old, hunks) == new
        check_locations(hunks, new)


@st.composite
def edited_files(draw: st.DrawFn) -> tuple[str, str]:
    """A code-like file (mostly distinct lines, some repeated) and a version of it after random edits:
    replaced, inserted, deleted and moved ranges, far apart or close together."""
    size = draw(st.integers(0, 400))
    lines = [("\n" if i % 7 == 0 else "}\n" if i % 11 == 0 else f"line {i}\n") for i in range(size)]
    new = list(lines)
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(new)))
        span = draw(st.integers(0, 12))
        kind = draw(st.sampled_from(["replace", "insert", "delete", "move"]))
        if kind == "replace":
            new[at : at + span] = [f"changed {at}-{k}\n" for k in range(span)]
        elif kind == "insert":
            new[at:at] = [f"inserted {at}-{k}\n" for k in range(span)]
        elif kind == "delete":
            del new[at : at + span]
        else:
            block = new[at : at + span]
            del new[at : at + span]
            to = draw(st.integers(0, len(new)))
            new[to:to] = block
    final = draw(st.booleans())
    old_text, new_text = "".join(lines), "".join(new)
    return (old_text if final else old_text.rstrip("\n"), new_text)


@settings(max_examples=300, deadline=None)
@given(files=edited_files())
def test_line_diff_of_realistic_edits(files: tuple[str, str]) -> None:
    old, new = files
    hunks = line_diff_hunks(old, new)

    assert apply_hunks(old, hunks) == new
    check_locations(hunks, new)
    # Local edits stay local: no hunk is much larger than the edits could explain (6 edits of <= 12
    # lines, moves counting twice, plus 3 context lines on each side of each).
    assert sum(h.old_lines for h in hunks) <= 6 * 2 * (12 + 6) + 6
