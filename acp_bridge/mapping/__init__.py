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

The modules (import the names below from this package, not from them):
- `wire`: `Update`, `ToolStatus`, `WireContext` and the size limits.
- `text`: Markdown text: fences, ```console blocks, ANSI/CR cleanup, single-line titles, truncation markers.
- `paths`: `display_path`, `resolve_path`, `relativize_title` and card titles.
- `budget`: `bound_update`, the per-update byte budget, and the bounded `rawInput`.
- `blocks`: locations, diff blocks and `_meta.acpBridge`, shared by calls and results.
- `calls`: `tool_call_started`, `tool_call_refined`, `tool_call_previewed`, `tool_call_status`,
  `permission_tool_call`, `terminal_output`.
- `renderers`: each result view's card content (diff, search, read, web, generic, fallback).
- `results`: `tool_call_completed`, rawOutput and closing a terminal card.
- `messages`: message chunks and `plan_from_result`.
- `state`: session-state updates: `mode_update`, `usage_update`, `available_commands`.
- `nested`: the calls a program made (Code Mode sub-calls): `_meta.parentToolCallId` on their cards, the
  program card's list of them, and the permission question that names the program.
"""

# SIGNATURES AGREED WITH THE BRIDGE CORE — keep these names (additions only, with defaults).
from __future__ import annotations

from .budget import bound_update
from .calls import (
    permission_tool_call,
    terminal_output,
    tool_call_previewed,
    tool_call_refined,
    tool_call_started,
    tool_call_status,
)
from .messages import agent_message_chunk, agent_thought_chunk, plan_from_result, user_message_chunk
from .nested import (
    NestedLine,
    merged_locations,
    nested_permission_call,
    program_calls_update,
    with_nested_calls,
    with_parent,
)
from .paths import display_path, relativize_title, resolve_path
from .results import tool_call_completed
from .state import available_commands, mode_update, usage_update
from .wire import (
    DEFAULT_MAX_UPDATE_BYTES,
    FINAL_TERMINAL_OUTPUT_CHARS,
    LIVE_OUTPUT_TAIL_CHARS,
    MAX_DIFF_BLOCKS,
    MAX_LOCATIONS,
    MAX_PLAN_CONTENT_CHARS,
    MAX_PLAN_ENTRIES,
    MAX_SEARCH_LINE_CHARS,
    MAX_TITLE_CHARS,
    MAX_WEB_SOURCES,
    RAW_INPUT_MAX_BYTES,
    RAW_OUTPUT_TEXT_CHARS,
    ToolStatus,
    Update,
    WireContext,
)

__all__ = [
    "DEFAULT_MAX_UPDATE_BYTES",
    "FINAL_TERMINAL_OUTPUT_CHARS",
    "LIVE_OUTPUT_TAIL_CHARS",
    "MAX_DIFF_BLOCKS",
    "MAX_LOCATIONS",
    "MAX_PLAN_CONTENT_CHARS",
    "MAX_PLAN_ENTRIES",
    "MAX_SEARCH_LINE_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_WEB_SOURCES",
    "RAW_INPUT_MAX_BYTES",
    "RAW_OUTPUT_TEXT_CHARS",
    "NestedLine",
    "ToolStatus",
    "Update",
    "WireContext",
    "agent_message_chunk",
    "agent_thought_chunk",
    "available_commands",
    "bound_update",
    "display_path",
    "merged_locations",
    "mode_update",
    "nested_permission_call",
    "permission_tool_call",
    "plan_from_result",
    "program_calls_update",
    "relativize_title",
    "resolve_path",
    "terminal_output",
    "tool_call_completed",
    "tool_call_previewed",
    "tool_call_refined",
    "tool_call_started",
    "tool_call_status",
    "usage_update",
    "user_message_chunk",
    "with_nested_calls",
    "with_parent",
]
