"""Cards → ACP `session/update` payloads. Pure functions; the only code that knows how cards look on the
wire. Live streaming, permission requests, session/load replay and the LSP face's
`acpBridge/sessionUpdate` all go through here, so the same call always renders the same way.

Every function returns plain JSON dicts in ACP wire shape (camelCase), i.e. the `update` object of a
`session/update` notification (the caller adds `sessionId`). Paths in locations and diffs are absolute;
titles show paths relative to the session cwd (the `..` path-segment rule).

Invariant: no I/O, no asyncio, no knowledge of tool names (only of card kinds).

Wire decisions worth knowing (from the shared reference notes SEED_BRIDGE.md, ACP_PROTOCOL.md §4-§9 and
PEERS.md):
- SDK 0.12.1's `ToolCall` has no `name` field, so the tool name travels as `_meta.acpBridge.tool`.
- Titles are single-line (Zed shows only the first line); a multi-line command is also shown in full in
  a ```console block.
- A terminal card with the client's `_meta.terminal_output` opt-in never gets `content` after the start
  (an update's content replaces the call's and would wipe the terminal block); output and exit travel in
  `_meta.terminal_output` / `_meta.terminal_exit`.
- Every update is bounded (`WireContext.max_update_bytes`): oversized text is cut in the middle with an
  explicit "(truncated, N bytes omitted)" marker instead of sending multi-megabyte lines.
"""

# SIGNATURES AGREED WITH THE BRIDGE CORE — keep these names (additions only, with defaults).
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final, Literal

from registry_core import ToolResult
from registry_core.content import ContentBlock, ImageBlock, TextBlock, content_text
from registry_core.presentation import (
    CallViewT,
    DiffCallView,
    DiffResultView,
    FileDiff,
    FileLocation,
    GenericCallView,
    GenericResultView,
    ReadResultView,
    ResultViewT,
    SearchResultView,
    TerminalCallView,
    TerminalResultView,
    WebResultView,
)

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
Update = dict[str, Any]

# --- limits ----------------------------------------------------------------------------------------
# Python ACP peers read lines with asyncio's StreamReader; the bridge raises its own limit, but a
# client may not, so every update stays well under this (configurable per session).
DEFAULT_MAX_UPDATE_BYTES: Final = 512 * 1024
MAX_LOCATIONS: Final = 50  # follow-along needs a few anchors, not every grep hit in a monorepo
MAX_DIFF_BLOCKS: Final = 100
MAX_TITLE_CHARS: Final = 300
RAW_INPUT_MAX_BYTES: Final = 32 * 1024
RAW_OUTPUT_TEXT_CHARS: Final = 10_000  # opencode had to cap rawOutput at ~10 KB for Python clients
LIVE_OUTPUT_TAIL_CHARS: Final = 64 * 1024  # the fallback re-sends the whole block; keep it a tail
FINAL_TERMINAL_OUTPUT_CHARS: Final = 2 * 1024 * 1024
MAX_SEARCH_LINE_CHARS: Final = 400
MAX_WEB_SOURCES: Final = 50
MAX_PLAN_ENTRIES: Final = 200
MAX_PLAN_CONTENT_CHARS: Final = 2_000
_MIN_KEEP_CHARS: Final = 256
_MARKER_ALLOWANCE: Final = 96  # bytes a truncation marker may add to a string

_ACP_KINDS: Final = frozenset(
    {"read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"}
)
_PLAN_STATUSES: Final = frozenset({"pending", "in_progress", "completed"})
_PLAN_PRIORITIES: Final = frozenset({"high", "medium", "low"})


@dataclass(frozen=True, slots=True)
class WireContext:
    """What the mapping needs to know about the session and the client."""

    cwd: str  # absolute session cwd
    terminal_meta: bool = False  # client advertised clientCapabilities._meta.terminal_output == true
    max_update_bytes: int = DEFAULT_MAX_UPDATE_BYTES  # serialised size cap of one update


# === public API ====================================================================================


