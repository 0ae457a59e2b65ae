"""What a call changed under the roots, as its card and the model see it: the `fileChanges` value a
call's result meta carries (persisted with the result, so replay draws the same diffs), and the line the
model is told.

`fileChanges` (in a result's presentation meta, beside the tool's own keys):
    {"total": int, "files": [{"path": abs, "action": "created" | "modified" | "deleted",
                              "hunks": [{"old_text": str | None, "new_text": str, "line": int}],
                              "note": str (instead of hunks: binary, or over the budget)}]}
Bounded: at most `MAX_SHOWN_FILES` files are listed, and the hunks of all of them hold at most
`MAX_DIFF_CHARS` characters (a file past that is listed with a note); `total` counts every changed file, so
the card can say how many more there were. A command that rewrites 5,000 files therefore costs one
summary line and the first diffs, never a multi-megabyte frame.

Must not: run git (the store does) or build wire shapes (`mapping.file_changes` does).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from presenters.diffs import line_diff_hunks

META_KEY = "fileChanges"
MAX_SHOWN_FILES = 20
MAX_DIFF_CHARS = 200_000
MAX_NAMED_FILES = 20  # in the model's note


@dataclass(frozen=True, slots=True)
class Changed:
    """One changed file: absolute path, action, and its contents before and after (None: absent)."""

    path: str
    old: bytes | None
    new: bytes | None

    @property
    def action(self) -> str:
        if self.old is None:
            return "created"
        if self.new is None:
            return "deleted"
        return "modified"


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    if b"\0" in data[:8192]:
        raise UnicodeDecodeError("utf-8", data[:1], 0, 1, "binary")
    return data.decode("utf-8")


def meta_value(changes: Sequence[Changed]) -> dict[str, Any]:
    """The bounded `fileChanges` value of a call's changes (see the module docstring)."""
    files: list[dict[str, Any]] = []
    budget = MAX_DIFF_CHARS
    for change in changes[:MAX_SHOWN_FILES]:
        entry: dict[str, Any] = {"path": change.path, "action": change.action}
        try:
            old, new = _text(change.old), _text(change.new)
        except UnicodeDecodeError:
            entry["note"] = "binary file"
            files.append(entry)
            continue
        hunks: list[dict[str, Any]]
        if old is None:
            hunks = [{"old_text": None, "new_text": new or "", "line": 1}]
        elif new is None:
            hunks = [{"old_text": old, "new_text": "", "line": 1}]
        else:
            hunks = [
                {"old_text": h.old_text, "new_text": h.new_text, "line": h.line}
                for h in line_diff_hunks(old, new)
            ]
        size = sum(len(h["old_text"] or "") + len(h["new_text"]) for h in hunks)
        if size > budget:
            entry["note"] = "diff not shown: too large for the card"
        else:
            budget -= size
            entry["hunks"] = hunks
        files.append(entry)
    return {"total": len(changes), "files": files}


def model_note(changes: Sequence[Changed], cwd: str) -> str:
    """The line appended to the call's result for the model: which files changed, briefly."""
    named = [f"{relative(c.path, cwd)} ({c.action})" for c in changes[:MAX_NAMED_FILES]]
    more = len(changes) - len(named)
    tail = f", and {more} more" if more > 0 else ""
    return f"[Files changed under the workspace: {', '.join(named)}{tail}]"


def relative(path: str, cwd: str) -> str:
    rel = os.path.relpath(path, cwd)
    return path if rel.startswith("..") else rel


def with_changes(meta: Any, value: Mapping[str, Any]) -> Any:
    """The result meta with `fileChanges` added; a meta that is no object (rare) is kept as is."""
    if meta is None:
        return {META_KEY: dict(value)}
    if isinstance(meta, Mapping):
        return {**meta, META_KEY: dict(value)}
    return meta
