"""The ask decision as an LSP `window/showMessageRequest`: the question text, its actions, the answer.

`build_question` turns the core's permission request (the ToolCallUpdate built by
`mapping.permission_tool_call` and the four ACP PermissionOptions) into a plain-text message that names
the call — the command for `bash`, the file and a short diff summary (+added −removed lines) for edits and
writes, the title otherwise — plus the scope an "always" answer covers, and four short action titles:
Allow once, Always allow, Reject, Always reject. `Question.outcome(title)` maps the editor's answer back to
the ACP option id; a dismissed request (no title) rejects once, never allows.

Must not: talk to the client, or decide anything the permission gate decides (remembering "always"
answers, denial reasons): this only translates.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..channel import PermissionOutcome
from ..mapping import display_path

ACTION_TITLES: Final[Mapping[str, str]] = {
    "allow_once": "Allow once",
    "allow_always": "Always allow",
    "reject_once": "Reject",
    "reject_always": "Always reject",
}
_MAX_COMMAND_CHARS: Final = 2000
_MAX_EXTRA_CHARS: Final = 600
_FENCED: Final = re.compile(r"^\s*`{3,}")


@dataclass(frozen=True, slots=True)
class Question:
    message: str
    actions: tuple[str, ...]
    option_ids: Mapping[str, str]  # action title → ACP option id
    dismissed_id: str | None  # what a dismissed request means: the reject-once option (else reject-always)

    def outcome(self, title: str | None) -> PermissionOutcome:
        """The ACP outcome for the editor's answer. None (dismissed) → reject. Raises ValueError for a title
        that is not one of ours, or a dismissal with no reject option (the gate then denies, saying why)."""
        if title is None:
            if self.dismissed_id is None:
                raise ValueError("the request was dismissed and no reject option was offered")
            return PermissionOutcome("selected", self.dismissed_id)
        option_id = self.option_ids.get(title)
        if option_id is None:
            raise ValueError(f"the editor answered with an action that was not offered: {title!r}")
        return PermissionOutcome("selected", option_id)


def _text_blocks(content: object) -> list[str]:
    texts: list[str] = []
    for block in content if isinstance(content, list) else ():
        inner = block.get("content") if isinstance(block, Mapping) else None
        if isinstance(inner, Mapping) and inner.get("type") == "text" and isinstance(inner.get("text"), str):
            texts.append(inner["text"])
    return texts


def _diffs(content: object) -> list[Mapping[str, Any]]:
    return [
        block
        for block in (content if isinstance(content, list) else ())
        if isinstance(block, Mapping) and block.get("type") == "diff" and isinstance(block.get("path"), str)
    ]


def diff_counts(old: str | None, new: str) -> tuple[int, int]:
    """(added, removed) lines between `old` and `new` (`old` None: a new file, every line added), from
    the same line diff as the `write` tool's hunks (`presenters.diffs.line_blocks`: fast on big files,
    every size counted exactly). Lines end at "\\n", as in those hunks."""
    # Here, not at the top: `presenters` loads every tool, which the LSP face's import need not wait for.
    from presenters.diffs import line_blocks, split_lines

    if old is None:
        return len(split_lines(new)), 0
    a, b = split_lines(old), split_lines(new)
    matched = sum(n for _i, _j, n in line_blocks(a, b))
    return len(b) - matched, len(a) - matched


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _tool_and_title(tool_call: Mapping[str, Any]) -> tuple[str, str]:
    meta = tool_call.get("_meta")
    bridge = meta.get("acpBridge") if isinstance(meta, Mapping) else None
    tool = bridge.get("tool") if isinstance(bridge, Mapping) else None
    tool = tool if isinstance(tool, str) and tool else "a tool"
    title = tool_call.get("title")
    return tool, title if isinstance(title, str) and title.strip() else tool


def describe_call(tool_call: Mapping[str, Any]) -> str:
    """One line naming the call, e.g. "`bash`: npm test" (for messages about it)."""
    tool, title = _tool_and_title(tool_call)
    return f"`{tool}`" if title == tool else f"`{tool}`: {_clip(title, 200)}"


def build_question(
    tool_call: Mapping[str, Any], options: Sequence[Mapping[str, Any]], cwd: str | None = None
) -> Question:
    """The message and actions for one permission request. `cwd` makes diff paths relative for display."""
    meta = tool_call.get("_meta")
    bridge = meta.get("acpBridge") if isinstance(meta, Mapping) else None
    tool, title = _tool_and_title(tool_call)
    kind = tool_call.get("kind")
    raw_input = tool_call.get("rawInput")
    content = tool_call.get("content")

    lines: list[str] = []
    diffs = _diffs(content)
    command = raw_input.get("command") if isinstance(raw_input, Mapping) else None
    if kind == "execute" and isinstance(command, str) and command.strip():
        lines.append(f"acp-bridge wants to run `{tool}`:")
        lines.append("$ " + _clip(command.strip(), _MAX_COMMAND_CHARS))
        workdir = bridge.get("cwd") if isinstance(bridge, Mapping) else None
        if (
            isinstance(workdir, str)
            and cwd is not None
            and os.path.normpath(workdir) != os.path.normpath(cwd)
        ):
            lines.append(f"(in {workdir})")
    elif diffs:
        lines.append(f"acp-bridge wants to `{tool}`:")
        for diff in diffs[:10]:
            path = str(diff["path"])
            shown = display_path(path, cwd) if cwd is not None else path
            old = diff.get("oldText")
            new = diff.get("newText")
            new_text = new if isinstance(new, str) else ""
            added, removed = diff_counts(old if isinstance(old, str) else None, new_text)
            if not isinstance(old, str):
                lines.append(f"create {shown} ({added} lines)")
            else:
                lines.append(f"edit {shown} (+{added} −{removed} lines)")
        if len(diffs) > 10:
            lines.append(f"… and {len(diffs) - 10} more files")
    else:
        lines.append(f"acp-bridge wants to run `{tool}`: {title}")
    # The reason (e.g. "outside the workspace") and a command's description are plain text blocks; fenced
    # blocks repeat the command or the arguments already named above.
    extra = [t.strip() for t in _text_blocks(content) if t.strip() and not _FENCED.match(t)]
    if extra:
        lines.append(_clip(" ".join(extra), _MAX_EXTRA_CHARS))

    option_ids: dict[str, str] = {}
    by_kind: dict[str, str] = {}
    scope: str | None = None
    for option in options:
        option_kind, option_id = option.get("kind"), option.get("optionId")
        if not isinstance(option_kind, str) or not isinstance(option_id, str):
            continue
        label = ACTION_TITLES.get(option_kind)
        if label is None or label in option_ids:
            continue
        option_ids[label] = option_id
        by_kind[option_kind] = option_id
        name = option.get("name")
        if option_kind == "allow_always" and isinstance(name, str) and name.startswith("Always allow "):
            scope = name[len("Always allow ") :]
    if scope:
        lines.append(f'"Always" answers cover {scope}.')
    actions = tuple(label for label in ACTION_TITLES.values() if label in option_ids)
    dismissed = by_kind.get("reject_once", by_kind.get("reject_always"))
    return Question("\n".join(lines), actions, option_ids, dismissed)
