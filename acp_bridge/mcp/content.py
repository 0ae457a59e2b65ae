"""An MCP tool result, from what the server sent to what the model is told and what the card shows.

`bound_result` turns a `CallToolResult` (as JSON) into the call's value: its content items normalised and
held to the payload budget (text for the model up to `MAX_TEXT_CHARS`, images up to `MAX_IMAGE_CHARS` of
base64, structured content up to `MAX_STRUCTURED_BYTES` of JSON), with a note saying what was cut, so
a server's megabytes never reach the model, the session log or the editor whole. `model_content` renders
that value as the model's content blocks (text and images; a resource link as a textual reference, an
embedded text resource as its text under a header) together with the card's layout: which of those
blocks the card shows, in the server's order, and the resources it shows as resources. The layout goes
into the durable result meta, so a replayed card is drawn from exactly what the live one was.

Must not: import the MCP SDK (the value is plain JSON), or keep anything unbounded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from registry_core import ContentBlock, ImageBlock, TextBlock

MAX_TEXT_CHARS: Final = 50_000
MAX_IMAGE_CHARS: Final = 1024 * 1024
MAX_STRUCTURED_BYTES: Final = 64 * 1024
MAX_ERROR_CHARS: Final = 10_000

Item = dict[str, Any]
Layout = list[dict[str, Any]]


class _Budget:
    def __init__(self) -> None:
        self.text_left = MAX_TEXT_CHARS
        self.image_left = MAX_IMAGE_CHARS
        self.text_total = 0
        self.text_cut = False
        self.images_dropped = 0

    def text(self, text: str) -> str:
        self.text_total += len(text)
        if len(text) <= self.text_left:
            self.text_left -= len(text)
            return text
        kept, self.text_left = text[: self.text_left], 0
        self.text_cut = True
        return kept

    def image(self, data: str) -> bool:
        if len(data) <= self.image_left:
            self.image_left -= len(data)
            return True
        self.images_dropped += 1
        return False


def _optional(raw: Mapping[str, Any], item: Item, *keys: str) -> Item:
    for key in keys:
        value = raw.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            item[key] = value
    return item


def _item(raw: object, budget: _Budget) -> Item | None:
    """One content item, normalised and bounded (None: nothing left to say within the budget)."""
    if not isinstance(raw, Mapping):
        return {"type": "text", "text": "[a content item that is not an object]"}
    kind = raw.get("type")
    if kind == "text":
        text = budget.text(str(raw.get("text", "")))
        return {"type": "text", "text": text} if text or not budget.text_cut else None
    if kind == "image":
        data, mime = str(raw.get("data", "")), str(raw.get("mimeType", "image/png"))
        if budget.image(data):
            return {"type": "image", "data": data, "mimeType": mime}
        return {
            "type": "text",
            "text": f"[image {mime}, {len(data)} bytes of base64: over the result budget]",
        }
    if kind == "audio":
        data = str(raw.get("data", ""))
        return {"type": "audio", "mimeType": str(raw.get("mimeType", "audio")), "size": len(data)}
    if kind == "resource_link":
        link = {"type": "resource_link", "uri": str(raw.get("uri", "")), "name": str(raw.get("name", ""))}
        return _optional(raw, link, "title", "description", "mimeType", "size")
    if kind == "resource":
        resource = raw.get("resource")
        resource = resource if isinstance(resource, Mapping) else {}
        embedded = _optional(resource, {"type": "resource", "uri": str(resource.get("uri", ""))}, "mimeType")
        if isinstance(resource.get("text"), str):
            embedded["text"] = budget.text(resource["text"])
        else:
            embedded["blobSize"] = len(str(resource.get("blob", "")))
        return embedded
    return {"type": "text", "text": f"[content of type {kind!r}, which the bridge does not show]"}


def bound_result(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The call's value from a `CallToolResult` as JSON (see the module docstring)."""
    budget = _Budget()
    items: list[Item] = []
    content = raw.get("content")
    for entry in content if isinstance(content, list) else ():
        item = _item(entry, budget)
        if item is not None:
            items.append(item)
    value: dict[str, Any] = {"content": items}
    notes: list[str] = []
    structured = raw.get("structuredContent")
    if structured is not None:
        size = len(json.dumps(structured, ensure_ascii=False))
        if size <= MAX_STRUCTURED_BYTES:
            value["structuredContent"] = structured
            if not items:
                # Content is the model's view; a server that sent only structured data says it there.
                items.append(
                    {"type": "text", "text": budget.text(json.dumps(structured, ensure_ascii=False))}
                )
        else:
            notes.append(
                f"[The server's structured content ({size} bytes of JSON) is over the "
                f"{MAX_STRUCTURED_BYTES}-byte budget and was left out.]"
            )
    if budget.text_cut:
        notes.append(
            f"[The result was cut for the model: {MAX_TEXT_CHARS} of its {budget.text_total} characters "
            "are shown. Ask the tool for a smaller part if you need the rest.]"
        )
    if budget.images_dropped:
        notes.append(f"[{budget.images_dropped} image(s) over the {MAX_IMAGE_CHARS}-byte budget left out.]")
    if notes:
        value["notes"] = notes
    return value


