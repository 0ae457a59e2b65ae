"""An ACP prompt (`session/prompt`'s content blocks) read into what the model is given: its text and its
images.

- `text` blocks as is; `resource_link` blocks as Markdown references the model can act on (`read` it);
- `resource` blocks (embedded context: a file, a selection, a diagnostic the editor attached) with their
  URI and text, inside `<resource uri="...">` tags; all of them together bounded by
  `CONTEXT_BUDGET_BYTES` (the longest are cut in the middle first, with a marker saying how much was
  left out); a binary resource (`blob`) is an image when it is one the model could see, else described
  by URI, type and size, never dropped silently;
- `image` blocks (and image blobs) as `ImageData`; whether the model can see them is the session's call.

A prompt with more than text also keeps its blocks as the client sent them (`Prompt.blocks`), for the
session log, so `session/load` replays what the user sent (their words and the attachment chips), not the
text the model was given. They are bounded as the model's text is: a text resource carries the text the
model got (cut with the same marker), a binary one is kept while all of them fit `CONTEXT_BUDGET_BYTES`
and becomes a `resource_link` (its URI, name, type and size) past it; images are kept whole (the log
stores each one once).

Must not: accept content the agent does not advertise in `promptCapabilities` (audio): a block the
model would never see is refused, naming the block, rather than dropped.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from acp_bridge.common.errors import InvalidParams, quoted
from acp_bridge.mapping import resource_name
from acp_bridge.models import ImageData
from acp_bridge.models.images import IMAGE_TYPES, decoded_size
from registry_core import JsonValue, snapshot

# Embedded context, all resources of one prompt together, in UTF-8 bytes: enough for a few whole
# source files, small enough that one attachment cannot crowd the conversation out of the context.
CONTEXT_BUDGET_BYTES: Final = 256 * 1024
# One image, decoded: what OpenAI-compatible vision endpoints take (20 MB), with room for base64.
MAX_IMAGE_BYTES: Final = 15 * 1024 * 1024

# What a refused block is, in the error message.
_UNACCEPTED = {"audio": "audio"}
_MIN_KEEP: Final = 512


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the model is given for one prompt."""

    text: str
    images: tuple[ImageData, ...] = ()
    # The prompt's ACP content blocks as sent, bounded (see the module's docstring); None when they are
    # all text: the text says all they did.
    blocks: tuple[JsonValue, ...] | None = None


def prompt_text(blocks: object) -> str:
    """The model-facing text of an ACP prompt (see `read_prompt`; images are left out)."""
    return read_prompt(blocks).text


def read_prompt(blocks: object, *, budget: int = CONTEXT_BUDGET_BYTES) -> Prompt:
    """The prompt's text (blocks joined by blank lines) and its images. Raises InvalidParams for an empty
    prompt, for content this agent does not accept and for a malformed block, naming the block at
    fault."""
    if not isinstance(blocks, list):
        raise InvalidParams("prompt must be a list of content blocks")
    parts: list[str | _Resource] = []
    images: list[ImageData] = []
    for i, block in enumerate(blocks):
        part = _block(i, block, images)
        if part:
            parts.append(part)
    resources = [p for p in parts if isinstance(p, _Resource)]
    _bound(resources, budget)
    text = "\n\n".join(p if isinstance(p, str) else p.render() for p in parts)
    if not text.strip() and not images:
        raise InvalidParams("the prompt is empty: send at least one non-empty text or resource_link block")
    return Prompt(text, tuple(images), _logged(blocks, iter(resources), budget))


@dataclass(slots=True)
class _Resource:
    """An embedded text resource; `text` may be cut by the budget (`omitted` bytes left out)."""

    uri: str
    mime_type: str | None
    text: str
    omitted: int = 0

    def render(self) -> str:
        kind = f' mimeType="{self.mime_type}"' if self.mime_type else ""
        body = self.text.rstrip("\n")
        return f'<resource uri="{self.uri}"{kind}>\n{body}\n</resource>'


def _block(i: int, block: object, images: list[ImageData]) -> str | _Resource:
    if not isinstance(block, Mapping):
        raise InvalidParams(f"prompt[{i}] must be a content block object")
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise InvalidParams(f"prompt[{i}].text must be a string")
        return text
    if kind == "resource_link":
        return _resource_link(i, block)
    if kind == "resource":
        return _embedded(i, block, images)
    if kind == "image":
        images.append(_image(f"prompt[{i}]", block.get("mimeType"), block.get("data")))
        return ""
    if isinstance(kind, str) and kind in _UNACCEPTED:
        raise InvalidParams(
            f"prompt[{i}] is {quoted(kind)} content, but this agent does not accept {_UNACCEPTED[kind]} "
            "(its promptCapabilities say so); send text, or a resource_link to the file instead"
        )
    raise InvalidParams(f"prompt[{i}] has unknown content type {quoted(kind)}")


def _resource_link(i: int, block: Mapping[object, object]) -> str:
    """A link as a Markdown reference the model can act on (e.g. `read` the file it names), with what the
    client said about it."""
    uri, name = block.get("uri"), block.get("name")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams(f"prompt[{i}].uri must be a non-empty string")
    label = block.get("title") or name or uri
    ref = f"[Resource: {label}]({uri})"
    details = [str(block[k]) for k in ("description", "mimeType") if isinstance(block.get(k), str)]
    size = block.get("size")
    if isinstance(size, int):
        details.append(f"{size} bytes")
    return ref + (f" ({'; '.join(details)})" if details else "")


