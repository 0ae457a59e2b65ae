"""Result views → the content of a finished card: diffs, search hits grouped by file, a numbered read
window fenced in the file's language, a fetched page or web-search sources, and for any other view the
model-facing content (the never-blank fallback). A failed call always says why, and a note (e.g. which
remembered permission rule decided it) goes first.

Must not: build the update around the card (status, rawOutput and the terminal protocol are results.py's),
or list without a cap: locations, sources and search lines are bounded here, the budget cuts the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import add

from registry_core import ToolResult
from registry_core.content import ContentBlock, ImageBlock, TextBlock, content_text
from registry_core.presentation import (
    CallViewT,
    ContentImage,
    ContentResourceLink,
    ContentText,
    DiffCallView,
    DiffResultView,
    GenericCallView,
    GenericResultView,
    ReadResultView,
    ResultContent,
    ResultViewT,
    SearchResultView,
    WebResultView,
)

from .blocks import diff_blocks, diff_locations, locations
from .paths import card_title, display_path
from .text import block_text, fence, inline_code, link, literal, one_line, text_block
from .wire import (
    MAX_LOCATIONS,
    MAX_SEARCH_LINE_CHARS,
    MAX_WEB_SOURCES,
    ContentItem,
    Location,
    ResourceLinkContent,
    TextResource,
    ToolCallContent,
    ToolKind,
    WireContext,
)


@dataclass(slots=True)
class ResultCard:
    """What a finished card shows; None title / kind: keep the pending card's."""

    title: str | None = None
    kind: ToolKind | None = None
    content: list[ToolCallContent] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)


def result_card(
    ctx: WireContext,
    call_view: CallViewT | None,
    result: ToolResult,
    view: ResultViewT | None,
    note: str | None,
) -> ResultCard:
    """The finished card of a result view (the model-facing content when there is none), with the reason
    of a failure and `note` first."""
    card = ResultCard()
    call_paths: list[str] = []
    if isinstance(call_view, (GenericCallView, DiffCallView)):
        call_paths = [loc.path for loc in call_view.locations]
    if isinstance(call_view, DiffCallView):
        call_paths += [d.path for d in call_view.diffs]

    if isinstance(view, DiffResultView):
        card.kind = "edit"
        card.content = diff_blocks(view.diffs, ctx.cwd)
        card.locations = diff_locations(view.diffs, view.locations, ctx.cwd)
        paths = [d.path for d in view.diffs] + [loc.path for loc in view.locations] + call_paths
    elif isinstance(view, SearchResultView):
        card.kind = "search"
        text, pairs = _search_text(view, ctx.cwd)
        card.content = [text_block(text)]
        card.locations = locations(pairs, ctx.cwd)
        paths = [m.path for m in view.matches[:MAX_LOCATIONS]] + list(view.paths[:MAX_LOCATIONS]) + call_paths
    elif isinstance(view, ReadResultView):
        card.kind = "read"
        card.content = [text_block(_read_text(view))]
        first = view.lines[0].number if view.lines else view.offset
        card.locations = locations([(view.path, first)], ctx.cwd)
        paths = [view.path, *call_paths]
    elif isinstance(view, WebResultView):
        card.kind = "fetch"
        card.content = _web_blocks(view, result)
        paths = call_paths
    elif isinstance(view, GenericResultView):
        card.kind = view.kind
        card.content = _result_content_blocks(view.content or (), ctx.max_update_bytes)
        paths = call_paths
    else:
        paths = call_paths

    if view is not None and view.title:
        card.title = card_title(view.title, paths, ctx, view.title)
    if not card.content:
        card.content = _raw_content_blocks(result.content, ctx.max_update_bytes)

    # A failed call always says why, unless its content already does.
    message = error_message(result)
    if message is not None and not any(message in block_text(b) for b in card.content):
        card.content.insert(0, text_block(fence(message)))
    if note and note.strip():
        card.content.insert(0, text_block(note.strip()))
    return card


def error_message(result: ToolResult) -> str | None:
    """Why a failed result failed (None for a success)."""
    if not result.is_error:
        return None
    if result.error is not None and result.error.message.strip():
        return result.error.message.strip()
    text = content_text(result.content).strip()
    return text or "the tool failed"


