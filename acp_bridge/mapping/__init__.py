"""Cards → ACP `session/update` payloads, and back. Pure functions; the only code that knows how cards look on
the wire. Live streaming, permission requests, session/load replay and the LSP face's
`acpBridge/sessionUpdate` all go through here, so the same call always renders the same way; the faces
that show updates their own way read them back through the same package (`fold`).

Every builder returns a typed JSON dict in ACP wire shape (camelCase, `wire`'s TypedDicts), i.e. the
`update` object of a `session/update` notification (the caller adds `sessionId`). Paths in locations and
diffs are absolute; titles show paths relative to the session cwd (the `..` path-segment rule).

Invariant: no I/O, no asyncio, no knowledge of tool names (only of card kinds).

Wire decisions worth knowing (ACP: https://agentclientprotocol.com/protocol/tool-calls):
- ACP's tool call has no `name` field, so the tool name travels as `_meta.acpBridge.tool`.
- Titles are single-line (Zed shows only the first line); a multi-line command is also shown in full in
  a ```console block.
- A terminal card with the client's `_meta.terminal_output` opt-in (Zed's display-only terminal) never
  gets `content` after the start (an update's content replaces the call's and would wipe the terminal
  block); output and exit travel in `_meta.terminal_output` / `_meta.terminal_exit`.
- Every update is bounded (`WireContext.max_update_bytes`): oversized text is cut in the middle with an
  explicit "(truncated, N bytes omitted)" marker instead of sending multi-megabyte lines.
- A permission option that remembers its answer carries its scope as data (`_meta.acpBridge.scope`).

The modules (import the names below from this package, not from them):
- `wire`: the wire shapes (`Update` and its members, `ToolCallUpdate`, `PermissionOption`, content,
  locations, `_meta`), `ToolStatus`, `WireContext` and the size limits.
- `text`: Markdown text: fences, ```console blocks, ANSI/CR cleanup, single-line titles, truncation markers.
- `paths`: `display_path`, `resolve_path`, `relativize_title` and card titles.
- `budget`: `bound_update`, the per-update byte budget, and the bounded `rawInput`.
- `blocks`: locations, diff blocks and `_meta.acpBridge`, shared by calls and results.
- `calls`: `tool_call_started`, `tool_call_refined`, `tool_call_previewed`, `tool_call_status`,
  `permission_tool_call`, `terminal_output`, `tool_call_progress`.
- `renderers`: each result view's card content (diff, search, read, web, generic, fallback).
- `results`: `tool_call_completed`, `final_status`, rawOutput and closing a terminal card.
- `messages`: message chunks (a replayed prompt's images too) and `plan_from_result`.
- `state`: session-state updates: `mode_update`, `usage_update`, `available_commands`,
  `session_info_update`; and `session_modes`, the `modes` of an answer that sets a session up.
- `options`: `permission_options`, the four options of a permission question, and `option_scope`.
- `questions`: a question to the user (`ask_user`): `elicitation_params` (the form) and `answer_options`
  (the answers as permission options, when the client has no form).
- `file_changes`: the files a call changed (its result meta's `fileChanges`) as diff blocks and
  locations, and the question of a rewind that would overwrite files changed since.
- `fold`: the updates read back: `read_update`, the reducer `next_card` (call id → `Card`), `fold_cards`.
- `controls`: config options, cost, a prompt's usage, compaction and notice updates (`config_select`,
  `config_boolean`, `config_option_update`, `cost`, `prompt_usage`, `compaction_update`,
  `compaction_summary_chunk`, `notice`, `model_wait`: the model's wait told as a notice, or as a
  thought; `instructions_notice`: the instructions files followed, listed as data in
  `_meta.acpBridge.instructions`).
- `nested`: the calls a program made (Code Mode sub-calls): `_meta.parentToolCallId` on their cards, the
  program card's list of them, and the permission question that names the program.
- `subagents`: the subagents RFD's `subagent_update` (`child_session_id`, `subagent_announced`,
  `subagent_ended`), for a client that advertises `clientCapabilities.subagents`.
"""

# The bridge core calls the builders by these names and parameters: keep them (additions only, with
# defaults).
from __future__ import annotations

