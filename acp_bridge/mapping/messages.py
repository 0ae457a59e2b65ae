"""Conversation updates: the agent, thought and user message chunks, and the ACP `plan` that a todo
tool's result meta carries (`plan_from_result`), each within the payload budget.

Must not: know tools or cards; a plan is recognised by its shape alone, and a malformed one is no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, get_args

from registry_core import ToolResult

from .budget import bound_update
from .text import truncate_middle
from .wire import (
    DEFAULT_MAX_UPDATE_BYTES,
    MAX_PLAN_CONTENT_CHARS,
    MAX_PLAN_ENTRIES,
    ChunkKind,
    MessageChunk,
    Plan,
    PlanEntry,
    PlanPriority,
    PlanStatus,
)

_PLAN_STATUSES: Final[Mapping[str, PlanStatus]] = {status: status for status in get_args(PlanStatus)}
_PLAN_PRIORITIES: Final[Mapping[str, PlanPriority]] = {p: p for p in get_args(PlanPriority)}


def plan_from_result(result: ToolResult) -> Plan | None:
    """An ACP `plan` update when the result's meta carries a plan (`{"todos": [...]}` or `{"plan": [...]}`
    of {content, status, priority?}); otherwise None."""
    if result.is_error:
        return None  # a failed todo write did not change the plan
    meta = result.meta
    if not isinstance(meta, Mapping):
        return None
    items = meta["todos"] if "todos" in meta else meta.get("plan")
    if not isinstance(items, (list, tuple)):
        return None
    entries: list[PlanEntry] = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        content = item.get("content")
        raw_status = item.get("status")
        raw_priority = item.get("priority")
        status = _PLAN_STATUSES.get(raw_status) if isinstance(raw_status, str) else None
        priority = _PLAN_PRIORITIES.get(raw_priority) if isinstance(raw_priority, str) else None
        if raw_priority is None:
            priority = "medium"
        if not isinstance(content, str) or status is None or priority is None:
            return None
        if len(entries) < MAX_PLAN_ENTRIES:
            entries.append(
                {
                    "content": truncate_middle(content, MAX_PLAN_CONTENT_CHARS),
                    "priority": priority,
                    "status": status,
                }
            )
    return {"sessionUpdate": "plan", "entries": entries}


def agent_message_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> MessageChunk:
    return _chunk("agent_message_chunk", text, message_id, max_bytes)


def agent_thought_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> MessageChunk:
    return _chunk("agent_thought_chunk", text, message_id, max_bytes)


def user_message_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> MessageChunk:
    return _chunk("user_message_chunk", text, message_id, max_bytes)


def _chunk(kind: ChunkKind, text: str, message_id: str | None, max_bytes: int) -> MessageChunk:
    update: MessageChunk = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return bound_update(update, max_bytes)


def user_image_chunk(mime_type: str, data: str, *, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES) -> MessageChunk:
    """A `user_message_chunk` carrying an image of the user's prompt (replayed), or, when the image alone
    would not fit the payload budget, a line naming it (an image cannot be cut like text)."""
    if len(data) + 256 <= max_bytes:
        return {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "image", "data": data, "mimeType": mime_type},
        }
    return _chunk("user_message_chunk", f"[image {mime_type}, {len(data) * 3 // 4} bytes: too large to show]",
                  None, max_bytes)  # fmt: skip
