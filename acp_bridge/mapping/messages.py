"""Conversation updates: the agent, thought and user message chunks (a replayed prompt's blocks as the
user sent them: `user_content_chunk`), and the ACP `plan` that a todo tool's result meta carries
(`plan_from_result`), each within the payload budget.

Must not: know tools or cards; a plan is recognised by its shape alone, and a malformed one is no plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, get_args
from urllib.parse import unquote, urlsplit

from registry_core import ToolResult

from .budget import bound_update
from .text import truncate_middle
from .wire import (
    DEFAULT_MAX_UPDATE_BYTES,
    MAX_PLAN_CONTENT_CHARS,
    MAX_PLAN_ENTRIES,
    BlobResource,
    ChunkKind,
    EmbeddedResourceContent,
    ImageContent,
    MessageChunk,
    Plan,
    PlanEntry,
    PlanPriority,
    PlanStatus,
    ResourceLinkContent,
    TextResource,
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


def user_image_chunk(
    mime_type: str, data: str, *, uri: str | None = None, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> MessageChunk:
    """A `user_message_chunk` carrying an image of the user's prompt (replayed), or, when the image alone
    would not fit the payload budget, a line naming it (an image cannot be cut like text)."""
    if len(data) + 256 + len(uri or "") * 6 <= max_bytes:
        image: ImageContent = {"type": "image", "data": data, "mimeType": mime_type}
        if uri is not None:
            image["uri"] = uri
        return {"sessionUpdate": "user_message_chunk", "content": image}
    return _chunk("user_message_chunk", f"[image {mime_type}, {len(data) * 3 // 4} bytes: too large to show]",
                  None, max_bytes)  # fmt: skip


def user_content_chunk(
    block: Mapping[str, Any], *, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES
) -> MessageChunk | None:
    """A `user_message_chunk` showing one ACP content block of a replayed prompt as the user sent it
    (text, image, resource_link, resource), within the payload budget: a text is cut in the middle, an
    image too large becomes a line naming it, an embedded resource's text is cut, its blob too large
    becomes a `resource_link` naming it. None for a block of no such shape (nothing to show)."""
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return user_message_chunk(text, max_bytes=max_bytes) if isinstance(text, str) else None
    if kind == "image":
        data, mime, uri = block.get("data"), block.get("mimeType"), block.get("uri")
        if not isinstance(data, str) or not isinstance(mime, str):
            return None
        return user_image_chunk(mime, data, uri=uri if isinstance(uri, str) else None, max_bytes=max_bytes)
    if kind == "resource_link":
        link = _link(block)
        return _user_chunk(link, max_bytes) if link is not None else None
    resource = block.get("resource") if kind == "resource" else None
    if not isinstance(resource, Mapping) or not isinstance(resource.get("uri"), str):
        return None
    return _embedded_chunk(resource, max_bytes)


def user_prompt_chunks(
    text: str,
    images: Sequence[tuple[str, str]],
    blocks: Sequence[Mapping[str, Any]] | None,
    *,
    message_id: str | None = None,
    max_bytes: int = DEFAULT_MAX_UPDATE_BYTES,
) -> list[MessageChunk]:
    """A user's prompt shown as they sent it: one `user_message_chunk` per content block (`blocks`, as
    logged), or, without them (text alone, an older log), its text then its `images` (mime type, base64
    data). Each chunk carries `message_id` when given (its bytes taken from the budget), so a client tells
    this message from the ones around it."""
    budget = max_bytes - (len(message_id) * 6 + 32 if message_id is not None else 0)
    chunks: list[MessageChunk] = []
    if blocks is not None:
        for block in blocks:
            chunk = user_content_chunk(block, max_bytes=budget)
            if chunk is not None:
                chunks.append(chunk)
    else:
        if text:
            chunks.append(user_message_chunk(text, max_bytes=budget))
        chunks.extend(user_image_chunk(mime_type, data, max_bytes=budget) for mime_type, data in images)
    if message_id is not None:
        for chunk in chunks:
            chunk["messageId"] = message_id
    return chunks


def _link(block: Mapping[str, Any]) -> ResourceLinkContent | None:
    uri, name = block.get("uri"), block.get("name")
    if not isinstance(uri, str):
        return None
    link: ResourceLinkContent = {
        "type": "resource_link",
        "uri": uri,
        "name": name if isinstance(name, str) else resource_name(uri),
    }
    for key in ("title", "description", "mimeType"):
        value = block.get(key)
        if isinstance(value, str):
            link[key] = value
    size = block.get("size")
    if isinstance(size, int) and not isinstance(size, bool):
        link["size"] = size
    return link


def _embedded_chunk(resource: Mapping[str, Any], max_bytes: int) -> MessageChunk | None:
    uri, text, blob = resource["uri"], resource.get("text"), resource.get("blob")
    mime = resource.get("mimeType") if isinstance(resource.get("mimeType"), str) else None
    if isinstance(text, str):
        shown: TextResource = {"uri": uri, "text": text}
        if mime is not None:
            shown["mimeType"] = mime
        return _user_chunk({"type": "resource", "resource": shown}, max_bytes)
    if not isinstance(blob, str):
        return None
    # base64 needs no escaping: the blob's length is its serialised size.
    if len(blob) + 6 * (len(uri) + len(mime or "")) + 256 <= max_bytes:
        kept: BlobResource = {"uri": uri, "blob": blob}
        if mime is not None:
            kept["mimeType"] = mime
        return {"sessionUpdate": "user_message_chunk", "content": {"type": "resource", "resource": kept}}
    # Bytes cannot be cut like text: the chip stays, naming the resource.
    link: ResourceLinkContent = {
        "type": "resource_link",
        "uri": uri,
        "name": resource_name(uri),
        "size": len(blob.rstrip("=")) * 3 // 4,
    }
    if mime is not None:
        link["mimeType"] = mime
    return _user_chunk(link, max_bytes)


def _user_chunk(content: ResourceLinkContent | EmbeddedResourceContent, max_bytes: int) -> MessageChunk:
    update: MessageChunk = {"sessionUpdate": "user_message_chunk", "content": content}
    return bound_update(update, max_bytes)


def resource_name(uri: str) -> str:
    """A resource's name from its URI (for a `resource_link`, which needs one): the last segment of its
    path, else the URI itself."""
    return unquote(urlsplit(uri).path).rstrip("/").rpartition("/")[2] or uri