from .budget import bound_update
from .calls import (
    permission_tool_call,
    progress_line,
    terminal_output,
    tool_call_previewed,
    tool_call_progress,
    tool_call_refined,
    tool_call_started,
    tool_call_status,
)
from .controls import (
    compaction_summary_chunk,
    compaction_update,
    config_boolean,
    config_option_update,
    config_select,
    cost,
    instructions_notice,
    model_wait,
    notice,
    prompt_usage,
)
from .file_changes import KEEP_OPTION, OVERWRITE_OPTION, change_blocks, overwrite_question
from .fold import (
    BridgeInfo,
    Card,
    CardPatch,
    Event,
    Exited,
    ModeChange,
    Outcome,
    PlanChange,
    TextChunk,
    card_of,
    fold_cards,
    next_card,
    read_patch,
    read_update,
)
from .messages import (
    agent_message_chunk,
    agent_thought_chunk,
    plan_from_result,
    resource_name,
    user_content_chunk,
    user_image_chunk,
    user_message_chunk,
    user_prompt_chunks,
)
from .nested import (
    NestedLine,
    merged_locations,
    nested_permission_call,
    program_calls_update,
    with_nested_calls,
    with_parent,
)
from .options import option_scope, permission_options, scope_words
from .paths import display_path, relativize_title, resolve_path
from .questions import ANSWER_PREFIX, DECLINE_ID, REPLY_ID, answer_options, elicitation_params
from .results import final_status, tool_call_completed
from .state import available_commands, mode_update, session_info_update, session_modes, usage_update
from .subagents import child_session_id, subagent_announced, subagent_ended
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
    AvailableCommandsUpdate,
    ChunkKind,
    ConfigBoolean,
    ConfigOption,
    ConfigSelect,
    CurrentModeUpdate,
    DiffItem,
    Location,
    MessageChunk,
    PermissionKind,
    PermissionOption,
    Plan,
    PlanEntry,
    PromptUsage,
    SessionModeState,
    SubagentState,
    SubagentUpdate,
    ToolCallContent,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    ToolKind,
    ToolStatus,
    Update,
    UsageUpdate,
    WireContext,
)

__all__ = [
    "ANSWER_PREFIX",
    "DECLINE_ID",
    "DEFAULT_MAX_UPDATE_BYTES",
    "FINAL_TERMINAL_OUTPUT_CHARS",
    "KEEP_OPTION",
    "LIVE_OUTPUT_TAIL_CHARS",
    "MAX_DIFF_BLOCKS",
    "MAX_LOCATIONS",
    "MAX_PLAN_CONTENT_CHARS",
    "MAX_PLAN_ENTRIES",
    "MAX_SEARCH_LINE_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_WEB_SOURCES",
    "OVERWRITE_OPTION",
    "RAW_INPUT_MAX_BYTES",
    "RAW_OUTPUT_TEXT_CHARS",
    "REPLY_ID",
    "AvailableCommandsUpdate",
    "BridgeInfo",
    "Card",
    "CardPatch",
    "ChunkKind",
    "ConfigBoolean",
    "ConfigOption",
    "ConfigSelect",
    "CurrentModeUpdate",
    "DiffItem",
    "Event",
    "Exited",
    "Location",
    "MessageChunk",
    "ModeChange",
    "NestedLine",
    "Outcome",
    "PermissionKind",
    "PermissionOption",
    "Plan",
    "PlanChange",
    "PlanEntry",
    "PromptUsage",
    "SessionModeState",
    "SubagentState",
    "SubagentUpdate",
    "TextChunk",
    "ToolCallContent",
    "ToolCallProgress",
    "ToolCallStart",
    "ToolCallUpdate",
    "ToolKind",
    "ToolStatus",
    "Update",
    "UsageUpdate",
    "WireContext",
    "agent_message_chunk",
    "agent_thought_chunk",
    "answer_options",
    "available_commands",
    "bound_update",
    "card_of",
    "change_blocks",
    "child_session_id",
    "compaction_summary_chunk",
    "compaction_update",
    "config_boolean",
    "config_option_update",
    "config_select",
    "cost",
    "display_path",
    "elicitation_params",
    "final_status",
    "fold_cards",
    "instructions_notice",
    "merged_locations",
    "mode_update",
    "model_wait",
    "nested_permission_call",
    "next_card",
    "notice",
    "option_scope",
    "overwrite_question",
    "permission_options",
    "permission_tool_call",
    "plan_from_result",
    "program_calls_update",
    "progress_line",
    "prompt_usage",
    "read_patch",
    "read_update",
    "relativize_title",
    "resolve_path",
    "resource_name",
    "scope_words",
    "session_info_update",
    "session_modes",
    "subagent_announced",
    "subagent_ended",
    "terminal_output",
    "tool_call_completed",
    "tool_call_previewed",
    "tool_call_progress",
    "tool_call_refined",
    "tool_call_started",
    "tool_call_status",
    "usage_update",
    "user_content_chunk",
    "user_image_chunk",
    "user_message_chunk",
    "user_prompt_chunks",
    "with_nested_calls",
    "with_parent",
]
