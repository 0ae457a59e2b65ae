"""A call's `fileChanges` (the files a command, an MCP tool or a program changed under the roots, put in
its result meta by `acp_bridge.checkpoints`) as card content: one diff block per hunk and one location per
hunk, as an `edit` card shows them, then one line for what is not drawn (a binary file, a diff over the
budget, the files past the first ones). Read from the durable meta, so live and replayed cards agree.

Must not: trust the meta's shape (a log may be from another version): what does not read is passed over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from registry_core.presentation import FileDiff, FileLocation

from .blocks import diff_blocks, diff_locations
from .text import text_block
from .wire import MAX_LOCATIONS, Location, PermissionOption, ToolCallContent, ToolCallUpdate

META_KEY = "fileChanges"


def change_blocks(meta: Any, cwd: str) -> tuple[list[ToolCallContent], list[Location]]:
    """The diff blocks and locations of a result meta's `fileChanges` (none when it has none)."""
    value = meta.get(META_KEY) if isinstance(meta, Mapping) else None
    files = value.get("files") if isinstance(value, Mapping) else None
    if not isinstance(files, (list, tuple)):
        return [], []
    diffs: list[FileDiff] = []
    anchors: list[FileLocation] = []
    notes: list[str] = []
    for entry in files:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("path"), str):
            continue
        path, action = entry["path"], str(entry.get("action", "modified"))
        hunks = entry.get("hunks")
        if not isinstance(hunks, (list, tuple)) or not hunks:
            notes.append(f"{path} ({action}{', ' + str(entry['note']) if entry.get('note') else ''})")
            anchors.append(FileLocation(path=path))
            continue
        for hunk in hunks:
            if not isinstance(hunk, Mapping) or not isinstance(hunk.get("new_text"), str):
                continue
            old = hunk.get("old_text")
            diffs.append(
                FileDiff(path=path, old_text=old if isinstance(old, str) else None, new_text=hunk["new_text"])
            )
            line = hunk.get("line")
            anchors.append(FileLocation(path=path, line=line if isinstance(line, int) else None))
    content = diff_blocks(diffs, cwd)
    total = value.get("total") if isinstance(value, Mapping) else None
    more = total - len(files) if isinstance(total, int) else 0
    lines = []
    if notes:
        lines.append("Also changed: " + "; ".join(notes))
    if more > 0:
        lines.append(f"{total} files changed in all; {more} more not shown.")
    if lines:
        content.append(text_block("\n".join(lines)))
    return content, diff_locations(diffs, anchors, cwd) if anchors else []


OVERWRITE_OPTION = "overwrite"
KEEP_OPTION = "keep"


def overwrite_question(
    question_id: str, turn: int, conflicts: Sequence[tuple[str, str]]
) -> tuple[ToolCallUpdate, list[PermissionOption]]:
    """The permission question of a rewind that would overwrite files someone else changed since: the
    files, and the choice (overwrite them, or keep them and put back the rest)."""
    listed = "\n".join(f"- {path}: {reason}" for path, reason in conflicts[:MAX_LOCATIONS])
    tool_call: ToolCallUpdate = {
        "toolCallId": question_id,
        "title": f"Rewind to before turn {turn}: overwrite files changed since?",
        "kind": "edit",
        "status": "pending",
        "name": "rewind",
        "content": [text_block(f"These files were changed after the agent's last change to them:\n{listed}")],
        "locations": [{"path": path} for path, _ in conflicts[:MAX_LOCATIONS]],
    }
    options: list[PermissionOption] = [
        {"optionId": OVERWRITE_OPTION, "name": "Overwrite them", "kind": "allow_once"},
        {"optionId": KEEP_OPTION, "name": "Keep them, put back the rest", "kind": "reject_once"},
    ]
    return tool_call, options
