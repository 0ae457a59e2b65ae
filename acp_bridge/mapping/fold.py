"""The fold of the session update stream: what each card shows, read back from the updates a client receives.

A card appears with a `tool_call` and changes with `tool_call_update`s. ACP's rule
(https://agentclientprotocol.com/protocol/tool-calls): a field an update carries replaces the
card's (`content` and `locations` as whole collections), a field it leaves out stays. Zed's terminal
convention adds one stream: `_meta.terminal_output` deltas append to the card's terminal. Without that
convention the bridge shows a command's output in a ```console block of the card's content instead.
A nested call (a Code Mode program's sub-call) names its program's call in `_meta.parentToolCallId`.

- `read_update(update)`: one update as typed data (`CardPatch`, `TextChunk`, `PlanChange`, `ModeChange`),
  or None for what no face shows (usage, commands) and for what is not a well-formed update;
- `next_card(card, patch)`: the reducer, the card after one tool call update;
- `fold_cards(updates)`: the whole stream folded, call id → `Card`.

Updates are read leniently (a malformed field is as if absent): the demo reads them off the wire, and a
face must not fail on a client-side surprise. The faces that show updates their own way (`lsp/derive.py`,
`lsp/approval.py`, `demo_render.py`) read them only through here.

Must not: do I/O or keep state; every function is pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, get_args

from .nested import PARENT_KEY
from .wire import (
    ChunkKind,
    ContentItem,
    DiffItem,
    Location,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ToolCallContent,
    ToolKind,
    ToolStatus,
)

# Of a card's terminal output, the end is kept: enough for the last lines a face shows.
OUTPUT_TAIL_CHARS: Final = 16 * 1024
# A fenced block as `text.fence` writes it: the opening run of backticks closes it, nothing inside can.
_FENCE: Final = re.compile(r"^(`{3,})[^\n]*\n(.*?)\n?\1\s*$", re.DOTALL)

_KINDS: Final[Mapping[str, ToolKind]] = {kind: kind for kind in get_args(ToolKind)}
_STATUSES: Final[Mapping[str, ToolStatus]] = {status: status for status in get_args(ToolStatus)}
_CHUNKS: Final[Mapping[str, ChunkKind]] = {kind: kind for kind in get_args(ChunkKind)}
_PLAN_STATUSES: Final[Mapping[str, PlanStatus]] = {status: status for status in get_args(PlanStatus)}
_PRIORITIES: Final[Mapping[str, PlanPriority]] = {p: p for p in get_args(PlanPriority)}


# --- what an update says ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BridgeInfo:
    """`_meta.acpBridge` of a card: the tool's name, the note that says what decided the call, a command's
    working directory and description."""

    tool: str | None = None
    note: str | None = None
    cwd: str | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Exited:
    """`_meta.terminal_exit`: the card's command ended (with an exit code, or killed by a signal)."""

    exit_code: int | None = None
    signal: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a finished card's `rawOutput` says (the bridge's summary, `wire.RawOutput`): the error's
    message, and a command's exit code or signal."""

    error: str | None = None
    exit_code: int | None = None
    signal: str | None = None