def _raw_content_blocks(content: Sequence[ContentBlock], max_bytes: int) -> list[ToolCallContent]:
    """The model-facing result content as card blocks (the never-blank fallback)."""
    blocks: list[ToolCallContent] = []
    images = _ImageBudget(max_bytes // 2)
    for block in content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                blocks.append(text_block(literal(block.text)))
        elif isinstance(block, ImageBlock):
            blocks.append(images.block(block.data, block.mime_type))
    return blocks


def _result_content_blocks(content: Sequence[ResultContent], max_bytes: int) -> list[ToolCallContent]:
    """A result view's own content: Markdown text, images (within the image budget) and resources, as
    ACP content blocks (a resource link stays a link; an embedded resource carries its text)."""
    blocks: list[ToolCallContent] = []
    images = _ImageBudget(max_bytes // 2)
    for item in content:
        if isinstance(item, ContentText):
            if item.text:
                blocks.append(text_block(item.text))
        elif isinstance(item, ContentImage):
            blocks.append(images.block(item.data, item.mime_type))
        elif isinstance(item, ContentResourceLink):
            link: ResourceLinkContent = {"type": "resource_link", "uri": item.uri, "name": item.name}
            if item.title is not None:
                link["title"] = item.title
            if item.description is not None:
                link["description"] = item.description
            if item.mime_type is not None:
                link["mimeType"] = item.mime_type
            if item.size is not None:
                link["size"] = item.size
            blocks.append({"type": "content", "content": link})
        else:
            resource: TextResource = {"uri": item.uri, "text": item.text}
            if item.mime_type is not None:
                resource["mimeType"] = item.mime_type
            blocks.append({"type": "content", "content": {"type": "resource", "resource": resource}})
    return blocks


class _ImageBudget:
    """Images cannot be cut like text: past the budget (bytes of base64), they are named instead."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def block(self, data: str, mime_type: str) -> ContentItem:
        size = len(data)
        if size > self.left:
            return text_block(f"[image {mime_type}, {size} bytes: too large to show]")
        self.left -= size
        return {"type": "content", "content": {"type": "image", "data": data, "mimeType": mime_type}}


def _search_text(view: SearchResultView, cwd: str) -> tuple[str, list[tuple[str, int | None]]]:
    """Readable search results, grouped by file (`path:line: text`), and one location per match."""
    pairs: list[tuple[str, int | None]] = []
    groups: list[str] = []
    if view.shape == "paths":
        shown = len(view.paths)
        groups = [display_path(p, cwd) for p in view.paths]
        pairs = [(p, None) for p in view.paths]
        noun = "path" if view.total == 1 else "paths"
        header = f"Found {view.total:,} {noun}" if view.total else "No files found."
        listing = "\n".join(groups)
    else:
        listed_lines = sum(len(m.lines) for m in view.matches)
        shown = listed_lines or len(view.matches)
        for match in view.matches:
            shown_path = display_path(match.path, cwd)
            if match.lines:
                rows = []
                for line in match.lines:
                    snippet = one_line(line.text.replace("\t", "    "), MAX_SEARCH_LINE_CHARS)[0]
                    rows.append(f"{shown_path}:{line.number}: {snippet}")
                    pairs.append((match.path, line.number))
                groups.append("\n".join(rows))
            elif match.count is not None:
                groups.append(f"{shown_path}: {match.count} {'match' if match.count == 1 else 'matches'}")
                pairs.append((match.path, None))
            else:
                groups.append(shown_path)
                pairs.append((match.path, None))
        files = len(view.matches)
        if not view.total and not view.matches:
            header = "No matches."
        elif listed_lines and view.truncated:
            # The totals are the search's; the lines and files shown are said apart (the files of
            # `matches` are only those shown).
            found = f" in {_count(view.files, 'file')}" if view.files is not None else ""
            header = (
                f"{_count(view.total, 'match')}{found}; showing the first {_count(shown, 'match')} "
                f"in {_count(files, 'file')}"
            )
        elif listed_lines:
            header = f"Found {_count(view.total, 'match')} in {_count(files, 'file')}"
        else:
            header = f"Found {view.total:,} {'result' if view.total == 1 else 'results'}"
        listing = "\n\n".join(groups)
    if view.truncated and not (view.shape == "matches" and listed_lines):
        header += f" (showing {shown:,} of {view.total:,})"
    text = header if not listing else f"{header}\n\n{fence(listing)}"
    return text, pairs


def _count(n: int, noun: str) -> str:
    """`n` with its noun, singular or plural ("1 file", "18,316 matches")."""
    plural = noun + ("es" if noun.endswith("ch") else "s")
    return f"{n:,} {noun if n == 1 else plural}"


def _read_text(view: ReadResultView) -> str:
    """The numbered window in a fence of the file's language, and where it sits in the file."""
    if not view.lines:
        if view.content and view.content.strip():
            return fence(view.content.rstrip("\n"), view.lang or "")
        if view.total_lines == 0:
            return "(empty file)"
        return f"(no lines from line {view.offset}: the file has {view.total_lines} lines)"
    first, last = view.lines[0].number, view.lines[-1].number
    numbers, line_texts = zip(*view.lines, strict=True)  # the (number, text) pairs split in one C loop
    prefixes = _number_prefixes(len(str(last)), max(numbers))
    if prefixes is not None:
        body = "\n".join(map(add, map(prefixes.__getitem__, numbers), line_texts))
    else:
        width = len(str(last))
        body = "\n".join([f"{str(n).rjust(width)} │ {t}" for n, t in view.lines])
    text = fence(body, view.lang or "")
    if view.truncated or first > 1 or last < view.total_lines:
        text += f"\n\nLines {first}–{last} of {view.total_lines}" + (" (truncated)" if view.truncated else "")
    return text


# The "number │ " that starts each line of a read card, by the width the numbers are aligned to, for
# line numbers up to `_PREFIXED_LINES` (index = number). Every window numbers its lines from a few
# starts (1, or an offset) and a replayed session draws every read again: each prefix is formatted once
# per process, not once per line shown. Grown on demand, replaced whole (readers never see it grow).
_PREFIXED_LINES = 10_000
_NUMBER_PREFIXES: dict[int, list[str]] = {}


def _number_prefixes(width: int, highest: int) -> list[str] | None:
    """The prefixes of the lines numbered up to `highest`, aligned to `width`; None past the bound."""
    if highest > _PREFIXED_LINES:
        return None
    known = _NUMBER_PREFIXES.get(width, [])
    if len(known) <= highest:
        known = known + [f"{str(n).rjust(width)} │ " for n in range(len(known), highest + 1)]
        _NUMBER_PREFIXES[width] = known
    return known


def _web_blocks(view: WebResultView, result: ToolResult) -> list[ToolCallContent]:
    body = content_text(result.content).strip("\n")
    if view.kind == "fetch":
        parts = [f"Fetched {link(view.url)}" if view.url else "Fetched"]
        if view.status_code is not None:
            parts.append(f"HTTP {view.status_code}")
        if view.content_type:
            parts.append(inline_code(view.content_type))
        header = " · ".join(parts)
        if view.truncated:
            header += " (truncated)"
        blocks: list[ToolCallContent] = [text_block(header)]
        if body:
            lang = "json" if view.content_type and "json" in view.content_type else ""
            blocks.append(text_block(fence(body, lang)))
        return blocks
    lines: list[str] = []
    if view.answer and view.answer.strip():
        lines += [view.answer.strip(), ""]
    for index, source in enumerate(view.sources[:MAX_WEB_SOURCES], 1):
        entry = f"{index}. {link(source.url, source.title or source.url)}"
        if source.snippet:
            entry += " — " + one_line(source.snippet, MAX_SEARCH_LINE_CHARS)[0]
        lines.append(entry)
    if len(view.sources) > MAX_WEB_SOURCES or view.truncated:
        lines.append(f"(showing {min(len(view.sources), MAX_WEB_SOURCES)} of more results)")
    if not lines:
        return []  # nothing structured: the raw content fallback shows the tool's own text
    return [text_block("\n".join(lines).strip())]