def tool_call_started(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> Update:
    """The `tool_call` update announcing a call (`view` None → a generic card titled with the tool name)."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=False)
    update: Update = {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": status,
    }
    _put_card_fields(update, card, arguments, view)
    return _fit(update, ctx.max_update_bytes)


def tool_call_status(ctx: WireContext, call_id: str, status: ToolStatus) -> Update:
    """A `tool_call_update` that only moves the status (e.g. pending → in_progress after approval)."""
    return {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": status}


def terminal_output(
    ctx: WireContext,
    call_id: str,
    data: str,
    rendered_so_far: str,
    *,
    call_view: CallViewT | None = None,
) -> Update:
    """A live-output `tool_call_update` for a running terminal card.

    With the terminal opt-in: `_meta.terminal_output {terminal_id, data}` (a delta; never re-sends
    earlier output). Without it: the full fenced ```console block of `rendered_so_far` as content
    (content replaces; the caller bounds how often and how much it sends; only the last
    `LIVE_OUTPUT_TAIL_CHARS` are shown, behind a truncation marker). `call_view` (added) lets the
    fallback keep the description and command above the output, since content replaces the card's."""
    if ctx.terminal_meta:
        update: Update = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "_meta": {"terminal_output": {"terminal_id": call_id, "data": data}},
        }
        return _fit(update, ctx.max_update_bytes)
    command = call_view.title if isinstance(call_view, TerminalCallView) else None
    content: list[dict[str, Any]] = []
    if isinstance(call_view, TerminalCallView) and call_view.description:
        content.append(_text_block(call_view.description))
    content.append(_text_block(_console(command, _console_text(_tail(rendered_so_far)))))
    return _fit(
        {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "content": content},
        ctx.max_update_bytes,
    )


def tool_call_completed(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    call_view: CallViewT | None,
    result: ToolResult,
    result_view: ResultViewT | None,
    *,
    terminal_output_sent: bool = False,
    note: str | None = None,
) -> list[Update]:
    """The final update(s) of a call: status completed/failed, content, locations, rawOutput, and for a
    terminal card the `_meta.terminal_output` (only output not yet sent) + `terminal_exit`.
    `note` is an extra line shown on the card (e.g. which remembered permission rule decided it)."""
    is_terminal_call = isinstance(call_view, TerminalCallView)
    view = result_view
    # Orphan guard: a terminal result needs the terminal pending card it completes.
    if isinstance(view, TerminalResultView) and not is_terminal_call:
        view = None
    if isinstance(call_view, TerminalCallView) and (
        view is None or isinstance(view, (TerminalResultView, GenericResultView))
    ):
        return _terminal_completed(
            ctx, call_id, tool_name, call_view, result, view, terminal_output_sent, note
        )

    update: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if result.is_error else "completed",
    }
    card = _result_card(ctx, call_view, result, view, note)
    if card.title is not None:
        update["title"] = card.title
    if card.kind is not None:
        update["kind"] = card.kind
    # Empty content would blank the card (content replaces): omit it and the pending content stays.
    if card.content:
        update["content"] = card.content
    if card.locations:
        update["locations"] = card.locations
    update["rawOutput"] = _raw_output(result, view, ctx.cwd)
    meta: dict[str, Any] = {"acpBridge": _bridge_meta(tool_name, note=note)}
    if is_terminal_call and ctx.terminal_meta:
        # A non-terminal result for a terminal card still has to close the display-only terminal.
        meta["terminal_exit"] = {"terminal_id": call_id, "exit_code": None, "signal": None}
    update["_meta"] = meta
    return [_fit(update, ctx.max_update_bytes)]


def permission_tool_call(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None, reason: str | None
) -> Update:
    """The `toolCall` (a ToolCallUpdate) carried by session/request_permission: title, kind, the diff for
    edits and writes, the command for bash, locations, and the reason as text."""
    card = _call_card(ctx, call_id, tool_name, arguments, view, permission=True, reason=reason)
    update: Update = {
        "toolCallId": call_id,
        "title": card.title,
        "kind": card.kind,
        "status": "pending",
    }
    _put_card_fields(update, card, arguments, view)
    return _fit(update, ctx.max_update_bytes)


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


def display_path(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it (the `..` segment rule), else unchanged.

    "Unchanged" means absolute: a relative `path` is resolved against `cwd` first, and a path outside
    `cwd` is returned normalised and absolute so the reader sees where it really is."""
    absolute = resolve_path(path, cwd)
    inside = _relative_inside(absolute, os.path.normpath(cwd))
    return absolute if inside is None else inside


def relativize_title(title: str, paths: Mapping[str, str] | list[str], cwd: str) -> str:
    """Replace every occurrence of each absolute path (inside cwd) in `title` by its display path."""
    pairs: dict[str, str] = {}
    if isinstance(paths, Mapping):
        items = [(absolute, shown) for absolute, shown in paths.items()]
    else:
        # Only paths inside cwd change; an outside path keeps its absolute spelling.
        items = [(p, shown) for p in paths if not os.path.isabs(shown := display_path(p, cwd))]
    for absolute, shown in items:
        if not absolute or not os.path.isabs(absolute):
            continue
        # The title may spell the path as given or normalised; both map to the same display path.
        for spelling in (absolute, os.path.normpath(absolute)):
            if spelling != shown:
                pairs.setdefault(spelling, shown)
    # Most titles contain none of the paths: skip compiling a pattern (it dominated the per-call cost).
    pairs = {spelling: shown for spelling, shown in pairs.items() if spelling in title}
    if not pairs:
        return title
    # Longest first: "/p/src/a.py" must win over its directory "/p/src" (alternation is ordered).
    ordered = sorted(pairs, key=len, reverse=True)
    pattern = re.compile(
        _PATH_LEFT_EDGE + "(?:" + "|".join(re.escape(p) for p in ordered) + ")" + _PATH_RIGHT_EDGE
    )
    return pattern.sub(lambda m: pairs[m.group(0)], title)


def resolve_path(path: str, cwd: str) -> str:
    """`path` made absolute against `cwd` and normalised (for locations and diffs)."""
    return os.path.normpath(os.path.join(cwd, path))


def bound_update(update: Update, max_bytes: int = DEFAULT_MAX_UPDATE_BYTES) -> Update:
    """Shrink `update` in place (text, diffs, terminal data, raw input/output) until it serialises to at
    most `max_bytes`; exposed so any other update the bridge builds obeys the same budget."""
    return _fit(update, max_bytes)


# === paths and titles ==============================================================================

# A path occurrence in a title must not be glued to more path characters on its left ("/x/p/a" does
# not contain the path "/p/a"), nor continue a name on its right ("/p/src2" does not contain "/p/src";
# a following "/" is fine: "/p/src" + "/a.py" relativises to "src/a.py"; a "." or "-" that ends the
# word is punctuation, so "see /p/a." still matches "/p/a").
_PATH_LEFT_EDGE: Final = r"(?<![\w.\-/~])"
_PATH_RIGHT_EDGE: Final = r"(?![\w~]|[.\-][\w.\-~])"
_TOKEN_REST: Final = r"/[^\s'\"`()\[\]{}<>,;|&]*"
_TRAILING_PUNCT: Final = ".,:;!?"


