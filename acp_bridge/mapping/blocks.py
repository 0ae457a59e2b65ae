"""Card pieces that both the call and the result side build: ACP locations (absolute, deduplicated,
capped at `MAX_LOCATIONS`), diff blocks with the file anchors that go with them, and the
`_meta.acpBridge` object that carries the tool name (ACP's tool call has no `name` field).

Must not: decide a card's title, kind or status, or build a whole update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from registry_core.presentation import FileDiff, FileLocation

from .paths import resolve_path
from .text import text_block
from .wire import MAX_DIFF_BLOCKS, MAX_LOCATIONS, BridgeMeta, Location, ToolCallContent


def bridge_meta(
    tool_name: str, *, description: str | None = None, cwd: str | None = None, note: str | None = None
) -> BridgeMeta:
    """`_meta.acpBridge`: the tool's name, and each of the other facts that is known."""
    meta: BridgeMeta = {"tool": tool_name}
    if description is not None:
        meta["description"] = description
    if cwd is not None:
        meta["cwd"] = cwd
    if note is not None:
        meta["note"] = note
    return meta


def _location(path: str, line: int | None, cwd: str) -> Location:
    location: Location = {"path": resolve_path(path, cwd)}
    if line is not None and line >= 0:
        location["line"] = line
    return location


def locations(pairs: Iterable[tuple[str, int | None]], cwd: str) -> list[Location]:
    """(path, line) pairs as ACP locations: absolute, each place once, at most `MAX_LOCATIONS`."""
    out: list[Location] = []
    seen: set[tuple[str, int | None]] = set()
    for path, line in pairs:
        location = _location(path, line, cwd)
        key = (location["path"], location.get("line"))
        if key in seen:
            continue
        seen.add(key)
        out.append(location)
        if len(out) >= MAX_LOCATIONS:
            break
    return out


def file_locations(found: Sequence[FileLocation]) -> list[tuple[str, int | None]]:
    return [(loc.path, loc.line) for loc in found]


def diff_blocks(diffs: Sequence[FileDiff], cwd: str) -> list[ToolCallContent]:
    """One diff block per file change (at most `MAX_DIFF_BLOCKS`, then a line saying how many more)."""
    blocks: list[ToolCallContent] = [
        {"type": "diff", "path": resolve_path(d.path, cwd), "oldText": d.old_text, "newText": d.new_text}
        for d in diffs[:MAX_DIFF_BLOCKS]
    ]
    if len(diffs) > MAX_DIFF_BLOCKS:
        blocks.append(text_block(f"({len(diffs) - MAX_DIFF_BLOCKS} more changes not shown)"))
    return blocks


def diff_locations(diffs: Sequence[FileDiff], anchors: Sequence[FileLocation], cwd: str) -> list[Location]:
    """The presenter's hunk anchors, or else one location per changed file."""
    if anchors:
        return locations(file_locations(anchors), cwd)
    # No hunk anchors from the presenter: at least name each file (a new file starts at line 1).
    return locations(((d.path, 1 if d.old_text is None else None) for d in diffs), cwd)
