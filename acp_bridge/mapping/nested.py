"""Nested calls on the wire: the calls a composite tool's program made (Code Mode sub-calls) and the card
of the call that made them.

A nested call is a card of its own, built by the same functions as any call, whose updates also carry
`_meta.parentToolCallId` (the id of the program's call): every update that carries `_meta` does, since an
update's `_meta` replaces the card's. A client that knows the key nests the card under its program's; one
that does not shows it as a card of its own. A permission question about a nested call names the program
it comes from.

The program's card lists its nested calls, one line each with its status (`NestedLine`), after the card's
own content (the program), and its locations are its own followed by every nested call's (deduplicated,
capped). The list is redrawn when nested calls move (`program_calls_update`) and kept in the final update
(`with_nested_calls`).

Must not: know which tool is a program (any card may have nested calls), or change a nested card's fields
other than its `_meta`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

from registry_core.presentation import CallViewT

from .budget import bound_update
from .calls import tool_call_refined
from .text import one_line, text_block
from .wire import (
    MAX_LOCATIONS,
    ContentItem,
    Location,
    ToolCallContent,
    ToolCallProgress,
    ToolCallUpdate,
    ToolStatus,
    WireContext,
)

# A card's update of any shape (a nested call's card is built like any other); it keeps its type.
CardUpdate = TypeVar("CardUpdate", bound=Mapping[str, object])

PARENT_KEY: Final = "parentToolCallId"
MAX_NESTED_LINES: Final = 200
_MARKS: Final = {"pending": "…", "in_progress": "▸", "completed": "✓", "failed": "✗"}
_WORDS: Final = {"pending": " (waiting)", "in_progress": " (running)", "completed": "", "failed": " (failed)"}


@dataclass(frozen=True, slots=True)
class NestedLine:
    """One nested call as its program's card lists it: its card's title and status."""

    title: str
    status: ToolStatus


def with_parent(update: CardUpdate, parent_id: str) -> CardUpdate:
    """`update` of a nested call, its `_meta` (when it has one) naming the program's call."""
    meta = update.get("_meta")
    if not isinstance(meta, dict):
        return update
    out: dict[str, Any] = {**update, "_meta": {**meta, PARENT_KEY: parent_id}}
    return cast(CardUpdate, out)


def nested_permission_call(
    tool_call: ToolCallUpdate, parent_id: str, program: str, *, asker: str = "the program"
) -> ToolCallUpdate:
    """The `toolCall` of a permission question about a nested call: the call's own card, headed by a line
    naming the program it comes from (`program`: the program card's title; `asker`: what made the call,
    "the program" of a Code Mode call, "the subagent" of a task)."""
    out = copy.copy(tool_call)
    content = list(out.get("content") or [])
    content.insert(0, text_block(f"Asked by {asker} of `{one_line(program)[0]}` (call {parent_id})."))
    out["content"] = content
    return with_parent(out, parent_id)


def nested_lines_block(lines: Sequence[NestedLine], status: str | None = None) -> ContentItem:
    """The text block listing a program's nested calls, in the order they were made; `status` (what the
    program reports it is doing, e.g. a subagent's "Step 3") heads it while the program runs."""
    shown = [
        f"{i}. {_MARKS.get(line.status, '•')} {one_line(line.title)[0]}{_WORDS.get(line.status, '')}"
        for i, line in enumerate(lines[:MAX_NESTED_LINES], start=1)
    ]
    if len(lines) > MAX_NESTED_LINES:
        shown.append(f"… and {len(lines) - MAX_NESTED_LINES} more calls")
    calls = "call" if len(lines) == 1 else "calls"
    head = f"{one_line(status)[0]} · " if status else ""
    return text_block(f"{head}{len(lines)} tool {calls}:\n" + "\n".join(shown))


def merged_locations(*groups: Sequence[Location]) -> list[Location]:
    """Locations in order, each once, at most `MAX_LOCATIONS`."""
    out: list[Location] = []
    seen: set[tuple[Any, Any]] = set()
    for group in groups:
        for location in group:
            key = (location.get("path"), location.get("line"))
            if key in seen:
                continue
            seen.add(key)
            out.append(location)
            if len(out) >= MAX_LOCATIONS:
                return out
    return out


def program_calls_update(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    lines: Sequence[NestedLine],
    nested_locations: Sequence[Location],
    status: str | None = None,
) -> ToolCallProgress:
    """The `tool_call_update` that redraws a running program's card with its nested calls listed (no
    status field: the card stays where it is), headed by the program's `status` line when it reports one."""
    update = tool_call_refined(ctx, call_id, tool_name, arguments, view, "in_progress")
    del update["status"]
    return with_nested_calls(update, lines, nested_locations, ctx, status=status)


def with_nested_calls(
    update: CardUpdate,
    lines: Sequence[NestedLine],
    nested_locations: Sequence[Location],
    ctx: WireContext,
    card_content: Sequence[ToolCallContent] = (),
    *,
    status: str | None = None,
) -> CardUpdate:
    """A program card's update with its nested calls listed and their locations after its own. The list
    follows the card's own content (`card_content`, what its call card showed: the program) when the
    update repeats it, and ends the content otherwise; an update without content (a completion keeping
    the card's) lists them after `card_content`, since the list alone would replace it."""
    if not lines:
        return update
    out: dict[str, Any] = dict(update)
    content = list(out.get("content") or card_content)
    at = (
        len(card_content)
        if card_content and content[: len(card_content)] == list(card_content)
        else len(content)
    )
    content.insert(at, nested_lines_block(lines, status))
    out["content"] = content
    locations = merged_locations(out.get("locations") or [], nested_locations)
    if locations:
        out["locations"] = locations
    return cast(CardUpdate, bound_update(out, ctx.max_update_bytes))