def _embedded(i: int, block: Mapping[object, object], images: list[ImageData]) -> str | _Resource:
    resource = block.get("resource")
    if not isinstance(resource, Mapping):
        raise InvalidParams(f"prompt[{i}].resource must be an object with a uri and a text or a blob")
    uri = resource.get("uri")
    if not isinstance(uri, str) or not uri:
        raise InvalidParams(f"prompt[{i}].resource.uri must be a non-empty string")
    mime = resource.get("mimeType")
    mime = mime if isinstance(mime, str) and mime else None
    text = resource.get("text")
    if isinstance(text, str):
        return _Resource(uri, mime, text)
    blob = resource.get("blob")
    if not isinstance(blob, str):
        raise InvalidParams(f"prompt[{i}].resource needs a text or a blob")
    if mime in IMAGE_TYPES:
        images.append(_image(f"prompt[{i}].resource", mime, blob))
        return f"[Attached image: {uri}]"
    size = decoded_size(blob)
    return (
        f"[Attached binary resource: {uri} ({mime or 'unknown type'}, {size} bytes). Its content is not "
        "shown here: it is not text. Use the tools to inspect the file if it is on disk.]"
    )


def _image(where: str, mime: object, data: object) -> ImageData:
    if not isinstance(mime, str) or mime not in IMAGE_TYPES:
        raise InvalidParams(
            f"{where} is an image of type {quoted(mime)}; "
            f"images must be one of {', '.join(sorted(IMAGE_TYPES))}"
        )
    if not isinstance(data, str) or not data:
        raise InvalidParams(f"{where}.data must be base64-encoded image bytes")
    if decoded_size(data) > MAX_IMAGE_BYTES:
        raise InvalidParams(f"{where} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB")
    try:
        # The first 4 KB (a whole number of base64 quanta) tell a mangled payload from an image.
        base64.b64decode(data if len(data) <= 4096 else data[:4096], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidParams(f"{where}.data is not base64") from None
    return ImageData(mime, data)


def _bound(resources: list[_Resource], budget: int) -> None:
    """Cut the resources' texts so they total at most `budget` UTF-8 bytes: a water level, so the long
    ones shrink and the short ones stay whole; each cut in the middle, with a marker."""
    sizes = [len(r.text.encode("utf-8")) for r in resources]
    if sum(sizes) <= budget:
        return
    level = _water_level(sizes, budget)
    for resource, size in zip(resources, sizes, strict=True):
        if size > level:
            keep = max(level, _MIN_KEEP)
            raw = resource.text.encode("utf-8")
            head = raw[: keep // 2].decode("utf-8", "ignore")
            tail = raw[size - keep // 2 :].decode("utf-8", "ignore")
            resource.omitted = size - keep
            resource.text = (
                f"{head}\n[… {resource.omitted} bytes of this resource left out: the prompt's attachments "
                f"are limited to {budget // 1024} KB; read the file for the rest …]\n{tail}"
            )


def _logged(blocks: list[Any], resources: Iterator[_Resource], budget: int) -> tuple[JsonValue, ...] | None:
    """The prompt's blocks (already read, so well-formed) as the session log keeps them: each with the
    fields the ACP schema gives its type, a text resource with the text the model got (`resources`, in
    order), a binary one as a `resource_link` once the blobs kept would pass `budget`. None when every
    block is text."""
    if all(block["type"] == "text" for block in blocks):
        return None
    blob_room = budget
    logged: list[dict[str, Any]] = []
    for block in blocks:
        kind = block["type"]
        if kind == "text":
            logged.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            logged.append(_fields(block, "image", ("data", "mimeType", "uri")))
        elif kind == "resource_link":
            link = _fields(
                block, "resource_link", ("uri", "name", "title", "description", "mimeType", "size")
            )
            link.setdefault("name", resource_name(block["uri"]))
            logged.append(link)
        elif isinstance(block["resource"].get("text"), str):
            resource = next(resources)
            kept = _fields(block["resource"], None, ("uri", "mimeType"))
            logged.append({"type": "resource", "resource": {**kept, "text": resource.text}})
        else:
            embedded = block["resource"]
            blob, mime = embedded["blob"], embedded.get("mimeType")
            # An image's blob is one of the prompt's images, which the log keeps anyway.
            counted = 0 if mime in IMAGE_TYPES else len(blob)
            if counted > blob_room:
                logged.append(_blob_link(embedded["uri"], mime, blob))
                continue
            blob_room -= counted
            logged.append(
                {"type": "resource", "resource": _fields(embedded, None, ("uri", "mimeType", "blob"))}
            )
    return tuple(snapshot(block) for block in logged)


def _fields(block: Mapping[str, Any], kind: str | None, names: tuple[str, ...]) -> dict[str, Any]:
    """`block`'s fields among `names` that have their schema type (`size` an integer, the rest strings)."""
    kept: dict[str, Any] = {"type": kind} if kind is not None else {}
    for name in names:
        value = block.get(name)
        wanted = (
            isinstance(value, int) and not isinstance(value, bool)
            if name == "size"
            else isinstance(value, str)
        )
        if wanted:
            kept[name] = value
    return kept


def _blob_link(uri: str, mime: object, blob: str) -> dict[str, Any]:
    """A binary resource too large to keep, as a link naming it."""
    link: dict[str, Any] = {"type": "resource_link", "uri": uri, "name": resource_name(uri)}
    if isinstance(mime, str) and mime:
        link["mimeType"] = mime
    link["size"] = decoded_size(blob)
    return link


def _water_level(sizes: list[int], budget: int) -> int:
    """The largest cap c with sum(min(size, c)) <= budget."""
    remaining, ordered = budget, sorted(sizes)
    for index, size in enumerate(ordered):
        left = len(ordered) - index
        if size * left <= remaining:
            remaining -= size
            continue
        return remaining // left
    return ordered[-1] if ordered else budget