def model_content(value: Mapping[str, Any]) -> tuple[tuple[ContentBlock, ...], Layout]:
    """The model's content blocks for a value of `bound_result`, and the card's layout over them."""
    blocks: list[ContentBlock] = []
    layout: Layout = []

    def add(block: ContentBlock) -> int:
        blocks.append(block)
        return len(blocks) - 1

    for item in value.get("content") or ():
        kind = item.get("type")
        if kind == "text":
            layout.append({"text": add(TextBlock(str(item.get("text", ""))))})
        elif kind == "image":
            layout.append({"image": add(ImageBlock(str(item["data"]), str(item["mimeType"])))})
        elif kind == "audio":
            layout.append(
                {"text": add(TextBlock(f"[audio {item.get('mimeType')}, {item.get('size')} bytes]"))}
            )
        elif kind == "resource_link":
            link = {k: v for k, v in item.items() if k != "type"}
            add(TextBlock(_link_text(link)))
            layout.append({"link": link})
        elif kind == "resource":
            uri, mime = str(item.get("uri", "")), item.get("mimeType")
            if isinstance(item.get("text"), str):
                add(TextBlock(f"[Resource {uri}" + (f" ({mime})" if mime else "") + "]"))
                text_index = add(TextBlock(item["text"]))
                resource = {"uri": uri} | ({"mimeType": mime} if mime else {})
                layout.append({"resource": resource, "text": text_index})
            else:
                size = item.get("blobSize", 0)
                add(
                    TextBlock(
                        f"[Resource {uri}" + (f" ({mime})" if mime else "") + f": {size} bytes, binary]"
                    )
                )
                name = uri.rstrip("/").rpartition("/")[2] or uri
                link = {"uri": uri, "name": name} | ({"mimeType": mime} if mime else {})
                layout.append({"link": link})
    for note in value.get("notes") or ():
        layout.append({"text": add(TextBlock(str(note)))})
    return tuple(blocks), layout


def _link_text(link: Mapping[str, Any]) -> str:
    label = link.get("title") or link.get("name") or link.get("uri")
    details = [str(link[k]) for k in ("description", "mimeType") if isinstance(link.get(k), str)]
    if isinstance(link.get("size"), int):
        details.append(f"{link['size']} bytes")
    return f"[Resource: {label}]({link.get('uri')})" + (f" ({'; '.join(details)})" if details else "")


def error_message(raw: Mapping[str, Any]) -> str:
    """The text of an `isError: true` result: what the server said went wrong."""
    texts: list[str] = []
    content = raw.get("content")
    for item in content if isinstance(content, Sequence) else ():
        if isinstance(item, Mapping) and item.get("type") == "text" and isinstance(item.get("text"), str):
            texts.append(item["text"])
    message = "\n".join(t for t in texts if t.strip()).strip()
    if len(message) > MAX_ERROR_CHARS:
        message = message[:MAX_ERROR_CHARS] + "…"
    return message or "The MCP server reported an error without a message."
