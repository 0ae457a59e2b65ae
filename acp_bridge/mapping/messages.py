"""Conversation updates: the agent, thought and user message chunks, and the ACP `plan` that a todo
tool's result meta carries (`plan_from_result`), each within the payload budget.

Must not: know tools or cards; a plan is recognised by its shape alone, and a malformed one is no plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from registry_core import ToolResult

from .budget import _fit
from .text import _truncate_middle
from .wire import DEFAULT_MAX_UPDATE_BYTES, MAX_PLAN_CONTENT_CHARS, MAX_PLAN_ENTRIES, Update

_PLAN_STATUSES: Final = frozenset({"pending", "in_progress", "completed"})
_PLAN_PRIORITIES: Final = frozenset({"high", "medium", "low"})


def plan_from_result(result: ToolResult) -> Update | None:
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
    entries: list[dict[str, Any]] = []
    for item in items:
        if not isinstance(item, Mapping):
            return None
        content = item.get("content")
        status = item.get("status")
        priority = item.get("priority")
        if priority is None:
            priority = "medium"
        if not isinstance(content, str) or status not in _PLAN_STATUSES or priority not in _PLAN_PRIORITIES:
            return None
        if len(entries) < MAX_PLAN_ENTRIES:
            entries.append(
                {
                    "content": _truncate_middle(content, MAX_PLAN_CONTENT_CHARS),
                    "priority": priority,
                    "status": status,
                }
            )
    return {"sessionUpdate": "plan", "entries": entries}


def agent_message_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> Update:
    return _chunk("agent_message_chunk", text, message_id, max_bytes)


def agent_thought_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> Update:
    return _chunk("agent_thought_chunk", text, message_id, max_bytes)


def user_message_chunk(
    text: str, *, message_id: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> Update:
    return _chunk("user_message_chunk", text, message_id, max_bytes)


def _chunk(kind: str, text: str, message_id: str | None, max_bytes: int) -> Update:
    update: Update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return _fit(update, max_bytes)


def user_image_chunk(mime_type: str, data: str, *, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES) -> Update:
    """A `user_message_chunk` carrying an image of the user's prompt (replayed), or, when the image alone
    would not fit the payload budget, a line naming it (an image cannot be cut like text)."""
    if len(data) + 256 <= max_bytes:
        return {
            "sessionUpdate": "user_message_chunk",
            "content": {"type": "image", "data": data, "mimeType": mime_type},
        }
    return _chunk("user_message_chunk", f"[image {mime_type}, {len(data) * 3 // 4} bytes: too large to show]",
                  None, max_bytes)  # fmt: skip