def _relative_inside(absolute: str, cwd: str) -> str | None:
    """`absolute` (normalised) relative to `cwd` (normalised) when inside it, else None. Prefix on a
    segment boundary: "/p/..cache/x" is inside "/p" ("..cache" is a name), "/p2/x" is not."""
    if absolute == cwd:
        return "."
    prefix = cwd if cwd.endswith("/") else cwd + "/"
    if absolute.startswith(prefix):
        return absolute[len(prefix) :]
    return None


def _relativize_cwd_tokens(title: str, cwd: str) -> str:
    """Relativise any other path token under cwd that the card did not list (e.g. a search directory
    a presenter put in its title). Tokens that normalise outside cwd stay as written."""
    base = os.path.normpath(cwd)
    if base == "/" or not os.path.isabs(base):
        return title  # every absolute path is "inside /"; rewriting them all would only add noise
    if base not in title:
        return title
    pattern = _cwd_token_pattern(base)

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        stripped = token.rstrip(_TRAILING_PUNCT) if len(token) > len(base) else token
        if stripped.endswith("/"):
            stripped = token  # the dots were path segments ("/p/." or "/p/a/.."), not punctuation
        trail = token[len(stripped) :]
        inside = _relative_inside(os.path.normpath(stripped), base)
        return token if inside is None else inside + trail

    return pattern.sub(replace, title)


@lru_cache(maxsize=64)
def _cwd_token_pattern(base: str) -> re.Pattern[str]:
    # Compiled once per session cwd: titles are built for every call.
    return re.compile(_PATH_LEFT_EDGE + re.escape(base) + f"(?:{_TOKEN_REST}|{_PATH_RIGHT_EDGE})")


def _one_line(text: str, limit: int = MAX_TITLE_CHARS) -> tuple[str, bool]:
    """A single-line title and whether it lost information (several lines, or cut)."""
    lines = [line.strip() for line in re.split(r"\r\n|\r|\n", text.strip())]
    lines = [line for line in lines if line]
    one = " ↵ ".join(lines)
    lossy = len(lines) > 1
    if len(one) > limit:
        one = one[: limit - 1].rstrip() + "…"
        lossy = True
    return one, lossy


def _card_title(title: str | None, paths: Iterable[str], ctx: WireContext, fallback: str) -> str:
    if title is None or not title.strip():
        return _one_line(fallback)[0] or "tool"
    absolute = [resolve_path(p, ctx.cwd) for p in paths]
    relative = _relativize_cwd_tokens(relativize_title(title, absolute, ctx.cwd), ctx.cwd)
    return _one_line(relative)[0] or _one_line(fallback)[0] or "tool"


# === text helpers ==================================================================================

_BACKTICK_RUN: Final = re.compile(r"`+")
_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_INFO_STRING_JUNK: Final = re.compile(r"[^\w+#.\-]")


def _utf8_len(text: str) -> int:
    # str.isascii() is O(1) in CPython, which keeps the live-output path cheap.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _longest_backtick_run(text: str) -> int:
    if "`" not in text:
        return 0  # the common case, checked at C speed before the regex scan
    return max(len(run) for run in _BACKTICK_RUN.findall(text))


def _fence(text: str, info: str = "") -> str:
    """A fenced code block that the text cannot close: the fence is longer than any backtick run."""
    longest = _longest_backtick_run(text)
    fence = "`" * max(3, longest + 1)
    info = _INFO_STRING_JUNK.sub("", info)[:32]
    body = text if not text or text.endswith("\n") else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def _truncate_middle(text: str, max_chars: int) -> str:
    """Keep the head and the tail (both matter for logs and fenced blocks) around an explicit marker."""
    if len(text) <= max_chars:
        return text
    max_chars = max(0, max_chars)
    head = max_chars * 3 // 5
    tail = max_chars - head
    omitted = text[head : len(text) - tail]
    marker = f"\n… (truncated, {_utf8_len(omitted)} bytes omitted) …\n"
    return text[:head] + marker + (text[len(text) - tail :] if tail else "")


def _tail(text: str, max_chars: int = LIVE_OUTPUT_TAIL_CHARS) -> str:
    """The end of a live output (what a user watching a running command needs) with a marker."""
    if len(text) <= max_chars:
        return text
    cut = len(text) - max_chars
    newline = text.find("\n", cut, cut + 512)
    if newline != -1:
        cut = newline + 1  # start at a line boundary when one is near
    kept = text[cut:]
    # Whole-minus-kept avoids copying the omitted prefix (O(1) sizes for ASCII, the common case).
    omitted = _utf8_len(text) - _utf8_len(kept)
    return f"(truncated, {omitted} bytes of earlier output omitted)\n" + kept


