"""A call's announcement, from the presenter's call view: the `tool_call` update
(`tool_call_started`), the update that turns a card announced while its arguments streamed into the full
one (`tool_call_refined`), a pending card redrawn from the tool's preview (`tool_call_previewed`), the
`toolCall` a permission request carries (`permission_tool_call`),
status-only updates (`tool_call_status`), a running terminal card's live output (`terminal_output`) and
any other running card's progress (`tool_call_progress`).

A terminal card's title is the command on one line; the command is also shown in full in a ```console
block when the title could not show it, when approving, or when the client has no terminal widget. With the
client's `_meta.terminal_output` opt-in the card embeds a display-only terminal and live output travels as
deltas; without it, each live frame re-sends a bounded tail as the card's content.

Must not: render results or close a call (results.py), or decide a permission (it only builds what the
request shows, and shows the arguments when the view has nothing else, so an approval is never blind).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, get_args

from registry_core.presentation import (
    CallViewT,
    DiffCallView,
    GenericCallView,
    StatusProgress,
    TerminalCallView,
)

from .blocks import bridge_meta, diff_blocks, diff_locations, file_locations, locations
from .budget import bound_update, bounded_raw_input
from .paths import card_title, resolve_path
from .text import console, console_text, fence, one_line, tail, text_block, truncate_middle
from .wire import (
    RAW_INPUT_MAX_BYTES,
    CardFields,
    CardMeta,
    ContentItem,
    Location,
    ToolCallContent,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
    ToolStatus,
    WireContext,
)

_ACP_KINDS: Final[Mapping[str, ToolKind]] = {kind: kind for kind in get_args(ToolKind)}


def tool_call_started(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> ToolCallStart:
    """The `tool_call` update announcing a call (`view` None → a generic card titled with the tool name)."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=False)
    update: ToolCallStart = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": status,
        "name": tool_name,
    }
    _put_card_fields(update, card, arguments, view)
    return bound_update(update, ctx.max_update_bytes)


