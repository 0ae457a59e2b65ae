"""A call's final update(s): `tool_call_completed` sets the status (`final_status`: completed, or failed
for an error result and for a command that exited non-zero) and puts the card renderers.py drew, its
locations and a bounded `rawOutput` summary on the wire.

A terminal card closes through the terminal protocol. With the client's `_meta.terminal_output` opt-in it
gets no `content` (an update's content replaces the call's and would wipe the terminal block): the output
not yet streamed goes out as `_meta.terminal_output` (split into earlier deltas rather than cut by the
budget), then `_meta.terminal_exit`. Without it the card shows a ```console transcript and the exit status.

Must not: decide what a result view renders as (renderers.py), re-send terminal output already streamed, or
put the model's megabytes in `rawOutput`.
"""

from __future__ import annotations

from typing import Any

from registry_core import ToolResult
from registry_core.content import content_text
from registry_core.presentation import (
    CallViewT,
    ContentText,
    GenericResultView,
    ReadResultView,
    ResultViewT,
    SearchResultView,
    TerminalCallView,
    TerminalResultView,
    WebResultView,
)

from .blocks import bridge_meta
from .budget import bound_update, bounded_raw_input
from .file_changes import change_blocks
from .paths import display_path, resolve_path
from .renderers import error_message, result_card
from .text import console, console_text, fence, one_line, tail, text_block, truncate_middle
from .wire import (
    FINAL_TERMINAL_OUTPUT_CHARS,
    MAX_LOCATIONS,
    RAW_OUTPUT_TEXT_CHARS,
    CardMeta,
    ErrorSummary,
    RawOutput,
    ToolCallContent,
    ToolCallProgress,
    ToolStatus,
    WireContext,
)


def final_status(result: ToolResult, view: ResultViewT | None) -> ToolStatus:
    """A finished call's status: `failed` for an error result, and for a command that ended with a non-zero
    exit code or by a signal (the command ran, so its result is no error of the tool: the model gets its
    output and code as a value; the card says it failed, as Claude Code does). Derived from the durable
    result's view only, so a replayed card ends as the live one did."""
    if result.is_error:
        return "failed"
    if not isinstance(view, TerminalResultView) or view.background:
        return "completed"
    return "failed" if view.signal or view.exit_code not in (None, 0) else "completed"


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
) -> list[ToolCallProgress]:
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

    update: ToolCallProgress = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": final_status(result, view),
    }
    card = result_card(ctx, call_view, result, view, note)
    # The files the call changed under the roots (a command's, an MCP tool's: `file_changes`).
    changed, changed_at = change_blocks(result.meta, ctx.cwd)
    card.content += changed
    card.locations = (changed_at + card.locations)[:MAX_LOCATIONS]
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
    meta: CardMeta = {"acpBridge": bridge_meta(tool_name, note=note)}
    if is_terminal_call and ctx.terminal_meta:
        # A non-terminal result for a terminal card still has to close the display-only terminal.
        meta["terminal_exit"] = {"terminal_id": call_id, "exit_code": None, "signal": None}
    update["_meta"] = meta
    return [bound_update(update, ctx.max_update_bytes)]