def _console_text(output: str) -> str:
    """Terminal output as a Markdown client can show it: no ANSI escapes, carriage-return redraws
    (progress bars) collapsed to what a terminal would finally show, trailing newlines trimmed."""
    text = _ANSI.sub("", output).replace("\r\n", "\n")
    if "\r" in text:
        lines = []
        for line in text.split("\n"):
            if "\r" in line:
                parts = [part for part in line.split("\r") if part]
                line = parts[-1] if parts else ""
            lines.append(line)
        text = "\n".join(lines)
    return text.rstrip("\n")


def _console(command: str | None, output: str | None) -> str:
    """A ```console block: `$ command` (when known) then the output, like a terminal transcript."""
    parts: list[str] = []
    if command is not None and command.strip():
        parts.append("$ " + command.strip("\n"))
    if output:
        parts.append(output)
    return _fence("\n".join(parts), "console")


def _literal(text: str) -> str:
    """Tool text shown as written: one line stays prose, several lines go in a plain fence so Markdown
    does not reflow or interpret them."""
    stripped = text.strip("\n")
    return _fence(stripped) if "\n" in stripped else stripped


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "content", "content": {"type": "text", "text": text}}


def _block_text(block: Mapping[str, Any]) -> str:
    inner = block.get("content")
    if block.get("type") == "content" and isinstance(inner, Mapping) and inner.get("type") == "text":
        return str(inner.get("text", ""))
    return ""


# === JSON helpers ==================================================================================


