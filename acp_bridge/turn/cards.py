"""The card book of one turn: each call the turn announces, as its card knows it (`CallState`), and what
keeps the cards: announcing them (while the model still streams a call, and when it asked for it), their
live output and progress, the permission decision kept for the gate, the question's card, and completing
each one once with its durable result, logged first.

Contract: each announced call has one card, completed once (with its result, or closed as stopped when the
turn ends first: `settle_leftovers`), and its result is logged before the card completes. A card's
updates go out through the turn's `send`, so a detached turn's cards fall silent with it. Code Mode's
nested cards are kept in the same book; what only they need (their program's list of calls, their
question naming the program) is `NestedHooks`, which `nested.NestedCards` implements.

Must not: build wire shapes (only `acp_bridge.mapping` does), run a call, or touch the model's history
except to answer, when the turn ends, a call it asked for (`settle_leftovers`).
"""

from __future__ import annotations

import dataclasses
import functools
from asyncio import TimerHandle
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel
from acp_bridge.history.session_log import CallSettled, CodeDispatched, LogEvent
from acp_bridge.mapping import ToolCallUpdate, ToolStatus, Update, WireContext
from acp_bridge.models import Message, ToolCallRequest, ToolCallStarted, ToolResultMessage
from acp_bridge.permissions.policy import Decision, SessionPermissions
from acp_bridge.turn.background import BackgroundCards, LiveCard, runs_on
from acp_bridge.turn.live_output import LiveOutput
from acp_bridge.turn.presentable import Presentable
from registry_core import (
    CANCELLED,
    TIMEOUT,
    CancelReason,
    CancelSignal,
    CodeDispatchEvent,
    NestedCallProgress,
    ParsedArguments,
    StatusProgress,
    TerminalCallView,
    TerminalOutputProgress,
    TerminalResultView,
    TextBlock,
    ToolExecution,
    ToolExecutionResult,
    ToolFailureInfo,
    ToolProgress,
    ToolResult,
    ToolResultEvent,
    ToolScope,
    content_text,
    snapshot,
)
from registry_core.presentation import CallViewT, ResultViewT
from registry_core.registry import ExecutionMode

USER_CANCEL = CancelReason(CANCELLED, "Cancelled by the user.")

_UNFINISHED = ToolFailureInfo("The model's response ended before this call was complete; it did not run.")


@dataclass(slots=True)
class CallState:
    """One announced call of the current turn, as its card knows it."""

    call_id: str
    name: str
    arguments: Any  # what the model sent: an object, or the raw string (None while still streaming)
    view: CallViewT | None
    status: ToolStatus
    wire: WireContext
    presentable: Presentable | None = None
    note: str | None = None
    live: LiveOutput | None = None
    done: bool = False
    # The policy's latest decision for the call and the `SessionPermissions.version` it was made at: the
    # gate reuses it while that version stands (`decide`). Never for an id two calls of a step share.
    decision: Decision | None = None
    decided_at: int = -1
    shared_id: bool = False
    # The durable result the card was completed with (what the log records and the model is told).
    result: ToolResult | None = None
    # A nested call (a Code Mode sub-call): the id of the call whose program made it. Its card carries
    # `_meta.parentToolCallId`; its result is logged as a `CodeDispatched`, never told to the model.
    parent_id: str | None = None
    # A program's card: its nested calls, in the order they were made, and its pending redraw; the status
    # line it last reported (a subagent's "Step 3"), which heads the list while it runs.
    nested: list[str] = field(default_factory=list)
    redraw: TimerHandle | None = None
    status_line: str | None = None
    # What the card shows now (its latest title and locations on the wire): its program's card lists it so.
    shown_title: str = ""
    shown_locations: list[mapping.Location] = field(default_factory=list)


class CardHost(Protocol):
    """What the card book needs of its session (a `loop.TurnHost` is one)."""

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def scope(self) -> ToolScope: ...

    @property
    def wire(self) -> WireContext: ...

    @property
    def permissions(self) -> SessionPermissions: ...

    @property
    def background(self) -> BackgroundCards | None:
        """The keeper of cards whose commands run on after their result (`turn.background`), if any."""
        ...


