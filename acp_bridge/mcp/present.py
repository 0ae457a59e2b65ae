"""MCP tool cards, in the registry's card vocabulary: pure functions of the arguments and the durable result.

The pending card is titled `server: tool` plus a short summary of the arguments (`github: create_issue
(title="Crash on start", labels=[…])`); its kind comes from the tool's annotations (`readOnlyHint` →
read, `destructiveHint` → delete, explicitly non-destructive → edit, `openWorldHint` → fetch); the
arguments themselves travel as the card's raw input, and a permission question shows them as formatted
JSON. The completed card shows the server's content as it sent it: text, images, resource links and
embedded resources (the layout `content.model_content` stored in the result meta), and its
`structuredContent` as the card's raw output; a failed call shows the server's message.

Annotations only inform the card and the plan-mode class: they are the server's claims, so they never
skip a permission question (see `acp_bridge/permissions/`).

`presentation_definition(name)` gives a replayed session the same cards for an MCP tool whose server is
not (or no longer) running: the result's meta names the server, the tool and the kind.

Must not: do I/O or import the MCP SDK.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, cast, get_args

from registry_core import (
    ContentImage,
    ContentResource,
    ContentResourceLink,
    ContentText,
    GenericCallView,
    GenericResultView,
    ImageBlock,
    ResultContent,
    TextBlock,
    ToolCallKind,
    ToolDefinition,
    ToolError,
    ToolOutputDefinition,
    ToolResult,
    ToolRunContext,
)

from .naming import split_tool_name

SUMMARY_ARGS: Final = 3
SUMMARY_VALUE_CHARS: Final = 40


@dataclass(frozen=True, slots=True)
class ToolFacts:
    """What the bridge knows of one MCP tool for its cards and its policy."""

    server: str
    tool: str
    kind: ToolCallKind = "other"
    read_only: bool = False  # `readOnlyHint: true`: may run in plan mode (it still asks)
    exclusive: bool = False  # `destructiveHint: true`: never runs alongside another call

    def meta(self) -> dict[str, Any]:
        """The part of the result meta that lets a replay draw this tool's cards without the server."""
        return {"server": self.server, "tool": self.tool, "kind": self.kind}


def facts_of(server: str, tool: Mapping[str, Any]) -> ToolFacts:
    """A tool's facts from its `tools/list` entry (JSON), annotations read as the spec's hints."""
    raw = tool.get("annotations")
    hints = raw if isinstance(raw, Mapping) else {}

    def hint(key: str) -> bool | None:
        value = hints.get(key)
        return value if isinstance(value, bool) else None

    read_only, destructive, open_world = hint("readOnlyHint"), hint("destructiveHint"), hint("openWorldHint")
    kind: ToolCallKind = "other"
    if read_only:
        kind = "fetch" if open_world else "read"
    elif destructive:
        kind = "delete"
    elif open_world:
        kind = "fetch"
    elif destructive is False or read_only is False:
        kind = "edit"
    return ToolFacts(server, str(tool.get("name", "")), kind, read_only is True, destructive is True)


def _facts_from_meta(meta: Any, fallback: ToolFacts | None) -> ToolFacts | None:
    if (
        isinstance(meta, Mapping)
        and isinstance(meta.get("server"), str)
        and isinstance(meta.get("tool"), str)
    ):
        kind = meta.get("kind")
        known = cast(ToolCallKind, kind) if isinstance(kind, str) and kind in _KINDS else "other"
        return ToolFacts(meta["server"], meta["tool"], known)
    return fallback


_KINDS: Final[frozenset[str]] = frozenset(get_args(ToolCallKind))


# --- titles ---------------------------------------------------------------------------------------


def _short(value: Any) -> str:
    if isinstance(value, str):
        text = value if len(value) <= SUMMARY_VALUE_CHARS else value[: SUMMARY_VALUE_CHARS - 1] + "…"
        return json.dumps(text, ensure_ascii=False)
    if isinstance(value, Mapping):
        return "{…}" if value else "{}"
    if isinstance(value, (list, tuple)):
        return "[…]" if value else "[]"
    return json.dumps(value)


