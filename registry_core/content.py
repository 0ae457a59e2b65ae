"""Model-facing content blocks and context messages.

`ContentBlock`s are what the model receives as a tool result (and what `render` produces). They are frozen
dataclasses with a `to_json()` so durable events and the bridge serialise them without knowing their
class. `ContextMessage` is one extra user-role message a hook asks the loop to append after the results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True, slots=True)
class TextBlock:
    text: str
    type: Literal["text"] = "text"

    def to_json(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@dataclass(frozen=True, slots=True)
class ImageBlock:
    data: str  # base64
    mime_type: str
    type: Literal["image"] = "image"

    def to_json(self) -> dict[str, Any]:
        return {"type": "image", "data": self.data, "mimeType": self.mime_type}


ContentBlock = TextBlock | ImageBlock


def content_from_json(raw: Mapping[str, Any]) -> ContentBlock:
    kind = raw.get("type")
    if kind == "text" and isinstance(raw.get("text"), str):
        return TextBlock(raw["text"])
    if kind == "image" and isinstance(raw.get("data"), str) and isinstance(raw.get("mimeType"), str):
        return ImageBlock(raw["data"], raw["mimeType"])
    raise ValueError(f"not a content block: {dict(raw)!r}")


def text(value: str) -> tuple[ContentBlock, ...]:
    """Shorthand for the common single-text-block content."""
    return (TextBlock(value),)


def content_text(content: tuple[ContentBlock, ...] | list[ContentBlock]) -> str:
    """The text of every text block, joined; images become a short placeholder."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        else:
            parts.append(f"[image {block.mime_type}]")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class ContextMessage:
    """A user-role message appended after a step's tool results (hook context, nested-call context)."""

    content: tuple[ContentBlock, ...]
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": [b.to_json() for b in self.content]}
        if self.source is not None:
            out["source"] = self.source
        return out
