"""Cards → ACP `session/update` payloads. Pure functions; the only code that knows how cards look on the
wire. Live streaming, permission requests, session/load replay and the LSP face's
`acpBridge/sessionUpdate` all go through here, so the same call always renders the same way.

Every function returns plain JSON dicts in ACP wire shape (camelCase), i.e. the `update` object of a
`session/update` notification (the caller adds `sessionId`). Paths in locations and diffs are absolute;
titles show paths relative to the session cwd (the `..` path-segment rule).

Invariant: no I/O, no asyncio, no knowledge of tool names (only of card kinds).
"""

# SIGNATURES AGREED WITH THE BRIDGE CORE — the implementation is being written; keep these names.
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from registry_core import ToolResult
from registry_core.presentation import CallViewT, ResultViewT

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
Update = dict[str, Any]


@dataclass(frozen=True, slots=True)
class WireContext:
    """What the mapping needs to know about the session and the client."""

    cwd: str  # absolute session cwd
    terminal_meta: bool = False  # client advertised clientCapabilities._meta.terminal_output == true


def tool_call_started(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    arguments: Any,
    view: CallViewT | None,
    status: ToolStatus,
) -> Update:
    """The `tool_call` update announcing a call (`view` None → a generic card titled with the tool name)."""
    raise NotImplementedError


def tool_call_status(ctx: WireContext, call_id: str, status: ToolStatus) -> Update:
    """A `tool_call_update` that only moves the status (e.g. pending → in_progress after approval)."""
    raise NotImplementedError


def terminal_output(ctx: WireContext, call_id: str, data: str, rendered_so_far: str) -> Update:
    """A live-output `tool_call_update` for a running terminal card.

    With the terminal opt-in: `_meta.terminal_output {terminal_id, data}` (a delta; never re-sends
    earlier output). Without it: the full fenced ```console block of `rendered_so_far` as content
    (content replaces; the caller bounds how often and how much it sends)."""
    raise NotImplementedError


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
    raise NotImplementedError


def permission_tool_call(
    ctx: WireContext, call_id: str, tool_name: str, arguments: Any, view: CallViewT | None, reason: str | None
) -> Update:
    """The `toolCall` (a ToolCallUpdate) carried by session/request_permission: title, kind, the diff for
    edits and writes, the command for bash, locations, and the reason as text."""
    raise NotImplementedError


def plan_from_result(result: ToolResult) -> Update | None:
    """An ACP `plan` update when the result's meta carries a plan (`{"todos": [...]}` or `{"plan": [...]}`
    of {content, status, priority?}); otherwise None."""
    raise NotImplementedError


def agent_message_chunk(text: str) -> Update:
    raise NotImplementedError


def agent_thought_chunk(text: str) -> Update:
    raise NotImplementedError


def user_message_chunk(text: str) -> Update:
    raise NotImplementedError


def display_path(path: str, cwd: str) -> str:
    """`path` relative to `cwd` when inside it (the `..` segment rule), else unchanged."""
    raise NotImplementedError


def relativize_title(title: str, paths: Mapping[str, str] | list[str], cwd: str) -> str:
    """Replace every occurrence of each absolute path (inside cwd) in `title` by its display path."""
    raise NotImplementedError