def title(server: str, tool: str, arguments: Any) -> str:
    """`server: tool`, then up to `SUMMARY_ARGS` arguments as `key=value` (long values cut)."""
    head = f"{server}: {tool}"
    if not isinstance(arguments, Mapping) or not arguments:
        return head
    items = list(arguments.items())
    shown = [f"{key}={_short(value)}" for key, value in items[:SUMMARY_ARGS]]
    if len(items) > SUMMARY_ARGS:
        shown.append("…")
    return f"{head} ({', '.join(shown)})"


# --- views ----------------------------------------------------------------------------------------


def call_view(facts: ToolFacts, arguments: Any) -> GenericCallView:
    return GenericCallView(title=title(facts.server, facts.tool, arguments), kind=facts.kind)


def _literal(text: str) -> str:
    """Server text shown as written: several lines go in a fence Markdown cannot reflow or close."""
    stripped = text.strip("\n")
    if "\n" not in stripped:
        return stripped
    run = longest = 0
    for char in stripped:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{stripped}\n{fence}"


def _card_items(layout: Any, content: tuple[Any, ...]) -> tuple[ResultContent, ...] | None:
    """The card's content from the stored layout over the result's content; None when there is none."""
    if not isinstance(layout, (list, tuple)):  # a tuple once the meta was frozen
        return None

    def block(index: Any) -> Any:
        ok = isinstance(index, int) and not isinstance(index, bool) and 0 <= index < len(content)
        return content[index] if ok else None

    items: list[ResultContent] = []
    for entry in layout:
        if not isinstance(entry, Mapping):
            continue
        if "link" in entry and isinstance(entry["link"], Mapping):
            link = entry["link"]
            size = link.get("size")
            items.append(
                ContentResourceLink(
                    uri=str(link.get("uri", "")),
                    name=str(link.get("name", "")),
                    title=link.get("title") if isinstance(link.get("title"), str) else None,
                    description=link.get("description") if isinstance(link.get("description"), str) else None,
                    mime_type=link.get("mimeType") if isinstance(link.get("mimeType"), str) else None,
                    size=size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None,
                )
            )
        elif "resource" in entry and isinstance(entry["resource"], Mapping):
            text = block(entry.get("text"))
            if isinstance(text, TextBlock):
                resource = entry["resource"]
                mime = resource.get("mimeType")
                items.append(
                    ContentResource(
                        uri=str(resource.get("uri", "")),
                        text=text.text,
                        mime_type=mime if isinstance(mime, str) else None,
                    )
                )
        elif "image" in entry:
            image = block(entry["image"])
            if isinstance(image, ImageBlock):
                items.append(ContentImage(data=image.data, mime_type=image.mime_type))
        elif "text" in entry:
            text = block(entry["text"])
            if isinstance(text, TextBlock) and text.text.strip():
                items.append(ContentText(text=_literal(text.text)))
    return tuple(items)


def result_view(facts: ToolFacts | None, arguments: Any, result: ToolResult) -> GenericResultView | None:
    """The completed card. A failure keeps the title and kind; the mapping shows the server's message."""
    known = _facts_from_meta(result.meta, facts)
    if known is None:
        return None
    heading = title(known.server, known.tool, arguments)
    if result.is_error:
        return GenericResultView(title=heading, kind=known.kind)
    meta = result.meta if isinstance(result.meta, Mapping) else {}
    items = _card_items(meta.get("layout"), result.content)
    if items is not None and not items:
        items = (ContentText(text="The tool returned no content."),)
    return GenericResultView(title=heading, kind=known.kind, content=items, raw_output=meta.get("structured"))


# --- a definition for cards only ------------------------------------------------------------------


async def _not_running(_args: Any, _ctx: ToolRunContext) -> Any:
    raise ToolError("This MCP tool's server is not running in this session.")


def presentation_definition(name: str) -> ToolDefinition | None:
    """A stand-in definition that draws an MCP tool's cards from its name and the result's meta, for a
    replayed (or otherwise unknown) MCP call; None for a name that is not an MCP tool's."""
    parts = split_tool_name(name)
    if parts is None:
        return None
    facts = ToolFacts(*parts)
    return ToolDefinition(
        name=name,
        description="",
        parameters={"type": "object"},
        output=ToolOutputDefinition(schema={}, render=lambda _a, _v: ()),
        execute=_not_running,
        present_call=lambda args: call_view(facts, args),
        present_result=lambda args, result: result_view(facts, args, result),
        open_parameters=True,
    )