def _terminal_completed(
    ctx: WireContext,
    call_id: str,
    tool_name: str,
    call_view: TerminalCallView,
    result: ToolResult,
    view: TerminalResultView | GenericResultView | None,
    terminal_output_sent: bool,
    note: str | None,
) -> list[ToolCallProgress]:
    terminal = view if isinstance(view, TerminalResultView) else None
    if terminal is not None and terminal.output is not None:
        output = terminal.output
    elif isinstance(view, GenericResultView) and view.content:
        output = "\n".join(c.text for c in view.content if isinstance(c, ContentText))
    else:
        output = content_text(result.content)
    exit_code = terminal.exit_code if terminal else None
    signal = terminal.signal if terminal else None
    full_output = terminal.full_output_path if terminal else None
    error = error_message(result)
    if error is not None and error in output:
        error = None  # the output already says it (e.g. the rejection text is the whole result)

    final: ToolCallProgress = {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call_id,
        "status": final_status(result, terminal),
    }
    if view is not None and view.title and one_line(view.title)[0]:
        final["title"] = one_line(view.title)[0]
    final["rawOutput"] = _raw_output(result, terminal, ctx.cwd)
    bridge = bridge_meta(tool_name, note=note)
    updates: list[ToolCallProgress] = []
    # The files the command changed (`file_changes`): diff blocks after the output, one location per hunk.
    changed, changed_at = change_blocks(result.meta, ctx.cwd)
    if changed_at:
        final["locations"] = changed_at

    if ctx.terminal_meta:
        # No content: it would replace (wipe) the terminal block. The card's extra lines (error, where
        # the full output went, the note) go into the terminal itself, after the output.
        data = "" if terminal_output_sent else truncate_middle(output, FINAL_TERMINAL_OUTPUT_CHARS)
        extras = [line for line in (error, _full_output_line(full_output, ctx), note) if line]
        if extras:
            # After streamed output the cursor position is unknown: start a fresh line to be safe.
            at_line_start = data.endswith("\n") if data else not terminal_output_sent
            data += ("" if at_line_start else "\r\n") + "\r\n".join(extras) + "\r\n"
        # Output beyond one update's budget goes out as earlier deltas instead of being cut.
        chunk = max(4096, ctx.max_update_bytes // 8)
        while len(data) > chunk:
            piece, data = data[:chunk], data[chunk:]
            earlier: ToolCallProgress = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": call_id,
                "_meta": {"terminal_output": {"terminal_id": call_id, "data": piece}},
            }
            updates.append(bound_update(earlier, ctx.max_update_bytes))
        meta: CardMeta = {"acpBridge": bridge}
        if data:
            meta["terminal_output"] = {"terminal_id": call_id, "data": data}
        meta["terminal_exit"] = {"terminal_id": call_id, "exit_code": exit_code, "signal": signal}
        final["_meta"] = meta
        if changed:
            # Content replaces the card's: the terminal block goes first again, so it is not wiped.
            final["content"] = [{"type": "terminal", "terminalId": call_id}, *changed]
        updates.append(bound_update(final, ctx.max_update_bytes))
        return updates

    content: list[ToolCallContent] = []
    if note and note.strip():
        content.append(text_block(note.strip()))
    if error is not None:
        content.append(text_block(fence(error)))
    if call_view.description and call_view.description.strip():
        content.append(text_block(call_view.description.strip()))
    content.append(text_block(console(call_view.title, console_text(output))))
    status_line = _exit_line(exit_code, signal)
    if status_line:
        content.append(text_block(status_line))
    full_line = _full_output_line(full_output, ctx)
    if full_line:
        content.append(text_block(full_line))
    content += changed
    final["content"] = content
    final["_meta"] = {"acpBridge": bridge}
    return [bound_update(final, ctx.max_update_bytes)]


def _raw_output(result: ToolResult, view: ResultViewT | None, cwd: str) -> RawOutput:
    """A bounded summary for clients that show rawOutput; never the megabytes the model saw."""
    out: RawOutput = {"isError": result.is_error}
    if result.error is not None:
        error: ErrorSummary = {"message": truncate_middle(result.error.message, 2_000)}
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
        out["output"] = tail(output, RAW_OUTPUT_TEXT_CHARS)
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
    elif isinstance(view, GenericResultView) and view.raw_output is not None:
        # The result's own structured data (an MCP tool's `structuredContent`), bounded like rawInput.
        out["structuredContent"] = bounded_raw_input(view.raw_output)
    text = content_text(result.content)
    if text:
        out["text"] = truncate_middle(text, RAW_OUTPUT_TEXT_CHARS)
    return out


def _exit_line(exit_code: int | None, signal: str | None) -> str | None:
    if signal:
        return f"Terminated by signal {signal}"
    if exit_code not in (None, 0):
        return f"Exited with code {exit_code}"
    return None


def _full_output_line(path: str | None, ctx: WireContext) -> str | None:
    return f"Full output: {display_path(path, ctx.cwd)}" if path else None