def _jsonable(value: Any, max_str: int, max_items: int, depth: int) -> Any:
    """A plain, bounded JSON copy (frozen mappings/tuples thawed, foreign values stringified)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _truncate_middle(value, max_str)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if depth <= 0:
        return "…"
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for index, (key, item) in enumerate(value.items()):
            if index >= max_items:
                out["…"] = f"{len(value) - max_items} more keys omitted"
                break
            out[str(key)] = _jsonable(item, max_str, max_items, depth - 1)
        return out
    if isinstance(value, (list, tuple)):
        items = [_jsonable(item, max_str, max_items, depth - 1) for item in value[:max_items]]
        if len(value) > max_items:
            items.append(f"… {len(value) - max_items} more items omitted")
        return items
    return _truncate_middle(repr(value), max_str)


def _json_size(value: Any) -> int:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return _utf8_len(text)


def _bounded_raw_input(arguments: Any) -> Any:
    """`rawInput` = the arguments, but never megabytes (a `write` of a 10 MB file)."""
    if isinstance(arguments, str):
        return _truncate_middle(arguments, RAW_INPUT_MAX_BYTES // 2)
    for max_str, max_items, depth in ((4096, 200, 16), (256, 20, 6)):
        value = _jsonable(arguments, max_str, max_items, depth)
        if _json_size(value) <= RAW_INPUT_MAX_BYTES:
            return value
    return _truncate_middle(json.dumps(value, ensure_ascii=False), RAW_INPUT_MAX_BYTES // 4)


def _arguments_block(arguments: Any) -> dict[str, Any] | None:
    """The arguments as a ```json block, so an approval is never asked blind."""
    if arguments is None:
        return None
    if isinstance(arguments, str):
        return _text_block(_fence(_truncate_middle(arguments, RAW_INPUT_MAX_BYTES // 2)))
    bounded = _bounded_raw_input(arguments)
    if isinstance(bounded, str):
        return _text_block(_fence(bounded))
    if bounded == {}:
        return None
    return _text_block(_fence(json.dumps(bounded, ensure_ascii=False, indent=2), "json"))


# === cards =========================================================================================


@dataclass(slots=True)
class _Card:
    title: str
    kind: str
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _ResultCard:
    title: str | None = None
    kind: str | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    locations: list[dict[str, Any]] = field(default_factory=list)


def _bridge_meta(tool_name: str, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"tool": tool_name}
    meta.update({key: value for key, value in extra.items() if value is not None})
    return meta


def _acp_kind(kind: str) -> str:
    return kind if kind in _ACP_KINDS else "other"


def _location(path: str, line: int | None, cwd: str) -> dict[str, Any]:
    location: dict[str, Any] = {"path": resolve_path(path, cwd)}
    if line is not None and line >= 0:
        location["line"] = line
    return location


def _locations(pairs: Iterable[tuple[str, int | None]], cwd: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, int | None]] = set()
    for path, line in pairs:
        location = _location(path, line, cwd)
        key = (location["path"], location.get("line"))
        if key in seen:
            continue
        seen.add(key)
        out.append(location)
        if len(out) >= MAX_LOCATIONS:
            break
    return out


def _file_locations(locations: Sequence[FileLocation]) -> list[tuple[str, int | None]]:
    return [(loc.path, loc.line) for loc in locations]


def _diff_blocks(diffs: Sequence[FileDiff], cwd: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [
        {"type": "diff", "path": resolve_path(d.path, cwd), "oldText": d.old_text, "newText": d.new_text}
        for d in diffs[:MAX_DIFF_BLOCKS]
    ]
    if len(diffs) > MAX_DIFF_BLOCKS:
        blocks.append(_text_block(f"({len(diffs) - MAX_DIFF_BLOCKS} more changes not shown)"))
    return blocks


def _diff_locations(
    diffs: Sequence[FileDiff], locations: Sequence[FileLocation], cwd: str
) -> list[dict[str, Any]]:
    if locations:
        return _locations(_file_locations(locations), cwd)
    # No hunk anchors from the presenter: at least name each file (a new file starts at line 1).
    return _locations(((d.path, 1 if d.old_text is None else None) for d in diffs), cwd)


def _terminal_cwd(view: TerminalCallView, ctx: WireContext) -> str:
    return resolve_path(view.cwd, ctx.cwd) if view.cwd else os.path.normpath(ctx.cwd)


def _call_card(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    *,
    permission: bool,
    reason: str | None = None,
) -> _Card:
    card: _Card
    if isinstance(view, TerminalCallView):
        card = _terminal_call_card(ctx, call_id, tool_name, view, permission=permission)
    elif isinstance(view, DiffCallView):
        paths = [d.path for d in view.diffs] + [loc.path for loc in view.locations]
        card = _Card(
            title=_card_title(view.title, paths, ctx, tool_name),
            kind="edit",
            content=_diff_blocks(view.diffs, ctx.cwd),
            locations=_diff_locations(view.diffs, view.locations, ctx.cwd),
            meta={"acpBridge": _bridge_meta(tool_name)},
        )
    elif isinstance(view, GenericCallView):
        card = _Card(
            title=_card_title(view.title, [loc.path for loc in view.locations], ctx, tool_name),
            kind=_acp_kind(view.kind),
            content=[_text_block(c.text) for c in view.content if c.text],
            locations=_locations(_file_locations(view.locations), ctx.cwd),
            meta={"acpBridge": _bridge_meta(tool_name)},
        )
    else:
        card = _Card(
            title=_card_title(None, (), ctx, tool_name),
            kind="other",
            meta={"acpBridge": _bridge_meta(tool_name)},
        )
    if permission:
        if not card.content:
            raw = arguments
            if raw is None and isinstance(view, GenericCallView):
                raw = view.raw_input
            shown = _arguments_block(raw)
            if shown is not None:
                card.content.append(shown)
        if reason and reason.strip():
            card.content.insert(0, _text_block(reason.strip()))
    return card


def _terminal_call_card(
    ctx: WireContext, call_id: str, tool_name: str, view: TerminalCallView, *, permission: bool
) -> _Card:
    command = view.title
    title, lossy = _one_line(command)
    cwd = _terminal_cwd(view, ctx)
    content: list[dict[str, Any]] = []
    if view.description and view.description.strip():
        content.append(_text_block(view.description.strip()))
    # The title shows the command; repeat it in full when the title could not (several lines, cut),
    # when approving (the user must see exactly what runs), or when there is no terminal widget.
    if lossy or permission or not ctx.terminal_meta:
        content.append(_text_block(_console(command, None)))
    meta: dict[str, Any] = {
        "acpBridge": _bridge_meta(tool_name, description=view.description or None, cwd=cwd)
    }
    if ctx.terminal_meta:
        content.append({"type": "terminal", "terminalId": call_id})
        meta["terminal_info"] = {"terminal_id": call_id, "cwd": cwd}
    return _Card(title=title or _one_line(tool_name)[0] or "tool", kind="execute", content=content, meta=meta)


def _put_card_fields(update: Update, card: _Card, arguments: Any, view: CallViewT | None) -> None:
    if card.content:
        update["content"] = card.content
    if card.locations:
        update["locations"] = card.locations
    raw = arguments
    if raw is None and isinstance(view, GenericCallView):
        raw = view.raw_input
    if raw is not None:
        update["rawInput"] = _bounded_raw_input(raw)
    update["_meta"] = card.meta


# --- results ---------------------------------------------------------------------------------------


def _raw_content_blocks(content: Sequence[ContentBlock], max_bytes: int) -> list[dict[str, Any]]:
    """The model-facing result content as card blocks (the never-blank fallback)."""
    blocks: list[dict[str, Any]] = []
    image_budget = max_bytes // 2  # images cannot be cut like text; past the budget, name them instead
    for block in content:
        if isinstance(block, TextBlock):
            if block.text.strip():
                blocks.append(_text_block(_literal(block.text)))
        elif isinstance(block, ImageBlock):
            size = len(block.data)
            if size <= image_budget:
                image_budget -= size
                blocks.append(
                    {
                        "type": "content",
                        "content": {"type": "image", "data": block.data, "mimeType": block.mime_type},
                    }
                )
            else:
                blocks.append(_text_block(f"[image {block.mime_type}, {size} bytes: too large to show]"))
    return blocks


def _error_message(result: ToolResult) -> str | None:
    if not result.is_error:
        return None
    if result.error is not None and result.error.message.strip():
        return result.error.message.strip()
    text = content_text(result.content).strip()
    return text or "the tool failed"


def _result_card(
    ctx: WireContext,
    call_view: CallViewT | None,
    result: ToolResult,
    view: ResultViewT | None,
    note: str | None,
) -> _ResultCard:
    card = _ResultCard()
    call_paths: list[str] = []
    if isinstance(call_view, (GenericCallView, DiffCallView)):
        call_paths = [loc.path for loc in call_view.locations]
    if isinstance(call_view, DiffCallView):
        call_paths += [d.path for d in call_view.diffs]

    if isinstance(view, DiffResultView):
        card.kind = "edit"
        card.content = _diff_blocks(view.diffs, ctx.cwd)
        card.locations = _diff_locations(view.diffs, view.locations, ctx.cwd)
        paths = [d.path for d in view.diffs] + [loc.path for loc in view.locations] + call_paths
    elif isinstance(view, SearchResultView):
        card.kind = "search"
        text, pairs = _search_text(view, ctx.cwd)
        card.content = [_text_block(text)]
        card.locations = _locations(pairs, ctx.cwd)
        paths = [m.path for m in view.matches[:MAX_LOCATIONS]] + list(view.paths[:MAX_LOCATIONS]) + call_paths
    elif isinstance(view, ReadResultView):
        card.kind = "read"
        card.content = [_text_block(_read_text(view))]
        first = view.lines[0].number if view.lines else view.offset
        card.locations = _locations([(view.path, first)], ctx.cwd)
        paths = [view.path, *call_paths]
    elif isinstance(view, WebResultView):
        card.kind = "fetch"
        card.content = _web_blocks(view, result)
        paths = call_paths
    elif isinstance(view, GenericResultView):
        card.content = [_text_block(c.text) for c in view.content or () if c.text]
        paths = call_paths
    else:
        paths = call_paths

    if view is not None and view.title:
        card.title = _card_title(view.title, paths, ctx, view.title)
    if not card.content:
        card.content = _raw_content_blocks(result.content, ctx.max_update_bytes)

    # A failed call always says why, unless its content already does.
    message = _error_message(result)
    if message is not None and not any(message in _block_text(b) for b in card.content):
        card.content.insert(0, _text_block(_fence(message)))
    if note and note.strip():
        card.content.insert(0, _text_block(note.strip()))
    return card


def _search_text(view: SearchResultView, cwd: str) -> tuple[str, list[tuple[str, int | None]]]:
    """Readable search results, grouped by file (`path:line: text`), and one location per match."""
    pairs: list[tuple[str, int | None]] = []
    groups: list[str] = []
    if view.shape == "paths":
        shown = len(view.paths)
        groups = [display_path(p, cwd) for p in view.paths]
        pairs = [(p, None) for p in view.paths]
        noun = "path" if view.total == 1 else "paths"
        header = f"Found {view.total} {noun}" if view.total else "No files found."
        listing = "\n".join(groups)
    else:
        listed_lines = sum(len(m.lines) for m in view.matches)
        shown = listed_lines or len(view.matches)
        for match in view.matches:
            shown_path = display_path(match.path, cwd)
            if match.lines:
                rows = []
                for line in match.lines:
                    snippet = _one_line(line.text.replace("\t", "    "), MAX_SEARCH_LINE_CHARS)[0]
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
        elif listed_lines:
            header = (
                f"Found {view.total} {'match' if view.total == 1 else 'matches'} "
                f"in {files} {'file' if files == 1 else 'files'}"
            )
        else:
            header = f"Found {view.total} {'result' if view.total == 1 else 'results'}"
        listing = "\n\n".join(groups)
    if view.truncated:
        header += f" (showing {shown} of {view.total})"
    text = header if not listing else f"{header}\n\n{_fence(listing)}"
    return text, pairs


def _read_text(view: ReadResultView) -> str:
    """The numbered window in a fence of the file's language, and where it sits in the file."""
    if not view.lines:
        if view.content and view.content.strip():
            return _fence(view.content.rstrip("\n"), view.lang or "")
        if view.total_lines == 0:
            return "(empty file)"
        return f"(no lines from line {view.offset}: the file has {view.total_lines} lines)"
    width = len(str(view.lines[-1].number))
    body = "\n".join(f"{line.number:>{width}} │ {line.text}" for line in view.lines)
    text = _fence(body, view.lang or "")
    first, last = view.lines[0].number, view.lines[-1].number
    if view.truncated or first > 1 or last < view.total_lines:
        text += f"\n\nLines {first}–{last} of {view.total_lines}" + (" (truncated)" if view.truncated else "")
    return text


def _link(url: str, label: str | None = None) -> str:
    safe = re.fullmatch(r"[^\s<>]+", url) is not None
    if label:
        label = label.replace("\\", "\\\\").replace("[", "\\[").replace("]", "\\]")
        return f"[{label}](<{url}>)" if safe else f"{label} ({_inline_code(url)})"
    return f"<{url}>" if safe else _inline_code(url)


def _inline_code(text: str) -> str:
    ticks = "`" * (_longest_backtick_run(text) + 1)
    # CommonMark strips one space on each side, which lets a code span start or end with a backtick.
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _web_blocks(view: WebResultView, result: ToolResult) -> list[dict[str, Any]]:
    body = content_text(result.content).strip("\n")
    if view.kind == "fetch":
        parts = [f"Fetched {_link(view.url)}" if view.url else "Fetched"]
        if view.status_code is not None:
            parts.append(f"HTTP {view.status_code}")
        if view.content_type:
            parts.append(_inline_code(view.content_type))
        header = " · ".join(parts)
        if view.truncated:
            header += " (truncated)"
        blocks = [_text_block(header)]
        if body:
            lang = "json" if view.content_type and "json" in view.content_type else ""
            blocks.append(_text_block(_fence(body, lang)))
        return blocks
    lines: list[str] = []
    if view.answer and view.answer.strip():
        lines += [view.answer.strip(), ""]
    for index, source in enumerate(view.sources[:MAX_WEB_SOURCES], 1):
        entry = f"{index}. {_link(source.url, source.title or source.url)}"
        if source.snippet:
            entry += " — " + _one_line(source.snippet, MAX_SEARCH_LINE_CHARS)[0]
        lines.append(entry)
    if len(view.sources) > MAX_WEB_SOURCES or view.truncated:
        lines.append(f"(showing {min(len(view.sources), MAX_WEB_SOURCES)} of more results)")
    if not lines:
        return []  # nothing structured: the raw content fallback shows the tool's own text
    return [_text_block("\n".join(lines).strip())]


