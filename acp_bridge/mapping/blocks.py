"""Card pieces that both the call and the result side build: ACP locations (absolute, deduplicated,
capped at `MAX_LOCATIONS`), diff blocks with the file anchors that go with them, and the
`_meta.acpBridge` object that carries the tool name (SDK 0.12.1's `ToolCall` has no `name` field).

Must not: decide a card's title, kind or status, or build a whole update.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from registry_core.presentation import FileDiff, FileLocation

from .paths import resolve_path
from .text import _text_block
from .wire import MAX_DIFF_BLOCKS, MAX_LOCATIONS


def _bridge_meta(tool_name: str, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"tool": tool_name}
    meta.update({key: value for key, value in extra.items() if value is not None})
    return meta


def _location(path: str, line: int | None, cwd: str) -> dict[str, Any]:
    location: dict[str, Any] = {"path": resolve_path(path, cwd)}
    if line is not None and line >= 0:
        location["line"] = line
    return location


def _locations(pairs: Iterable[tuple[str, int | None]], cwd: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
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


def _file_locations(locations: Sequence[FileLocation]) -> list[tuple[str, int | None]]:
    return [(loc.path, loc.line) for loc in locations]


def _diff_blocks(diffs: Sequence[FileDiff], cwd: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "diff", "path": resolve_path(d.path, cwd), "oldText": d.old_text, "newText": d.new_text}
        for d in diffs[:MAX_DIFF_BLOCKS]
    ]
    if len(diffs) > MAX_DIFF_BLOCKS:
        blocks.append(_text_block(f"({len(diffs) - MAX_DIFF_BLOCKS} more changes not shown)"))
    return blocks


def _diff_locations(
    diffs: Sequence[FileDiff], locations: Sequence[FileLocation], cwd: str
) -> list[dict[str, Any]]:
    if locations:
        return _locations(_file_locations(locations), cwd)
    # No hunk anchors from the presenter: at least name each file (a new file starts at line 1).
    return _locations(((d.path, 1 if d.old_text is None else None) for d in diffs), cwd)
