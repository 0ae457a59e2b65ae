"""An ACP prompt (`session/prompt`'s content blocks) read into the text the model is given.

Must not: accept content the agent does not advertise in `promptCapabilities` (images, audio, embedded
resources): a block the model would never see is refused, naming the block, rather than dropped.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import InvalidParams, quoted

# What a refused block is, in the error message.
_UNACCEPTED = {"image": "images", "audio": "audio", "resource": "embedded resources"}


def prompt_text(blocks: object) -> str:
    """The model-facing text of an ACP prompt: text blocks as is, resource links as textual references,
    joined by blank lines.

    Raises InvalidParams for an empty prompt and for content this agent does not accept, naming the block
    at fault.
    """
    if not isinstance(blocks, list):
        raise InvalidParams("prompt must be a list of content blocks")
    parts = [_block_text(i, block) for i, block in enumerate(blocks)]
    text = "\n\n".join(p for p in parts if p)
    if not text.strip():
        raise InvalidParams("the prompt is empty: send at least one non-empty text or resource_link block")
    return text


def _block_text(i: int, block: object) -> str:
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