def _raw_output(result: ToolResult, view: ResultViewT | None, cwd: str) -> dict[str, Any]:
    """A bounded summary for clients that show rawOutput; never the megabytes the model saw."""
    out: dict[str, Any] = {"isError": result.is_error}
    if result.error is not None:
        error: dict[str, Any] = {"message": _truncate_middle(result.error.message, 2_000)}
        if result.error.code is not None:
            error["code"] = result.error.code
        out["error"] = error
    if isinstance(view, TerminalResultView):
        out["exitCode"] = view.exit_code
        out["signal"] = view.signal
        if view.full_output_path:
            out["fullOutputPath"] = view.full_output_path
        output = view.output if view.output is not None else content_text(result.content)
        # The end of a command's output is where its verdict is.
        out["output"] = _tail(output, RAW_OUTPUT_TEXT_CHARS)
        return out
    if isinstance(view, SearchResultView):
        out["total"] = view.total
        out["truncated"] = view.truncated
    elif isinstance(view, ReadResultView):
        out["path"] = resolve_path(view.path, cwd)
        out["totalLines"] = view.total_lines
    elif isinstance(view, WebResultView) and view.url:
        out["url"] = view.url
        out["statusCode"] = view.status_code
    text = content_text(result.content)
    if text:
        out["text"] = _truncate_middle(text, RAW_OUTPUT_TEXT_CHARS)
    return out


