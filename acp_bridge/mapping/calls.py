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
from dataclasses import dataclass, field
from typing import Any, Final

from registry_core.presentation import (
    CallViewT,
    DiffCallView,
    GenericCallView,
    StatusProgress,
    TerminalCallView,
)

from .blocks import _bridge_meta, _diff_blocks, _diff_locations, _file_locations, _locations
from .budget import _bounded_raw_input, _fit
from .paths import _card_title, resolve_path
from .text import _console, _console_text, _fence, _one_line, _tail, _text_block, _truncate_middle
from .wire import RAW_INPUT_MAX_BYTES, ToolStatus, Update, WireContext

_ACP_KINDS: Final = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)


def tool_call_started(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> Update:
    """The `tool_call` update announcing a call (`view` None → a generic card titled with the tool name)."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=False)
    update: Update = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": status,
    }
    _put_card_fields(update, card, arguments, view)
    return _fit(update, ctx.max_update_bytes)


def tool_call_refined(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> Update:
    """The `tool_call_update` that turns a card announced early (`tool_call_started` while the model still
    streamed the arguments) into the full card: the fields `tool_call_started` would send, with content
    and locations always set, since an update replaces them and none of the early card's may linger."""
    update = tool_call_started(ctx, call_id, tool_name, arguments, view, status)
    update["sessionUpdate"] = "tool_call_update"
    update.setdefault("content", [])
    update.setdefault("locations", [])
    return update


def tool_call_previewed(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None
) -> Update:
    """The `tool_call_update` that redraws a pending card from the tool's preview (e.g. the hunks a write
    would apply to the file as it is now) before the user is asked: the card's fields as
    `tool_call_refined` sends them, without a status (the card stays where it is)."""
    update = tool_call_refined(ctx, call_id, tool_name, arguments, view, "pending")
    del update["status"]
    return update


def tool_call_status(ctx: WireContext, call_id: str, status: ToolStatus) -> Update:
    """A `tool_call_update` that only moves the status (e.g. pending → in_progress after approval)."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}


def terminal_output(
    ctx: WireContext,
    call_id: str,
    data: str,
    rendered_so_far: str,
    *,
    call_view: CallViewT | None = None,
) -> Update:
    """A live-output `tool_call_update` for a running terminal card.

    With the terminal opt-in: `_meta.terminal_output {terminal_id, data}` (a delta; never re-sends
    earlier output). Without it: the full fenced ```console block of `rendered_so_far` as content
    (content replaces; the caller bounds how often and how much it sends; only the last
    `LIVE_OUTPUT_TAIL_CHARS` are shown, behind a truncation marker). `call_view` (added) lets the
    fallback keep the description and command above the output, since content replaces the card's."""
    if ctx.terminal_meta:
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "_meta": {"terminal_output": {"terminal_id": call_id, "data": data}},
        }
        return _fit(update, ctx.max_update_bytes)
    command = call_view.title if isinstance(call_view, TerminalCallView) else None
    content: list[dict[str, Any]] = []
    if isinstance(call_view, TerminalCallView) and call_view.description:
        content.append(_text_block(call_view.description))
    content.append(_text_block(_console(command, _console_text(_tail(rendered_so_far)))))
    return _fit(
        {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": content},
        ctx.max_update_bytes,
    )


def tool_call_progress(
    ctx: WireContext, call_id: str, view: CallViewT | None, progress: StatusProgress
) -> Update:
    """A running card's progress (a tool that reports how far it is, e.g. an MCP server's
    `notifications/progress`): the call view's own content, then one line such as
    "Progress: 3 of 10 (30%) · Indexing". Content replaces, so each update carries the whole card."""
    content: list[dict[str, Any]] = []
    if isinstance(view, GenericCallView):
        content = [_text_block(c.text) for c in view.content if c.text]
    content.append(_text_block(_progress_line(progress)))
    update: Update = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": content}
    return _fit(update, ctx.max_update_bytes)


def _progress_line(progress: StatusProgress) -> str:
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
        parts.append(_one_line(progress.message)[0])
    return " · ".join(parts) or "Working…"


def permission_tool_call(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None, reason: str | None
) -> Update:
    """The `toolCall` (a ToolCallUpdate) carried by session/request_permission: title, kind, the diff for
    edits and writes, the command for bash, locations, and the reason as text."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=True, reason=reason)
    update: Update = {
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": "pending",
    }
    _put_card_fields(update, card, arguments, view)
    return _fit(update, ctx.max_update_bytes)


@dataclass(slots=True)
class _Card:
    title: str
    kind: str
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


def _acp_kind(kind: str) -> str:
    return kind if kind in _ACP_KINDS else "other"


def _call_card(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    *,
    permission: bool,
    reason: str | None = None,
) -> _Card:
    card: _Card
    if isinstance(view, TerminalCallView):
        card = _terminal_call_card(ctx, call_id, tool_name, view, permission=permission)
    elif isinstance(view, DiffCallView):
        paths = [d.path for d in view.diffs] + [loc.path for loc in view.locations]
        card = _Card(
            title=_card_title(view.title, paths, ctx, tool_name),
            kind="edit",
            content=_diff_blocks(view.diffs, ctx.cwd),
            locations=_diff_locations(view.diffs, view.locations, ctx.cwd),
            meta={"acpBridge": _bridge_meta(tool_name)},
        )
    elif isinstance(view, GenericCallView):
        card = _Card(
            title=_card_title(view.title, [loc.path for loc in view.locations], ctx, tool_name),
            kind=_acp_kind(view.kind),
            content=[_text_block(c.text) for c in view.content if c.text],
            locations=_locations(_file_locations(view.locations), ctx.cwd),
            meta={"acpBridge": _bridge_meta(tool_name)},
        )
    else:
        card = _Card(
            title=_card_title(None, (), ctx, tool_name),
            kind="other",
            meta={"acpBridge": _bridge_meta(tool_name)},
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
            card.content.insert(0, _text_block(reason.strip()))
    return card


def _terminal_call_card(
    ctx: WireContext, call_id: str, tool_name: str, view: TerminalCallView, *, permission: bool
) -> _Card:
    command = view.title
    title, lossy = _one_line(command)
    cwd = _terminal_cwd(view, ctx)
    content: list[dict[str, Any]] = []
    if view.description and view.description.strip():
        content.append(_text_block(view.description.strip()))
    # The title shows the command; repeat it in full when the title could not (several lines, cut),
    # when approving (the user must see exactly what runs), or when there is no terminal widget.
    if lossy or permission or not ctx.terminal_meta:
        content.append(_text_block(_console(command, None)))
    meta: dict[str, Any] = {
        "acpBridge": _bridge_meta(tool_name, description=view.description or None, cwd=cwd)
    }
    if ctx.terminal_meta:
        content.append({"type": "terminal", "terminalId": call_id})
        meta["terminal_info"] = {"terminal_id": call_id, "cwd": cwd}
    return _Card(title=title or _one_line(tool_name)[0] or "tool", kind="execute", content=content, meta=meta)


def _terminal_cwd(view: TerminalCallView, ctx: WireContext) -> str:
    return resolve_path(view.cwd, ctx.cwd) if view.cwd else os.path.normpath(ctx.cwd)


def _put_card_fields(update: Update, card: _Card, arguments: Any, view: CallViewT | None) -> None:
    if card.content:
        update["content"] = card.content
    if card.locations:
        update["locations"] = card.locations
    raw = arguments
    if raw is None and isinstance(view, GenericCallView):
        raw = view.raw_input
    if raw is not None:
        update["rawInput"] = _bounded_raw_input(raw)
    update["_meta"] = card.meta


def _arguments_block(arguments: Any) -> dict[str, Any] | None:
    """The arguments as a ```json block, so an approval is never asked blind."""
    if arguments is None:
        return None
    if isinstance(arguments, str):
        return _text_block(_fence(_truncate_middle(arguments, RAW_INPUT_MAX_BYTES // 2)))
    bounded = _bounded_raw_input(arguments)
    if isinstance(bounded, str):
        return _text_block(_fence(bounded))
    if bounded == {}:
        return None
    return _text_block(_fence(json.dumps(bounded, ensure_ascii=False, indent=2), "json"))
