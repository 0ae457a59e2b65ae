"""Images on the model side: which models can see them, how one is described in words, and the
conversation as a model without vision is given it (each image named in text instead).

Vision is known from the model's name (`vision_by_name`: the families whose chat endpoints take OpenAI
`image_url` parts) unless the deployment says otherwise (`--vision` / `--no-vision`). The scripted model
accepts images and can describe what it was shown (the script's `describe_images` step field), so
images can be tested offline.

Must not: decode more of an image than its header (sizes are read from the first bytes), or drop an
image silently: a model that cannot see one is told in text that it was there.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from acp_bridge.models.base import ImageData, Message, ToolResultMessage, UserMessage
from registry_core import ContentBlock, ImageBlock

# What the OpenAI-compatible vision endpoints accept as `image_url` data URLs.
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})

# Model names (after `openai:`) whose endpoints take images, as a case-insensitive pattern on the name.
# A name matching none of them is taken as text-only; `--vision` says otherwise for one deployment.
_VISION_MODELS: Final = re.compile(
    r"gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-4-vision|gpt-5|o1(?!-mini)|o3|o4|chatgpt-4o"
    r"|claude-3|claude-(?:opus|sonnet|haiku)|gemini|pixtral|llava|bakllava|moondream|minicpm-v"
    r"|qwen[\w.-]*-?vl|qwen2\.5-omni|glm-4v|internvl|llama-3\.2-\d+b-vision|llama-4|vision|-vl\b",
    re.IGNORECASE,
)


def vision_by_name(model_name: str) -> bool:
    """Whether the model a backend's name designates (`scripted:...`, `openai:MODEL`) takes images,
    from the name alone: the scripted model always does; others by the family table above."""
    kind, _, model = model_name.partition(":")
    if kind == "scripted":
        return True
    return bool(_VISION_MODELS.search(model or kind))


def decoded_size(data: str) -> int:
    """The byte size of base64 `data` (without decoding it)."""
    stripped = data.rstrip("=")
    return len(stripped) * 3 // 4


def image_dimensions(image: ImageData) -> tuple[int, int] | None:
    """(width, height) read from the image's header (PNG, GIF, JPEG, WebP), or None when unknown."""
    try:
        head = base64.b64decode(image.data[:44_000], validate=False)
    except (binascii.Error, ValueError):
        return None
    try:
        if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
            width, height = struct.unpack(">II", head[16:24])
            return int(width), int(height)
        if head[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", head[6:10])
            return int(width), int(height)
        if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
            return _webp_dimensions(head)
        if head.startswith(b"\xff\xd8"):
            return _jpeg_dimensions(head)
    except struct.error:
        return None
    return None


def _webp_dimensions(head: bytes) -> tuple[int, int] | None:
    chunk = head[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(head[24:27], "little") + 1
        height = int.from_bytes(head[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 ":
        width, height = struct.unpack("<HH", head[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":
        bits = int.from_bytes(head[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _jpeg_dimensions(head: bytes) -> tuple[int, int] | None:
    index = 2
    while index + 9 < len(head):
        if head[index] != 0xFF:
            return None
        marker = head[index + 1]
        length = int.from_bytes(head[index + 2 : index + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
            height, width = struct.unpack(">HH", head[index + 5 : index + 9])
            return int(width), int(height)
        index += 2 + length
    return None


def describe_image(image: ImageData) -> str:
    """A short description: "image/png 64×32, 1.2 KB (from the prompt)"."""
    size = decoded_size(image.data)
    shown = f"{size} bytes" if size < 1024 else f"{size / 1024:.1f} KB"
    dims = image_dimensions(image)
    where = "the prompt" if image.source == "prompt" else f"`{image.source}`"
    return f"{image.mime_type}{f' {dims[0]}×{dims[1]}' if dims else ''}, {shown} (from {where})"


def image_placeholder(image: ImageData) -> str:
    """What a model without vision reads in place of an image."""
    return f"[An image was attached here ({describe_image(image)}); this model cannot see images.]"


def images_of(messages: Sequence[Message]) -> list[ImageData]:
    """Every image in the conversation, in order (the prompt's and the tools')."""
    out: list[ImageData] = []
    for message in messages:
        if isinstance(message, (UserMessage, ToolResultMessage)):
            out.extend(message.images)
    return out


def without_images(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The conversation as a model without vision is given it: each image replaced by a line of text."""
    out: list[Message] = []
    for message in messages:
        if isinstance(message, UserMessage) and message.images:
            notes = "\n".join(image_placeholder(image) for image in message.images)
            out.append(UserMessage(f"{message.text}\n\n{notes}" if message.text else notes))
        elif isinstance(message, ToolResultMessage) and message.images:
            notes = "\n".join(image_placeholder(image) for image in message.images)
            out.append(replace(message, content=f"{message.content}\n{notes}", images=()))
        else:
            out.append(message)
    return tuple(out)


def data_url(image: ImageData) -> str:
    """The image as an OpenAI `image_url` data URL."""
    return f"data:{image.mime_type};base64,{image.data}"


def result_images(tool: str, content: Sequence[ContentBlock]) -> tuple[ImageData, ...]:
    """The images among a tool result's content blocks, as the model is given them."""
    return tuple(ImageData(b.mime_type, b.data, tool) for b in content if isinstance(b, ImageBlock))