def _terminal_completed(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    call_view: TerminalCallView,
    result: ToolResult,
    view: TerminalResultView | GenericResultView | None,
    terminal_output_sent: bool,
    note: str | None,
) -> list[Update]:
    terminal = view if isinstance(view, TerminalResultView) else None
    if terminal is not None and terminal.output is not None:
        output = terminal.output
    elif isinstance(view, GenericResultView) and view.content:
        output = "\n".join(c.text for c in view.content)
    else:
        output = content_text(result.content)
    exit_code = terminal.exit_code if terminal else None
    signal = terminal.signal if terminal else None
    full_output = terminal.full_output_path if terminal else None
    error = _error_message(result)
    if error is not None and error in output:
        error = None  # the output already says it (e.g. the rejection text is the whole result)

    final: Update = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": "failed" if result.is_error else "completed",
    }
    if view is not None and view.title and _one_line(view.title)[0]:
        final["title"] = _one_line(view.title)[0]
    final["rawOutput"] = _raw_output(result, terminal, ctx.cwd)
    bridge = _bridge_meta(tool_name, note=note)
    updates: list[Update] = []

    if ctx.terminal_meta:
        # No content: it would replace (wipe) the terminal block. The card's extra lines (error, where
        # the full output went, the note) go into the terminal itself, after the output.
        data = "" if terminal_output_sent else _truncate_middle(output, FINAL_TERMINAL_OUTPUT_CHARS)
        extras = [line for line in (error, _full_output_line(full_output, ctx), note) if line]
        if extras:
            # After streamed output the cursor position is unknown: start a fresh line to be safe.
            at_line_start = data.endswith("\n") if data else not terminal_output_sent
            data += ("" if at_line_start else "\r\n") + "\r\n".join(extras) + "\r\n"
        # Output beyond one update's budget goes out as earlier deltas instead of being cut.
        chunk = max(4096, ctx.max_update_bytes // 8)
        while len(data) > chunk:
            piece, data = data[:chunk], data[chunk:]
            updates.append(
                _fit(
                    {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": call_id,
                        "_meta": {"terminal_output": {"terminal_id": call_id, "data": piece}},
                    },
                    ctx.max_update_bytes,
                )
            )
        meta: dict[str, Any] = {"acpBridge": bridge}
        if data:
            meta["terminal_output"] = {"terminal_id": call_id, "data": data}
        meta["terminal_exit"] = {"terminal_id": call_id, "exit_code": exit_code, "signal": signal}
        final["_meta"] = meta
        updates.append(_fit(final, ctx.max_update_bytes))
        return updates

    content: list[dict[str, Any]] = []
    if note and note.strip():
        content.append(_text_block(note.strip()))
    if error is not None:
        content.append(_text_block(_fence(error)))
    if call_view.description and call_view.description.strip():
        content.append(_text_block(call_view.description.strip()))
    content.append(_text_block(_console(call_view.title, _console_text(output))))
    status_line = _exit_line(exit_code, signal)
    if status_line:
        content.append(_text_block(status_line))
    full_line = _full_output_line(full_output, ctx)
    if full_line:
        content.append(_text_block(full_line))
    final["content"] = content
    final["_meta"] = {"acpBridge": bridge}
    return [_fit(final, ctx.max_update_bytes)]


def _exit_line(exit_code: int | None, signal: str | None) -> str | None:
    if signal:
        return f"Terminated by signal {signal}"
    if exit_code not in (None, 0):
        return f"Exited with code {exit_code}"
    return None


def _full_output_line(path: str | None, ctx: WireContext) -> str | None:
    return f"Full output: {display_path(path, ctx.cwd)}" if path else None


def _chunk(kind: str, text: str, message_id: str | None, max_bytes: int) -> Update:
    update: Update = {"sessionUpdate": kind, "content": {"type": "text", "text": text}}
    if message_id is not None:
        update["messageId"] = message_id
    return _fit(update, max_bytes)


# === payload budget ================================================================================


def _upper_bound(value: Any) -> int:
    """A cheap bound on the serialised size (a char is at most 6 bytes escaped), so the common small
    update skips a full json.dumps on the hot live-output path."""
    if isinstance(value, str):
        return 6 * len(value) + 2
    if isinstance(value, Mapping):
        return sum(_upper_bound(k) + _upper_bound(v) + 2 for k, v in value.items()) + 2
    if isinstance(value, (list, tuple)):
        return sum(_upper_bound(v) + 1 for v in value) + 2
    return 24


def _shrinkable(update: Update) -> list[tuple[Any, Any]]:
    """(container, key) of every string the budget may cut: displayed text, diff texts, terminal data,
    raw input/output strings and plan entries. Titles and ids are already bounded."""
    leaves: list[tuple[Any, Any]] = []

    def strings(container: Any, key: Any) -> None:
        value = container[key]
        if isinstance(value, str):
            leaves.append((container, key))
        elif isinstance(value, dict):
            for inner in value:
                strings(value, inner)
        elif isinstance(value, list):
            for index in range(len(value)):
                strings(value, index)

    content = update.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        leaves.append((content, "text"))
    elif isinstance(content, list):
        for block in content:
            inner = block.get("content") if isinstance(block, dict) else None
            if isinstance(inner, dict) and isinstance(inner.get("text"), str):
                leaves.append((inner, "text"))
            elif isinstance(block, dict) and block.get("type") == "diff":
                leaves += [(block, k) for k in ("oldText", "newText") if isinstance(block.get(k), str)]
    meta = update.get("_meta")
    if isinstance(meta, dict):
        out = meta.get("terminal_output")
        if isinstance(out, dict) and isinstance(out.get("data"), str):
            leaves.append((out, "data"))
    for key in ("rawInput", "rawOutput"):
        if key in update:
            strings(update, key)
    for entry in update.get("entries") or ():
        if isinstance(entry, dict) and isinstance(entry.get("content"), str):
            leaves.append((entry, "content"))
    return leaves


def _water_level(lengths: Sequence[int], target: int) -> int:
    """The largest cap t with sum(min(n, t)) <= target: long strings shrink, short ones stay whole."""
    if target <= 0:
        return 0
    remaining = target
    ordered = sorted(lengths)
    for index, length in enumerate(ordered):
        left = len(ordered) - index
        if length * left <= remaining:
            remaining -= length
            continue
        return remaining // left
    return ordered[-1] if ordered else 0


def _fit(update: Update, max_bytes: int) -> Update:
    if _upper_bound(update) <= max_bytes:
        return update
    for _ in range(4):
        size = _json_size(update)
        if size <= max_bytes:
            return update
        leaves = _shrinkable(update)
        if not leaves:
            break
        lengths = [len(container[key]) for container, key in leaves]
        # Removing k chars removes at least k serialised bytes, so cutting the excess (plus room for
        # the markers) in chars always gets under the cap in one pass unless the floor stops it.
        target = sum(lengths) - (size - max_bytes) - _MARKER_ALLOWANCE * len(leaves) - 256
        level = max(_water_level(lengths, target), _MIN_KEEP_CHARS)
        changed = False
        for (container, key), length in zip(leaves, lengths, strict=True):
            if length > level:
                container[key] = _truncate_middle(container[key], level)
                changed = True
        if not changed:
            break
    if _json_size(update) <= max_bytes:
        return update
    return _last_resort(update, max_bytes)


def _last_resort(update: Update, max_bytes: int) -> Update:
    """Too many pieces to cut fairly (thousands of blocks): keep the card's identity and say so."""
    size = _json_size(update)
    notice = f"(content omitted: this update would be {size} bytes, over the {max_bytes}-byte limit)"
    content = update.get("content")
    if isinstance(content, list):
        update["content"] = [_text_block(notice)]
    elif isinstance(content, dict):
        update["content"] = {"type": "text", "text": notice}
    if "entries" in update:
        update["entries"] = update["entries"][:20]
    if "locations" in update:
        update["locations"] = update["locations"][:10]
    if "rawInput" in update:
        update["rawInput"] = "(omitted: too large)"
    if "rawOutput" in update:
        raw = update["rawOutput"]
        update["rawOutput"] = {"isError": raw.get("isError")} if isinstance(raw, dict) else "(omitted)"
    meta = update.get("_meta")
    if isinstance(meta, dict) and isinstance(meta.get("terminal_output"), dict):
        data = meta["terminal_output"].get("data", "")
        meta["terminal_output"]["data"] = _tail(data, max(_MIN_KEEP_CHARS, max_bytes // 16))
    return update