class NestedHooks(Protocol):
    """Code Mode's nested cards as the card book, and its turn through it, use them (`nested.NestedCards`
    is them, made by the book: `CardBook(nested=NestedCards)`)."""

    def state_of(self, execution: ToolExecution) -> CallState | None:
        """The open card of `execution` when it is a nested call of one of the turn's programs."""
        ...

    def announce(self, execution: ToolExecution, progress: NestedCallProgress) -> None:
        """A program is about to dispatch a call: show its card."""
        ...

    def moved(self, state: CallState) -> None:
        """A nested call's card moved: its program's list of calls is to be redrawn."""
        ...

    def moved_program(self, program: CallState) -> None:
        """A program's own status line changed: its list of calls is to be redrawn."""
        ...

    def listed(self, program: CallState, update: Update) -> Update:
        """A program's last update, listing its nested calls as they ended."""
        ...

    def question_card(self, parent_id: str, tool_call: ToolCallUpdate) -> ToolCallUpdate:
        """A nested call's permission question, naming the program it comes from."""
        ...

    def on_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> bool:
        """A nested call settled and the registry logged it: complete its card. False when it is none of
        the turn's."""
        ...


class CardBook:
    """The cards of one turn's calls, top-level and nested, by call id (`calls`), and those shown while
    the model still streams their arguments (`streaming`). `send` and `record` are the turn's (muted once
    it is detached); `signal` is the turn's, by which its own calls are told from another turn's."""

    def __init__(
        self,
        host: CardHost,
        signal: CancelSignal,
        *,
        send: Callable[[Update], None],
        record: Callable[[LogEvent], None],
        nested: Callable[[CardBook], NestedHooks],
    ) -> None:
        self.host = host
        self.signal = signal
        self.send = send
        self.record = record
        self.calls: dict[str, CallState] = {}
        # Calls announced while the model was still streaming their arguments (`ToolCallStarted`), not
        # yet requested by a completed step; `announce` moves each one to `calls`.
        self.streaming: dict[str, CallState] = {}
        self.nested = nested(self)

    def mine(self, execution: ToolExecution) -> bool:
        """Whether `execution` is one of this turn's own calls (not another turn's that reuses an id: an
        abandoned turn's call may settle while the next turn runs; nor a nested call)."""
        return execution.signal is self.signal and execution.parent is None

    def state_of(self, execution: ToolExecution) -> CallState | None:
        """The card of one of this turn's calls, top-level or nested."""
        if self.mine(execution):
            return self.calls.get(execution.call_id)
        return self.nested.state_of(execution)

    def emit(self, state: CallState, update: Update) -> None:
        """Send one update of a call's card, remembering what the card shows (a nested card's updates name
        its program)."""
        if state.parent_id is not None:
            update = mapping.with_parent(update, state.parent_id)
        title = update.get("title")
        if isinstance(title, str):
            state.shown_title = title
        locations = update.get("locations")
        if isinstance(locations, list):
            state.shown_locations = locations
        self.send(update)

    # --- announcing ---------------------------------------------------------------------------------

    def announce_streaming(self, event: ToolCallStarted) -> None:
        """The model began a call whose arguments are still streaming: show it at once, `pending`, with
        the card its presenter makes of no arguments when the tool accepts none (else the generic card:
        the tool's name). `announce` refines it when the step completes."""
        if event.id in self.calls or event.id in self.streaming:
            return
        presentable = Presentable.of(self.host.scope, event.name, {})
        view = presentable.call_view() if presentable is not None else None
        wire = self.host.wire
        if not isinstance(view, TerminalCallView):
            # Zed opens a terminal widget only for `_meta.terminal_info` on a `tool_call`, never on an
            # update: should this call turn out to be a terminal one, it shows its output as console
            # text instead of in a widget that would never open.
            wire = dataclasses.replace(wire, terminal_meta=False)
        self.streaming[event.id] = CallState(event.id, event.name, None, view, "pending", wire)
        self.send(mapping.tool_call_started(wire, event.id, event.name, None, view, "pending"))

    def announce_step(self, calls: Sequence[ToolCallRequest]) -> list[ExecutionMode]:
        """Show the cards of one step's calls (`announce`), in order; their execution modes."""
        modes = [self.announce(call) for call in calls]
        for call_id, count in Counter(call.id for call in calls).items():
            if count > 1:
                # Two calls under one id share one card state: neither may take the other's decision.
                self.calls[call_id].shared_id = True
        return modes

    def announce(self, call: ToolCallRequest) -> ExecutionMode:
        """Show a requested call's card, `pending` when the policy will ask, else `in_progress`; a card
        shown while the call streamed is refined by an update, never announced twice. The arguments are
        parsed once, for the card and for the execution mode returned, and the policy's decision is kept
        for the permission gate (`decide`). A terminal card gets the `LiveOutput` its output streams
        through."""
        host = self.host
        presentable = Presentable.of(host.scope, call.name, call.arguments)
        view = presentable.call_view() if presentable is not None else None
        status: ToolStatus = "in_progress"
        decision: Decision | None = None
        permissions = host.permissions
        if not isinstance(call.arguments, str):
            decision = permissions.decide(call.name, call.arguments)
            if decision.kind == "ask":
                status = "pending"
        early = self.streaming.pop(call.id, None)
        wire = early.wire if early is not None else host.wire
        state = CallState(call.id, call.name, call.arguments, view, status, wire, presentable)
        state.decision, state.decided_at = decision, permissions.version
        if isinstance(view, TerminalCallView):
            state.live = self.live_output(call.id, wire)
        self.calls[call.id] = state
        if early is None:
            self.emit(
                state, mapping.tool_call_started(wire, call.id, call.name, call.arguments, view, status)
            )
        else:
            self.emit(
                state, mapping.tool_call_refined(wire, call.id, call.name, call.arguments, view, status)
            )
        return presentable.execution_mode() if presentable is not None else "exclusive"

    def parsed(self, call: ToolCallRequest) -> ParsedArguments | None:
        """The arguments `announce` parsed for `call`'s card, for the registry to run the call with; None
        when they did not parse, or two calls of the step share its id (each is then parsed on its own)."""
        state = self.calls.get(call.id)
        if state is None or state.shared_id or state.arguments is not call.arguments:
            return None
        return state.presentable.parsed_arguments() if state.presentable is not None else None

    def live_output(self, call_id: str, wire: WireContext) -> LiveOutput:
        """The `LiveOutput` a terminal card's output streams through."""
        return LiveOutput(
            functools.partial(self._send_live, call_id),
            deltas=wire.terminal_meta,
            backlog=self.host.channel.backlog,
        )

    def _send_live(self, call_id: str, delta: str, tail: str) -> None:
        state = self.calls.get(call_id)
        if state is not None:
            self.emit(state, mapping.terminal_output(state.wire, call_id, delta, tail, call_view=state.view))

    def on_progress(self, execution: ToolExecution, progress: ToolProgress) -> None:
        """A running call's progress sink: a terminal's output, a status, or a program's nested call."""
        if isinstance(progress, NestedCallProgress):
            self.nested.announce(execution, progress)
            return
        state = self.calls.get(execution.call_id)
        if state is None or state.done:
            return
        if isinstance(progress, TerminalOutputProgress):
            if state.live is not None:
                state.live.feed(progress.data)
        elif isinstance(progress, StatusProgress) and not isinstance(state.view, TerminalCallView):
            state.status_line = mapping.progress_line(progress)
            if state.nested:
                self.nested.moved_program(state)  # the list is redrawn headed by the new line
            else:
                self.send(mapping.tool_call_progress(state.wire, execution.call_id, state.view, progress))

    # --- permissions ----------------------------------------------------------------------------------

    def decide(self, execution: ToolExecution, permissions: SessionPermissions) -> Decision:
        """The policy's decision for a call: for one of this turn's cards (a nested call's included), the
        one made when it was announced (or last decided) while `permissions.version` says nothing it
        depends on changed since; otherwise `permissions.decide`, kept for the next question about the
        same call."""
        state = self.state_of(execution)
        if state is None or state.done or state.shared_id or state.name != execution.name:
            return permissions.decide(execution.name, execution.arguments)
        if state.decision is None or state.decided_at != permissions.version:
            state.decision = permissions.decide(execution.name, execution.arguments)
            state.decided_at = permissions.version
        return state.decision

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        """The policy decided (or the user answered) for a call, top-level or nested: keep its note, move
        its card."""
        state = self.state_of(execution)
        call_id = execution.call_id
        if state is None or state.done:
            return
        if decision.note is not None:
            state.note = decision.note
        target: ToolStatus | None = None
        if decision.kind == "allow" and state.status == "pending":
            target = "in_progress"
        elif decision.kind == "ask" and state.status != "pending":
            target = "pending"
        if target is not None:
            state.status = target
            self.emit(state, mapping.tool_call_status(state.wire, call_id, target))
            if state.parent_id is not None:
                self.nested.moved(state)

    async def permission_tool_call(self, execution: ToolExecution, reason: str | None) -> ToolCallUpdate:
        """The `toolCall` of a permission question: this call's card (a nested call's names the program
        it comes from), or (another turn's call) a card of its own arguments. The preview step comes
        first: a tool with a `preview_call` computes its card against the world as it is now (a file
        change's real hunks), and the pending card is redrawn with it (`tool_call_previewed`), so the card
        and the question show what will happen."""
        call_id = execution.call_id
        state = self.state_of(execution)
        if state is None:
            presentable = Presentable.of(self.host.scope, execution.name, execution.arguments)
            preview = await presentable.preview_view(execution) if presentable is not None else None
            return mapping.permission_tool_call(
                self.host.wire, call_id, execution.name, execution.arguments, preview, reason
            )
        if state.presentable is not None and not state.shared_id:
            preview = await state.presentable.preview_view(execution)
            if preview is not None and preview != state.view and not state.done:
                state.view = preview
                self.emit(
                    state,
                    mapping.tool_call_previewed(state.wire, call_id, state.name, state.arguments, preview),
                )
        tool_call = mapping.permission_tool_call(
            state.wire, call_id, state.name, state.arguments, state.view, reason
        )
        if state.parent_id is not None:
            tool_call = self.nested.question_card(state.parent_id, tool_call)
        return tool_call

    # --- completing -----------------------------------------------------------------------------------

    def on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Result observer: complete the card as soon as one of this turn's calls settles."""
        if self.mine(execution):
            self.complete(execution.call_id, result)

    def complete(self, call_id: str, result: ToolExecutionResult) -> None:
        """Complete the card of `call_id` with its call's result, unless it is done already."""
        state = self.calls.get(call_id)
        if state is not None and not state.done:
            self.finish(state, ToolResult.of(result))

    def finish(
        self, state: CallState, durable: ToolResult, *, dispatch: CodeDispatchEvent | None = None
    ) -> None:
        """Complete a call's card with its durable result, once, with the plan update when the result
        carries one. A terminal card stopped before its tool could describe the end keeps the output it
        showed (`_stopped_terminal_view`); a program's card keeps the list of its nested calls. A nested
        call's `dispatch` is the registry's durable record of it, logged as is."""
        state.done = True
        if state.live is not None:
            state.live.close()
        state.result = durable
        # Logged before the card is shown (and the model told): whatever the client saw completed, a
        # reloaded session shows completed too, even when the bridge dies right after.
        self._record_result(state, durable, dispatch)
        presentable = state.presentable
        result_view: ResultViewT | None = _stopped_terminal_view(state, durable)
        if result_view is None and presentable is not None:
            result_view = presentable.result_view(durable)
        state.status = mapping.final_status(durable, result_view)  # failed: a non-zero exit too
        if runs_on(result_view) and self._hand_over(state):
            return  # bg: its command runs on; the card stays live in its session's keeper
        self._send_completed(state, durable, result_view)
        plan = mapping.plan_from_result(durable)
        if plan is not None:
            self.send(plan)

    def _hand_over(self, state: CallState) -> bool:
        """bg: hand a card whose command runs on to the host's keeper (False: it keeps none)."""
        keeper = self.host.background
        card = LiveCard(
            state.call_id, state.name, state.arguments, state.view, state.wire, state.presentable,
            state.note, state.parent_id,
        )  # fmt: skip
        if keeper is None or not keeper.keep_live(card):
            return False
        if state.parent_id is not None:
            self.nested.moved(state)
        return True

    def _send_completed(self, state: CallState, result: ToolResult, result_view: ResultViewT | None) -> None:
        """Send the updates completing a card: a program's last one lists its nested calls (their final
        state: they all settled before it did); a nested card's completion is listed on its program's
        card."""
        updates: list[Update] = list(
            mapping.tool_call_completed(
                state.wire,
                state.call_id,
                state.name,
                state.arguments,
                state.view,
                result,
                result_view,
                terminal_output_sent=state.live.sent if state.live is not None else False,
                note=state.note,
            )
        )
        if state.nested and updates:
            updates[-1] = self.nested.listed(state, updates[-1])
        for update in updates:
            self.emit(state, update)
        if state.parent_id is not None:
            self.nested.moved(state)

    def settle_leftovers(self, history: list[Message], *, record: bool) -> None:
        """A turn that ends abruptly (hard cancel, model error mid-batch or mid-stream) still ends every
        card it opened (logged first if `record`), and keeps `history` valid: every call the model asked
        for gets a result (and a call it never finished asking for gets none: the model's history does
        not have it)."""
        reason = self.signal.reason or USER_CANCEL
        stopped = ToolFailureInfo(reason.message, reason.code)
        for state in self.streaming.values():
            # Not logged: the model never finished asking for these, so its history has no such call.
            self._close_unfinished(state, stopped if self.signal.cancelled else _UNFINISHED)
        self.streaming.clear()
        answered = {m.call_id for m in history if isinstance(m, ToolResultMessage)}
        # Nested calls first: a program's card lists them as they ended.
        ordered = sorted(self.calls.values(), key=lambda state: state.parent_id is None)
        for state in ordered:
            if not state.done:
                # Logged like any result, so a reloaded session shows what this card showed.
                self._close_unfinished(state, stopped, record=record)
        for call_id, state in self.calls.items():
            result = state.result
            if state.parent_id is None and call_id not in answered and result is not None:
                # The model is told what the card showed and the log keeps: the result the call settled
                # with (the observer saw it), else why it was stopped.
                history.append(
                    ToolResultMessage(call_id, state.name, content_text(result.content), result.is_error)
                )

    def _record_result(
        self, state: CallState, result: ToolResult, dispatch: CodeDispatchEvent | None = None
    ) -> None:
        """Log a call's durable result: a `tool/result`, or for a nested call a `tool/code-dispatch` (the
        registry's record when it settled; one made of the same fields when the turn closes it)."""
        if state.parent_id is None:
            event = ToolResultEvent(
                state.call_id, state.name, result.content, result.is_error, result.error, result.meta
            )
            self.record(CallSettled(event, state.note))
            return
        if dispatch is not None:
            self.record(CodeDispatched(dispatch, state.note))
            return
        made = CodeDispatchEvent(
            state.parent_id,
            state.call_id,
            state.name,
            snapshot(state.arguments),
            result.content,
            result.is_error,
            result.error,
            result.meta,
        )
        self.record(CodeDispatched(made, state.note))

    def _close_unfinished(self, state: CallState, failure: ToolFailureInfo, *, record: bool = False) -> None:
        """End the card of a call that never settled, failed with `failure` (logged first if `record`)."""
        state.done = True
        if state.live is not None:
            state.live.close()
        result = ToolResult((TextBlock(failure.message),), True, failure)
        state.result = result
        state.status = "failed"
        if record:
            self._record_result(state, result)
        self._send_completed(state, result, _stopped_terminal_view(state, result))


def _stopped_terminal_view(state: CallState, result: ToolResult) -> TerminalResultView | None:
    """The fallback result view of a terminal card stopped (cancelled, or timed out by the registry) with no
    presentation meta: a terminal tool that does not record `set_partial_meta` (built-in `bash` does), or a
    call closed after its turn was abandoned. It shows the output streamed so far and no exit status (none
    was observed), so the reason shows as the card's error line. Otherwise None: the presenter's view
    applies (its own fallback would show only the reason, in place of the output)."""
    if not isinstance(state.view, TerminalCallView) or result.meta is not None or result.error is None:
        return None
    if result.error.code not in (CANCELLED, TIMEOUT):
        return None
    return TerminalResultView(output=state.live.tail() if state.live is not None else "")