@dataclass(frozen=True, slots=True)
class CardPatch:
    """One tool call update as data. Each field is None when the update leaves it as it was; `new`: a
    `tool_call` (the card starts afresh), else a `tool_call_update`. `output` is what
    `_meta.terminal_output` appends to the card's terminal; `parent` is `_meta.parentToolCallId`, the
    call of the program that made this one."""

    call_id: str
    new: bool = False
    title: str | None = None
    kind: ToolKind | None = None
    status: ToolStatus | None = None
    content: tuple[ToolCallContent, ...] | None = None
    locations: tuple[Location, ...] | None = None
    raw_input: Any = None
    raw_output: Any = None
    bridge: BridgeInfo | None = None
    output: str | None = None
    exited: Exited | None = None
    parent: str | None = None

    @property
    def texts(self) -> list[str]:
        """The texts of the update's content blocks (none when it carries no content)."""
        return texts_of(self.content or ())

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.raw_output)


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of the agent's answer or thoughts, or of the user's prompt; `text` None: not a text block."""

    kind: ChunkKind
    text: str | None


@dataclass(frozen=True, slots=True)
class PlanChange:
    """The whole plan, as the latest `plan` update lists it."""

    entries: tuple[PlanEntry, ...]


@dataclass(frozen=True, slots=True)
class ModeChange:
    mode_id: str


Event = CardPatch | TextChunk | PlanChange | ModeChange


# --- the card -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Card:
    """What a client shows for one tool call after the updates so far.

    `output` is the end (`OUTPUT_TAIL_CHARS`) of the card's terminal: the `_meta.terminal_output` deltas,
    or, for a card that embeds no terminal, the output inside its ```console block. `new_output` is what
    the latest update brought to it (a delta, or the console block's whole output), None when it brought
    none. `exited` is set once the terminal convention said the command ended. `parent`: the call of the
    program that made this one (None: a call of its own); once known it stays, since an update that
    carries no `_meta` (a status move) says nothing about it."""

    call_id: str
    title: str = ""
    kind: ToolKind = "other"
    status: ToolStatus = "pending"
    content: tuple[ToolCallContent, ...] = ()
    locations: tuple[Location, ...] = ()
    raw_input: Any = None
    raw_output: Any = None
    bridge: BridgeInfo = BridgeInfo()
    output: str = ""
    new_output: str | None = None
    exited: Exited | None = None
    parent: str | None = None

    @property
    def command(self) -> str | None:
        """A terminal call's command, from its arguments."""
        command = self.raw_input.get("command") if isinstance(self.raw_input, Mapping) else None
        return command if isinstance(command, str) else None

    @property
    def texts(self) -> list[str]:
        """The texts of the card's content blocks, in order."""
        return texts_of(self.content)

    @property
    def diffs(self) -> list[DiffItem]:
        return [block for block in self.content if block["type"] == "diff"]

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.raw_output)


def next_card(card: Card | None, patch: CardPatch) -> Card | None:
    """The card after `patch`: a `tool_call` starts it afresh, a `tool_call_update` replaces the fields it
    carries. None: an update for a card that never appeared (the client has nothing to change)."""
    if patch.new:
        return _patched(Card(patch.call_id), patch)
    return _patched(card, patch) if card is not None else None


def card_of(tool_call: Mapping[str, Any]) -> Card:
    """The card a single tool call shape shows on its own (e.g. the `toolCall` of a permission request)."""
    patch = read_patch(tool_call)
    return _patched(Card(patch.call_id), patch)


def _patched(card: Card, patch: CardPatch) -> Card:
    raw_input = patch.raw_input if patch.raw_input is not None else card.raw_input
    output, new_output = card.output, None
    if patch.output is not None:
        new_output = patch.output
        output = (output + patch.output)[-OUTPUT_TAIL_CHARS:]
    elif patch.content is not None and not any(block["type"] == "terminal" for block in patch.content):
        # Without an embedded terminal, the card shows its command's output in a ```console block.
        command = raw_input.get("command") if isinstance(raw_input, Mapping) else None
        new_output = console_output(patch.content, command if isinstance(command, str) else None)
        if new_output is not None:
            output = new_output[-OUTPUT_TAIL_CHARS:]
    return replace(
        card,
        title=patch.title if patch.title is not None else card.title,
        kind=patch.kind or card.kind,
        status=patch.status or card.status,
        content=patch.content if patch.content is not None else card.content,
        locations=patch.locations if patch.locations is not None else card.locations,
        raw_input=raw_input,
        raw_output=patch.raw_output if patch.raw_output is not None else card.raw_output,
        bridge=patch.bridge or card.bridge,
        output=output,
        new_output=new_output,
        exited=patch.exited or card.exited,
        parent=patch.parent or card.parent,
    )


def fold_cards(
    updates: Iterable[Mapping[str, Any]], cards: Mapping[str, Card] | None = None
) -> dict[str, Card]:
    """Every card after `updates` (in order), from `cards` (none by default)."""
    folded = dict(cards or {})
    for update in updates:
        event = read_update(update)
        if isinstance(event, CardPatch):
            card = next_card(folded.get(event.call_id), event)
            if card is not None:
                folded[event.call_id] = card
    return folded


# --- reading -------------------------------------------------------------------------------------------


def read_update(update: Mapping[str, Any]) -> Event | None:
    """One `session/update` payload as typed data (None: an update no face shows, or not an update)."""
    kind = update.get("sessionUpdate")
    if kind in ("tool_call", "tool_call_update"):
        patch = read_patch(update)
        return patch if patch.call_id else None
    chunk = _CHUNKS.get(kind) if isinstance(kind, str) else None
    if chunk is not None:
        content = update.get("content")
        text = content.get("text") if isinstance(content, Mapping) else None
        return TextChunk(chunk, text if isinstance(text, str) else None)
    if kind == "plan":
        entries = update.get("entries")
        return PlanChange(_plan_entries(entries)) if isinstance(entries, list) else None
    if kind == "current_mode_update":
        mode = update.get("currentModeId")
        return ModeChange(mode) if isinstance(mode, str) else None
    return None


def read_patch(update: Mapping[str, Any]) -> CardPatch:
    """The fields of a tool call shape (`call_id` "" when it has none). `new`: it is a `tool_call`."""
    call_id = update.get("toolCallId")
    title = update.get("title")
    kind = update.get("kind")
    status = update.get("status")
    content = update.get("content")
    locations = update.get("locations")
    meta = update.get("_meta")
    meta = meta if isinstance(meta, Mapping) else {}
    return CardPatch(
        call_id=call_id if isinstance(call_id, str) else "",
        new=update.get("sessionUpdate") == "tool_call",
        title=title if isinstance(title, str) else None,
        kind=_KINDS.get(kind) if isinstance(kind, str) else None,
        status=_STATUSES.get(status) if isinstance(status, str) else None,
        content=_content(content) if isinstance(content, list) else None,
        locations=_locations(locations) if isinstance(locations, list) else None,
        raw_input=update.get("rawInput"),
        raw_output=update.get("rawOutput"),
        bridge=_bridge(meta.get("acpBridge")),
        output=_terminal_data(meta.get("terminal_output")),
        exited=_exited(meta.get("terminal_exit")),
        parent=_optional_str(meta.get(PARENT_KEY)) or None,
    )


