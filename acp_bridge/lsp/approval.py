"""The ask decision as an LSP `window/showMessageRequest`: the question text, its actions, the answer.

`build_question` turns the core's permission request (the ToolCallUpdate built by
`mapping.permission_tool_call`, read as a card by `mapping.card_of`, and the four options built by
`mapping.permission_options`) into a plain-text message that names the call — the command for `bash`, the
file and a short diff summary (+added −removed lines) for edits and writes, the title otherwise — plus the
scope an "always" answer covers (the options' `_meta` data, not their names), and four short action titles:
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

from acp_bridge.client.channel import PermissionOutcome

from ..mapping import Card, PermissionOption, card_of, display_path, option_scope, scope_words

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


def _tool_and_title(card: Card) -> tuple[str, str]:
    tool = card.bridge.tool or "a tool"
    return tool, card.title if card.title.strip() else tool


def describe_call(tool_call: Mapping[str, Any]) -> str:
    """One line naming the call, e.g. "`bash`: npm test" (for messages about it)."""
    tool, title = _tool_and_title(card_of(tool_call))
    return f"`{tool}`" if title == tool else f"`{tool}`: {_clip(title, 200)}"


def build_question(
    tool_call: Mapping[str, Any], options: Sequence[PermissionOption], cwd: str | None = None
) -> Question:
    """The message and actions for one permission request. `cwd` makes diff paths relative for display."""
    card = card_of(tool_call)
    tool, title = _tool_and_title(card)
    lines: list[str] = []
    diffs = card.diffs
    command = card.command
    if card.kind == "execute" and command is not None and command.strip():
        lines.append(f"acp-bridge wants to run `{tool}`:")
        lines.append("$ " + _clip(command.strip(), _MAX_COMMAND_CHARS))
        workdir = card.bridge.cwd
        if workdir is not None and cwd is not None and os.path.normpath(workdir) != os.path.normpath(cwd):
            lines.append(f"(in {workdir})")
    elif diffs:
        lines.append(f"acp-bridge wants to `{tool}`:")
        for diff in diffs[:10]:
            path = diff["path"]
            shown = display_path(path, cwd) if cwd is not None else path
            old = diff["oldText"]
            added, removed = diff_counts(old, diff["newText"])
            if old is None:
                lines.append(f"create {shown} ({added} lines)")
            else:
                lines.append(f"edit {shown} (+{added} −{removed} lines)")
        if len(diffs) > 10:
            lines.append(f"… and {len(diffs) - 10} more files")
    else:
        lines.append(f"acp-bridge wants to run `{tool}`: {title}")
    # The reason (e.g. "outside the workspace") and a command's description are plain text blocks; fenced
    # blocks repeat the command or the arguments already named above.
    extra = [t.strip() for t in card.texts if t.strip() and not _FENCED.match(t)]
    if extra:
        lines.append(_clip(" ".join(extra), _MAX_EXTRA_CHARS))

    option_ids: dict[str, str] = {}
    by_kind: dict[str, str] = {}
    scope: str | None = None
    for option in options:
        option_kind, option_id = option["kind"], option["optionId"]
        label = ACTION_TITLES.get(option_kind)
        if label is None or label in option_ids:
            continue
        option_ids[label] = option_id
        by_kind[option_kind] = option_id
        if option_kind == "allow_always":
            scope = option_scope(option)
    if scope:
        lines.append(f'"Always" answers cover {scope_words(scope)}.')
    actions = tuple(label for label in ACTION_TITLES.values() if label in option_ids)
    dismissed = by_kind.get("reject_once", by_kind.get("reject_always"))
    return Question("\n".join(lines), actions, option_ids, dismissed)