def tool_call_refined(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> ToolCallProgress:
    """The `tool_call_update` that turns a card announced early (`tool_call_started` while the model still
    streamed the arguments) into the full card: the fields `tool_call_started` would send, with content
    and locations always set, since an update replaces them and none of the early card's may linger."""
    started = tool_call_started(ctx, call_id, tool_name, arguments, view, status)
    update: ToolCallProgress = {**started, "sessionUpdate": "tool_call_update"}
    update.setdefault("content", [])
    update.setdefault("locations", [])
    return update


def tool_call_previewed(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None
) -> ToolCallProgress:
    """The `tool_call_update` that redraws a pending card from the tool's preview (e.g. the hunks a write
    would apply to the file as it is now) before the user is asked: the card's fields as
    `tool_call_refined` sends them, without a status (the card stays where it is)."""
    update = tool_call_refined(ctx, call_id, tool_name, arguments, view, "pending")
    del update["status"]
    return update


def tool_call_status(ctx: WireContext, call_id: str, status: ToolStatus) -> ToolCallProgress:
    """A `tool_call_update` that only moves the status (e.g. pending → in_progress after approval)."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}


def terminal_output(
    ctx: WireContext,
    call_id: str,
    data: str,
    rendered_so_far: str,
    *,
    call_view: CallViewT | None = None,
) -> ToolCallProgress:
    """A live-output `tool_call_update` for a running terminal card.

    With the terminal opt-in: `_meta.terminal_output {terminal_id, data}` (a delta; never re-sends
    earlier output). Without it: the full fenced ```console block of `rendered_so_far` as content
    (content replaces; the caller bounds how often and how much it sends; only the last
    `LIVE_OUTPUT_TAIL_CHARS` are shown, behind a truncation marker). `call_view` (added) lets the
    fallback keep the description and command above the output, since content replaces the card's."""
    if ctx.terminal_meta:
        update: ToolCallProgress = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "_meta": {"terminal_output": {"terminal_id": call_id, "data": data}},
        }
        return bound_update(update, ctx.max_update_bytes)
    command = call_view.title if isinstance(call_view, TerminalCallView) else None
    content: list[ToolCallContent] = []
    if isinstance(call_view, TerminalCallView) and call_view.description:
        content.append(text_block(call_view.description))
    content.append(text_block(console(command, console_text(tail(rendered_so_far)))))
    fallback: ToolCallProgress = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "content": content,
    }
    return bound_update(fallback, ctx.max_update_bytes)


def tool_call_progress(
    ctx: WireContext, call_id: str, view: CallViewT | None, progress: StatusProgress
) -> ToolCallProgress:
    """A running card's progress (a tool that reports how far it is, e.g. an MCP server's
    `notifications/progress`): the call view's own content, then one line such as
    "Progress: 3 of 10 (30%) · Indexing". Content replaces, so each update carries the whole card."""
    content: list[ToolCallContent] = []
    if isinstance(view, GenericCallView):
        content = [text_block(c.text) for c in view.content if c.text]
    content.append(text_block(progress_line(progress)))
    update: ToolCallProgress = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "content": content,
    }
    return bound_update(update, ctx.max_update_bytes)


def progress_line(progress: StatusProgress) -> str:
    """A status progress as one line ("Progress: 3 of 10 (30%) · Indexing", or its message alone)."""

    def number(value: float) -> str:
        return f"{value:g}" if not value.is_integer() else str(int(value))

    parts: list[str] = []
    done, total = progress.progress, progress.total
    if done is not None and total is not None and total > 0:
        percent = max(0, min(100, round(100 * done / total)))
        parts.append(f"Progress: {number(done)} of {number(total)} ({percent}%)")
    elif done is not None:
        parts.append(f"Progress: {number(done)}")
    if progress.message and progress.message.strip():
        parts.append(one_line(progress.message)[0])
    return " · ".join(parts) or "Working…"


def permission_tool_call(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None, reason: str | None
) -> ToolCallUpdate:
    """The `toolCall` (a ToolCallUpdate) carried by session/request_permission: title, kind, the diff for
    edits and writes, the command for bash, locations, and the reason as text."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=True, reason=reason)
    update: ToolCallUpdate = {
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": "pending",
        "name": tool_name,
    }
    _put_card_fields(update, card, arguments, view)
    return bound_update(update, ctx.max_update_bytes)


@dataclass(slots=True)
class _CallCard:
    title: str
    kind: ToolKind
    content: list[ToolCallContent] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    meta: CardMeta = field(default_factory=lambda: CardMeta())


def _acp_kind(kind: str) -> ToolKind:
    return _ACP_KINDS.get(kind, "other")


def _call_card(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    *,
    permission: bool,
    reason: str | None = None,
) -> _CallCard:
    card: _CallCard
    if isinstance(view, TerminalCallView):
        card = _terminal_call_card(ctx, call_id, tool_name, view, permission=permission)
    elif isinstance(view, DiffCallView):
        paths = [d.path for d in view.diffs] + [loc.path for loc in view.locations]
        card = _CallCard(
            title=card_title(view.title, paths, ctx, tool_name),
            kind="edit",
            content=diff_blocks(view.diffs, ctx.cwd),
            locations=diff_locations(view.diffs, view.locations, ctx.cwd),
            meta={"acpBridge": bridge_meta(tool_name)},
        )
    elif isinstance(view, GenericCallView):
        card = _CallCard(
            title=card_title(view.title, [loc.path for loc in view.locations], ctx, tool_name),
            kind=_acp_kind(view.kind),
            content=[text_block(c.text) for c in view.content if c.text],
            locations=locations(file_locations(view.locations), ctx.cwd),
            meta={"acpBridge": bridge_meta(tool_name)},
        )
    else:
        card = _CallCard(
            title=card_title(None, (), ctx, tool_name),
            kind="other",
            meta={"acpBridge": bridge_meta(tool_name)},
        )
    if permission:
        if not card.content:
            raw = arguments
            if raw is None and isinstance(view, GenericCallView):
                raw = view.raw_input
            shown = _arguments_block(raw)
            if shown is not None:
                card.content.append(shown)
        if reason and reason.strip():
            card.content.insert(0, text_block(reason.strip()))
    return card


def _terminal_call_card(
    ctx: WireContext, call_id: str, tool_name: str, view: TerminalCallView, *, permission: bool
) -> _CallCard:
    command = view.title
    title, lossy = one_line(command)
    cwd = _terminal_cwd(view, ctx)
    content: list[ToolCallContent] = []
    if view.description and view.description.strip():
        content.append(text_block(view.description.strip()))
    # The title shows the command; repeat it in full when the title could not (several lines, cut),
    # when approving (the user must see exactly what runs), or when there is no terminal widget.
    if lossy or permission or not ctx.terminal_meta:
        content.append(text_block(console(command, None)))
    meta: CardMeta = {"acpBridge": bridge_meta(tool_name, description=view.description or None, cwd=cwd)}
    if ctx.terminal_meta:
        content.append({"type": "terminal", "terminalId": call_id})
        meta["terminal_info"] = {"terminal_id": call_id, "cwd": cwd}
    return _CallCard(
        title=title or one_line(tool_name)[0] or "tool", kind="execute", content=content, meta=meta
    )


def _terminal_cwd(view: TerminalCallView, ctx: WireContext) -> str:
    return resolve_path(view.cwd, ctx.cwd) if view.cwd else os.path.normpath(ctx.cwd)


def _put_card_fields(update: CardFields, card: _CallCard, arguments: Any, view: CallViewT | None) -> None:
    if card.content:
        update["content"] = card.content
    if card.locations:
        update["locations"] = card.locations
    raw = arguments
    if raw is None and isinstance(view, GenericCallView):
        raw = view.raw_input
    if raw is not None:
        update["rawInput"] = bounded_raw_input(raw)
    update["_meta"] = card.meta


def _arguments_block(arguments: Any) -> ContentItem | None:
    """The arguments as a ```json block, so an approval is never asked blind."""
    if arguments is None:
        return None
    if isinstance(arguments, str):
        return text_block(fence(truncate_middle(arguments, RAW_INPUT_MAX_BYTES // 2)))
    bounded = bounded_raw_input(arguments)
    if isinstance(bounded, str):
        return text_block(fence(bounded))
    if bounded == {}:
        return None
    return text_block(fence(json.dumps(bounded, ensure_ascii=False, indent=2), "json"))