def texts_of(content: Iterable[ToolCallContent]) -> list[str]:
    """The texts of the content blocks that show text."""
    return [
        block["content"]["text"]
        for block in content
        if block["type"] == "content" and block["content"]["type"] == "text"
    ]


def outcome_of(raw_output: object) -> Outcome:
    """Read the bridge's `rawOutput` summary (anything else says nothing)."""
    if not isinstance(raw_output, Mapping):
        return Outcome()
    error = raw_output.get("error")
    message = error.get("message") if isinstance(error, Mapping) else None
    code = raw_output.get("exitCode")
    signal = raw_output.get("signal")
    return Outcome(
        error=message if isinstance(message, str) and message.strip() else None,
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        signal=str(signal) if signal else None,
    )


def console_output(content: Iterable[ToolCallContent], command: str | None) -> str | None:
    """The output inside the last ```console block of `content` (how the bridge shows a command without
    the terminal convention: `text.console`), without the `$ command` line(s) it starts with; None when
    there is no such block."""
    for text in reversed(texts_of(content)):
        match = _FENCE.match(text.strip())
        if match and text.lstrip("`").startswith("console"):
            body = match.group(2)
            shown = "$ " + command.strip("\n") if command else None
            if shown and body.startswith(shown):
                return body[len(shown) :].lstrip("\n")
            if body.startswith("$ "):
                return body.partition("\n")[2]  # a command we did not see announced: one line
            return body
    return None


def _content(blocks: list[Any]) -> tuple[ToolCallContent, ...]:
    out: list[ToolCallContent] = []
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "content":
            item = _content_item(block.get("content"))
            if item is not None:
                out.append(item)
        elif kind == "diff":
            path, old, new = block.get("path"), block.get("oldText"), block.get("newText")
            if isinstance(path, str):
                out.append(
                    {
                        "type": "diff",
                        "path": path,
                        "oldText": old if isinstance(old, str) else None,
                        "newText": new if isinstance(new, str) else "",
                    }
                )
        elif kind == "terminal":
            terminal_id = block.get("terminalId")
            if isinstance(terminal_id, str):
                out.append({"type": "terminal", "terminalId": terminal_id})
    return tuple(out)


def _content_item(inner: object) -> ContentItem | None:
    if not isinstance(inner, Mapping):
        return None
    if inner.get("type") == "text" and isinstance(inner.get("text"), str):
        return {"type": "content", "content": {"type": "text", "text": inner["text"]}}
    data, mime = inner.get("data"), inner.get("mimeType")
    if inner.get("type") == "image" and isinstance(data, str) and isinstance(mime, str):
        return {"type": "content", "content": {"type": "image", "data": data, "mimeType": mime}}
    return None


def _locations(raw: list[Any]) -> tuple[Location, ...]:
    out: list[Location] = []
    for item in raw:
        path = item.get("path") if isinstance(item, Mapping) else None
        if not isinstance(path, str):
            continue
        location: Location = {"path": path}
        line = item.get("line")
        if isinstance(line, int) and not isinstance(line, bool) and line >= 0:
            location["line"] = line
        out.append(location)
    return tuple(out)


def _plan_entries(raw: list[Any]) -> tuple[PlanEntry, ...]:
    entries: list[PlanEntry] = []
    for item in raw:
        if not isinstance(item, Mapping):
            continue
        content, status, priority = item.get("content"), item.get("status"), item.get("priority")
        plan_status = _PLAN_STATUSES.get(status) if isinstance(status, str) else None
        plan_priority = _PRIORITIES.get(priority) if isinstance(priority, str) else None
        if isinstance(content, str) and plan_status is not None and plan_priority is not None:
            entries.append({"content": content, "priority": plan_priority, "status": plan_status})
    return tuple(entries)


def _optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _bridge(raw: object) -> BridgeInfo | None:
    if not isinstance(raw, Mapping):
        return None
    return BridgeInfo(
        tool=_optional_str(raw.get("tool")),
        note=_optional_str(raw.get("note")),
        cwd=_optional_str(raw.get("cwd")),
        description=_optional_str(raw.get("description")),
    )


def _terminal_data(raw: object) -> str | None:
    return _optional_str(raw.get("data")) if isinstance(raw, Mapping) else None


def _exited(raw: object) -> Exited | None:
    if not isinstance(raw, Mapping):
        return None
    code = raw.get("exit_code")
    return Exited(
        exit_code=code if isinstance(code, int) and not isinstance(code, bool) else None,
        signal=_optional_str(raw.get("signal")),
    )
