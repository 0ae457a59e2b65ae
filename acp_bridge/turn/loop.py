"""The agent loop of one prompt: model step → cards → tool batch → results → next step, until a step asks
for no tool call (`end_turn`), the step limit (`max_turn_requests`) or a cancel (`cancelled`).

Contract: each call the turn announces has one card, completed once (with its result, or closed as
stopped when the turn ends first), and that result is logged before the card completes; every call the
model asked for gets an answer in the history. The turn reaches its session only through `TurnHost`.

A session with MCP servers (`acp_bridge.mcp`) first waits for them to start (bounded; failures are said
once as an agent message) and may turn a `/server:prompt` command into the prompt's text; their
instructions join the system prompt, and the tool list is rebuilt for the next step whenever the
registry's `tools_version` moved (a server's `list_changed`).

Must not: know the transport (updates go through the host's `ClientChannel`), build wire shapes (only
`acp_bridge.mapping` does), let a tool's failure end the turn (failures are data), or touch its session
once detached.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel
from acp_bridge.history.session_log import (
    AssistantStep,
    CallSettled,
    CodeDispatched,
    DeferredContext,
    LogEvent,
    UserPrompt,
)
from acp_bridge.mapping import ToolCallUpdate, ToolStatus, Update, WireContext
from acp_bridge.models import (
    AssistantMessage,
    ImageData,
    Message,
    ModelBackend,
    ModelError,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from acp_bridge.models.images import result_images, without_images
from acp_bridge.permissions.policy import Decision, SessionPermissions
from acp_bridge.turn.background import BackgroundCards, LiveCard, runs_on
from acp_bridge.turn.live_output import LiveOutput
from acp_bridge.turn.presentable import Presentable
from registry_core import (
    CANCELLED,
    TIMEOUT,
    Agent,
    CancelController,
    CancelReason,
    CancelSignal,
    CodeDispatchEvent,
    JsonValue,
    NestedCallProgress,
    StatusProgress,
    TerminalCallView,
    TerminalOutputProgress,
    TerminalResultView,
    TextBlock,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailureInfo,
    ToolProgress,
    ToolResult,
    ToolResultEvent,
    ToolScope,
    content_text,
    run_step,
    snapshot,
    thaw,
)
from registry_core.cancellation import derives_from
from registry_core.presentation import CallViewT, ResultViewT
from registry_core.registry import ExecutionMode

if TYPE_CHECKING:
    from acp_bridge.mcp.servers import SessionServers

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

USER_CANCEL = CancelReason(CANCELLED, "Cancelled by the user.")

# How long closing a cancelled model stream may take (an HTTP response to release) before the turn goes
# on without it. Shorter than the session's `CANCEL_GRACE`, so a stream that will not close still lets
# the turn stop by itself rather than be abandoned.
STREAM_CLOSE_DEADLINE_S = 0.5

# How long a program's card waits to list its nested calls again after one of them moved: a program making
# hundreds of calls redraws its card a few times a second, not twice per call.
NESTED_REDRAW_S = 0.05

# A final step's finish reason (OpenAI's names) that is not a normal end of the turn.
_FINISH_STOPS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


class TurnHost(Protocol):
    """What a turn needs of its session (`sessions.Session` is one): where its updates and log events go,
    the model, the tools and who runs them, and the permission state its cards reflect."""

    @property
    def id(self) -> str: ...

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def backend(self) -> ModelBackend: ...

    @property
    def scope(self) -> ToolScope: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def wire(self) -> WireContext: ...

    @property
    def permissions(self) -> SessionPermissions: ...

    @property
    def mcp(self) -> SessionServers | None:
        """The session's MCP servers, or None when it has none."""
        ...

    @property
    def background(self) -> BackgroundCards | None:
        """The keeper of cards whose commands run on after their result (`turn.background`), if any."""
        ...

    def model_schemas(self) -> list[dict[str, Any]]:
        """The tool schemas the model is given (the scope's, or only the Code Mode transport's)."""
        ...

    def record(self, event: LogEvent) -> None:
        """Log a durable event (nothing when the session is not recorded)."""
        ...

    def model_choice(self) -> tuple[str | None, str | None]:
        """The session's (model, reasoning effort) for the next request; None for the backend's defaults."""
        ...

    def report_usage(self, usage: Usage) -> Update | None:
        """Account for a response's usage; the update telling the client, or None to tell nothing."""
        ...

    async def compact(
        self, history: list[Message], signal: CancelSignal, *, focus: str | None = None, forced: bool = False
    ) -> None:
        """Compact `history` in place when the context is full enough (`forced`: `/compact`, always). A
        cancel through `signal` leaves it unchanged. Raises `ModelError` only when `forced`."""
        ...


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
    # A program's card: its nested calls, in the order they were made, and its pending redraw.
    nested: list[str] = field(default_factory=list)
    redraw: asyncio.TimerHandle | None = None
    # What the card shows now (its latest title and locations on the wire): its program's card lists it so.
    shown_title: str = ""
    shown_locations: list[mapping.Location] = field(default_factory=list)


@dataclass(slots=True)
class _StepOutput:
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    complete: StepComplete | None = None


class Turn:
    """One prompt's run. Created and awaited by `Session.prompt`; `cancel()` may come from anywhere.

    `history` is the conversation the turn appends to (the session's, until the turn is detached);
    `system_prompt` goes with every step; `turn_index` numbers the prompt for the model (a scripted model
    replays by it)."""

    def __init__(
        self,
        host: TurnHost,
        history: list[Message],
        *,
        system_prompt: str,
        turn_index: int,
        max_steps: int,
        vision: bool = True,
    ) -> None:
        self.host = host
        # Whether the model sees images; without vision each one is named in text instead.
        self.vision = vision
        self.history = history
        self.system_prompt = system_prompt
        self.turn_index = turn_index
        self.max_steps = max_steps
        self.controller = CancelController()
        self.calls: dict[str, CallState] = {}
        # Calls announced while the model was still streaming their arguments (`ToolCallStarted`), not
        # yet requested by a completed step; `_announce` moves each one to `calls`.
        self.streaming: dict[str, CallState] = {}
        self.detached = False

    @property
    def cancelled(self) -> bool:
        return self.controller.signal.cancelled

    def cancel(self, reason: CancelReason = USER_CANCEL) -> None:
        """Fire the turn's one signal: it stops the model stream (`_model_step`), every running tool (the
        pipeline cancels the tool's body; `bash` kills its process group) and every pending permission
        question."""
        self.controller.cancel(reason)

    def detach(self) -> None:
        """Give up on a turn that did not stop after a cancel (a tool ignored it): close its open cards,
        answer its calls in the session's history, and mute it, so the session can move on while the stuck
        task ends in the background without touching the session again."""
        self._settle_leftovers()
        self.detached = True
        self.history = list(self.history)

    def _send(self, update: Update) -> None:
        if not self.detached:
            self.host.channel.send_update(self.host.id, update)

    def _record(self, event: LogEvent) -> None:
        if not self.detached:
            self.host.record(event)

    def _mine(self, execution: ToolExecution) -> bool:
        """Whether `execution` is one of this turn's own calls (not another turn's that reuses an id: an
        abandoned turn's call may settle while the next turn runs; nor a nested call)."""
        return execution.signal is self.controller.signal and execution.parent is None

    def _nested_state(self, execution: ToolExecution) -> CallState | None:
        """The open card of `execution` when it is a nested call of one of this turn's programs."""
        if execution.parent is None:
            return None
        state = self.calls.get(execution.call_id)
        if state is None or state.parent_id is None or state.done or state.name != execution.name:
            return None
        return state if derives_from(execution.signal, self.controller.signal) else None

    def _state_of(self, execution: ToolExecution) -> CallState | None:
        """The card of one of this turn's calls, top-level or nested."""
        if self._mine(execution):
            return self.calls.get(execution.call_id)
        return self._nested_state(execution)

    def _program_of(self, execution: ToolExecution) -> CallState | None:
        """The open card of the call whose body reports on `execution` (a program making nested calls).
        Its body sees the call with the signal an execute wrapper gave it, derived from the turn's."""
        state = self.calls.get(execution.call_id)
        if state is None or state.done or state.name != execution.name:
            return None
        if execution.parent is None and state.parent_id is None:
            return state if derives_from(execution.signal, self.controller.signal) else None
        return self._nested_state(execution)

    def _emit(self, state: CallState, update: Update) -> None:
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
        self._send(update)

    # --- the loop ---------------------------------------------------------------------------------

    async def run(
        self, user_text: str, images: tuple[ImageData, ...] = (), blocks: tuple[JsonValue, ...] | None = None
    ) -> StopReason:
        """Run the prompt to its stop reason. Each step's text, thought and calls join the history and the
        log as one assistant message, with its calls in the order the model asked; a step's token usage
        becomes a `usage_update` (when the host reports one), and the host may compact the history before
        a step. However the turn ends, its open cards are closed (`_settle_leftovers`). `blocks`: the
        prompt's content blocks as the client sent them (`prompt_blocks.Prompt.blocks`), logged with it
        for a replay to show."""
        host = self.host
        servers = host.mcp
        if servers is not None:
            # The session's MCP servers: wait for their start, report failures, expand `/server:prompt`.
            prepared = await servers.prepare_turn(
                user_text, self.controller.signal, lambda text: self._send(mapping.agent_message_chunk(text))
            )
            if prepared is None:
                return "cancelled" if self.cancelled else "end_turn"
            user_text = prepared
        self.history.append(UserMessage(user_text, images))
        self._record(UserPrompt(user_text, images, blocks))
        registry = host.scope.registry
        tools, tools_version = self._tools(), registry.tools_version
        try:
            for step_index in range(self.max_steps):
                if self.cancelled:
                    return "cancelled"
                # Between steps no call is running: the place to compact a context that filled up.
                await host.compact(self.history, self.controller.signal)
                if self.cancelled:
                    return "cancelled"
                # bg: background commands that ended unseen are told to the model before its step.
                for note in host.background.end_notes() if host.background is not None else ():
                    self.history.append(UserMessage(note))
                    self._record(DeferredContext(note))
                model, effort = host.model_choice()
                if registry.tools_version != tools_version:
                    # A tool came or went (an MCP server's list changed): the next step sees the new list.
                    tools, tools_version = self._tools(), registry.tools_version
                prompt = self.system_prompt
                if servers is not None:
                    prompt += servers.instructions()
                request = StepRequest(
                    messages=tuple(self.history) if self.vision else without_images(self.history),
                    tools=tools,
                    turn_index=self.turn_index,
                    step_index=step_index,
                    system_prompt=prompt,
                    model=model,
                    reasoning_effort=effort,
                )
                out = await self._model_step(request)
                text, thought = "".join(out.text), "".join(out.thought)
                complete = out.complete
                if complete is not None and complete.usage is not None:
                    usage = host.report_usage(complete.usage)
                    if usage is not None:
                        self._send(usage)
                calls = complete.tool_calls if complete is not None else ()
                if text or thought or calls:
                    self.history.append(AssistantMessage(text, tuple(calls), thought or None))
                    self._record(AssistantStep(text, thought, tuple(calls)))
                if complete is None:
                    return "cancelled"
                if not calls:
                    return _FINISH_STOPS.get(complete.finish_reason or "", "end_turn")
                concluded = await self._run_calls(calls)
                if self.cancelled:
                    return "cancelled"
                if concluded:
                    return "end_turn"
            return "max_turn_requests"
        finally:
            self._settle_leftovers()

    def _tools(self) -> list[ToolSpec]:
        return [ToolSpec(s["name"], s["description"], s["parameters"]) for s in self.host.model_schemas()]

    async def run_compaction(self, focus: str | None) -> StopReason:
        """`/compact [focus]`: compact the session's history now, as the prompt's whole work (no model
        step follows). Raises `ModelError` when the summary failed."""
        try:
            await self.host.compact(self.history, self.controller.signal, focus=focus, forced=True)
        finally:
            self._settle_leftovers()
        return "cancelled" if self.cancelled else "end_turn"

    async def _model_step(self, request: StepRequest) -> _StepOutput:
        """Stream one step: thought and text deltas go out as chunks as they arrive (the channel drained
        after each), and a call the model begins is shown at once (`_announce_streaming`). `complete`
        stays None when the turn was cancelled mid-stream.

        The stream runs in a cancel scope that the turn's signal cancels: a cancel interrupts whatever the
        stream awaits (the model's network read, a slow client's drain) at once, and only that; a
        cancellation of the turn's own task (the connection going away) is not the scope's and still
        propagates, with no bookkeeping of who cancelled whom. The scope's cancellation is level-triggered:
        cleanup inside the backend's generator must shield its own awaits, as httpx does when it closes a
        response (httpcore's `AsyncShieldCancellation`); the close that follows is shielded here.
        """
        out = _StepOutput()
        signal = self.controller.signal
        if signal.cancelled:
            return out
        with anyio.CancelScope() as scope:
            dispose = signal.on_cancel(lambda _reason: scope.cancel())
            try:
                await self._consume(self.host.backend.stream_step(request), out)
            finally:
                dispose()
        if scope.cancelled_caught:
            out.complete = None
        return out

    async def _consume(self, stream: AsyncIterator[StepEvent], out: _StepOutput) -> None:
        channel = self.host.channel
        try:
            async for event in stream:
                if isinstance(event, ThoughtDelta):
                    if event.text:
                        out.thought.append(event.text)
                        self._send(mapping.agent_thought_chunk(event.text))
                        await channel.drain()
                elif isinstance(event, TextDelta):
                    if event.text:
                        out.text.append(event.text)
                        self._send(mapping.agent_message_chunk(event.text))
                        await channel.drain()
                elif isinstance(event, ToolCallStarted):
                    self._announce_streaming(event)
                elif isinstance(event, StepComplete):
                    out.complete = event
        finally:
            await _close_stream(stream)
        if out.complete is None:
            raise ModelError("the model's step ended without completing", kind="protocol")

    async def _run_calls(self, calls: Sequence[ToolCallRequest]) -> bool:
        """Announce one step's calls, run them as one batch through `registry_core.run_step` (parallel
        where the tools allow it), and answer each in the history in the order the model asked, then the
        contexts the results deferred. True if a result concluded the turn.

        Each card completes the moment its call settles (the session's result observer calls `on_result`),
        not when the batch ends; this covers a call the observer never saw."""
        host = self.host
        signal = self.controller.signal
        modes = [self._announce(call) for call in calls]
        for call_id, count in Counter(call.id for call in calls).items():
            if count > 1:
                # Two calls under one id share one card state: neither may take the other's decision.
                self.calls[call_id].shared_id = True
        await host.channel.drain()
        inputs = [
            ToolExecutionInput(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                signal=signal,
                agent=host.agent,
                on_progress=self._on_progress,
            )
            for call in calls
        ]
        # The batch is cancelled through the registry's signal, not a cancel scope: anyio's cancellation
        # is level-triggered, so a scope around `run_step` would cancel every await of a tool's own
        # cleanup again and again unless every tool shielded it (`bash` waits up to 0.5 s for its process
        # group between SIGTERM and SIGKILL; a file tool finishes its atomic rename). The signal is one
        # edge per call: the pipeline cancels the tool's body once, and the tool cleans up and settles
        # with its failure as data. A tool that ignores it is not waited for either: its session gives
        # the turn `CANCEL_GRACE` seconds, then abandons it (`Session.prompt`).
        results = await run_step(host.scope, inputs, modes=modes)
        concluded = False
        for call, result in zip(calls, results, strict=True):
            self._complete(call.id, call.name, call.arguments, result)
            self.history.append(
                ToolResultMessage(
                    call.id, call.name, content_text(result.content), result.is_error,
                    result_images(call.name, result.content),
                )
            )  # fmt: skip
            concluded = concluded or result.concludes_turn
        # The deferred contexts follow every result of the step: OpenAI-compatible APIs reject a user
        # message between the tool messages that answer one assistant message. Logged in the same order.
        for result in results:
            for extra in result.additional_contexts:
                text = content_text(extra.content)
                self.history.append(UserMessage(text))
                self._record(DeferredContext(text))
        await host.channel.drain()
        return concluded

    # --- cards ------------------------------------------------------------------------------------

    def _announce_streaming(self, event: ToolCallStarted) -> None:
        """The model began a call whose arguments are still streaming: show it at once, `pending`, with
        the card its presenter makes of no arguments when the tool accepts none (else the generic card:
        the tool's name). `_announce` refines it when the step completes."""
        if event.id in self.calls or event.id in self.streaming:
            return
        host = self.host
        presentable = Presentable.of(host.scope, event.name, {})
        view = presentable.call_view() if presentable is not None else None
        wire = host.wire
        if not isinstance(view, TerminalCallView):
            # Zed opens a terminal widget only for `_meta.terminal_info` on a `tool_call`, never on an
            # update: should this call turn out to be a terminal one, it shows its output as console
            # text instead of in a widget that would never open.
            wire = dataclasses.replace(wire, terminal_meta=False)
        self.streaming[event.id] = CallState(event.id, event.name, None, view, "pending", wire)
        self._send(mapping.tool_call_started(wire, event.id, event.name, None, view, "pending"))

    def _announce(self, call: ToolCallRequest) -> ExecutionMode:
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
            state.live = LiveOutput(
                functools.partial(self._send_live, call.id),
                deltas=wire.terminal_meta,
                backlog=host.channel.backlog,
            )
        self.calls[call.id] = state
        if early is None:
            self._emit(
                state, mapping.tool_call_started(wire, call.id, call.name, call.arguments, view, status)
            )
        else:
            self._emit(
                state, mapping.tool_call_refined(wire, call.id, call.name, call.arguments, view, status)
            )
        return presentable.execution_mode() if presentable is not None else "exclusive"

    def _send_live(self, call_id: str, delta: str, tail: str) -> None:
        state = self.calls.get(call_id)
        if state is not None:
            self._emit(state, mapping.terminal_output(state.wire, call_id, delta, tail, call_view=state.view))

    def _on_progress(self, execution: ToolExecution, progress: ToolProgress) -> None:
        if isinstance(progress, NestedCallProgress):
            self._announce_nested(execution, progress)
            return
        state = self.calls.get(execution.call_id)
        if state is None or state.done:
            return
        if isinstance(progress, TerminalOutputProgress):
            if state.live is not None:
                state.live.feed(progress.data)
        elif isinstance(progress, StatusProgress) and not isinstance(state.view, TerminalCallView):
            self._send(mapping.tool_call_progress(state.wire, execution.call_id, state.view, progress))

    # --- nested calls (Code Mode sub-calls) --------------------------------------------------------

    def _announce_nested(self, execution: ToolExecution, progress: NestedCallProgress) -> None:
        """A program is about to dispatch a call: show the call's own card, under the program's, `pending`
        when the policy will ask about it, and list it on the program's card."""
        program = self._program_of(execution)
        if program is None or progress.call_id in self.calls:
            return
        host = self.host
        arguments = thaw(progress.arguments)
        presentable = Presentable.of(host.scope, progress.name, arguments)
        view = presentable.call_view() if presentable is not None else None
        permissions = host.permissions
        decision = permissions.decide(progress.name, arguments)
        status: ToolStatus = "pending" if decision.kind == "ask" else "in_progress"
        call_id = progress.call_id
        state = CallState(
            call_id, progress.name, arguments, view, status, host.wire, presentable, parent_id=program.call_id
        )
        # Kept for the permission gate, which asks the turn when the call is dispatched (`decide`).
        state.decision, state.decided_at = decision, permissions.version
        if isinstance(view, TerminalCallView):
            state.live = LiveOutput(
                functools.partial(self._send_live, call_id),
                deltas=state.wire.terminal_meta,
                backlog=host.channel.backlog,
            )
        self.calls[call_id] = state
        program.nested.append(call_id)
        self._emit(state, mapping.tool_call_started(state.wire, call_id, state.name, arguments, view, status))
        self._nested_moved(state)

    def on_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> bool:
        """A nested call of one of this turn's programs settled and was logged by the registry: log it with
        its card's note, complete its card from that durable copy (so a replay draws the same card), and
        list its outcome on its program's card. False when the call is none of this turn's."""
        state = self.calls.get(event.call_id)
        if (
            state is None
            or state.done
            or state.parent_id != event.parent_call_id
            or self._program_of(execution) is None
        ):
            return False
        self._finish(state, event.to_result(), dispatch=event)
        return True

    def _nested_moved(self, state: CallState) -> None:
        """A nested call's card moved: redraw its program's list of calls soon (once for a burst)."""
        program = self.calls.get(state.parent_id) if state.parent_id is not None else None
        if program is None or program.done or program.redraw is not None:
            return
        program.redraw = asyncio.get_running_loop().call_later(NESTED_REDRAW_S, self._redraw_program, program)

    def _redraw_program(self, program: CallState) -> None:
        program.redraw = None
        if program.done:
            return
        self._emit(
            program,
            mapping.program_calls_update(
                program.wire,
                program.call_id,
                program.name,
                program.arguments,
                program.view,
                self._nested_lines(program),
                self._nested_locations(program),
            ),
        )

    def _nested_lines(self, program: CallState) -> list[mapping.NestedLine]:
        lines = []
        for call_id in program.nested:
            state = self.calls[call_id]
            status: ToolStatus = state.status
            if state.result is not None:
                status = "failed" if state.result.is_error else "completed"
            lines.append(mapping.NestedLine(state.shown_title or state.name, status))
        return lines

    def _nested_locations(self, program: CallState) -> list[mapping.Location]:
        return mapping.merged_locations(*(self.calls[call_id].shown_locations for call_id in program.nested))

    def decide(self, execution: ToolExecution, permissions: SessionPermissions) -> Decision:
        """The policy's decision for a call: for one of this turn's cards (a nested call's included), the
        one made when it was announced (or last decided) while `permissions.version` says nothing it
        depends on changed since; otherwise `permissions.decide`, kept for the next question about the
        same call."""
        state = self._state_of(execution)
        if state is None or state.done or state.shared_id or state.name != execution.name:
            return permissions.decide(execution.name, execution.arguments)
        if state.decision is None or state.decided_at != permissions.version:
            state.decision = permissions.decide(execution.name, execution.arguments)
            state.decided_at = permissions.version
        return state.decision

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        """The policy decided (or the user answered) for a call, top-level or nested: keep its note, move
        its card."""
        state = self._state_of(execution)
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
            self._emit(state, mapping.tool_call_status(state.wire, call_id, target))
            self._nested_moved(state)

    async def permission_tool_call(self, execution: ToolExecution, reason: str | None) -> ToolCallUpdate:
        """The `toolCall` of a permission question: this call's card (a nested call's names the program
        it comes from), or (another turn's call) a card of its own arguments. The preview step comes
        first: a tool with a `preview_call` computes its card against the world as it is now (a file
        change's real hunks), and the pending card is redrawn with it (`tool_call_previewed`), so the card
        and the question show what will happen."""
        call_id = execution.call_id
        state = self._state_of(execution)
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
                self._emit(
                    state,
                    mapping.tool_call_previewed(state.wire, call_id, state.name, state.arguments, preview),
                )
        tool_call = mapping.permission_tool_call(
            state.wire, call_id, state.name, state.arguments, state.view, reason
        )
        if state.parent_id is not None:
            program = self.calls.get(state.parent_id)
            shown = program.shown_title if program is not None and program.shown_title else state.parent_id
            tool_call = mapping.nested_permission_call(tool_call, state.parent_id, shown)
        return tool_call

    def on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Result observer: complete the card as soon as one of this turn's calls settles."""
        if not self._mine(execution) or execution.call_id not in self.calls:
            return
        self._complete(execution.call_id, execution.name, execution.arguments, result)

    def _complete(self, call_id: str, name: str, arguments: Any, result: ToolExecutionResult) -> None:
        state = self.calls.get(call_id)
        if state is not None and not state.done:
            self._finish(state, ToolResult.of(result))

    def _finish(
        self, state: CallState, durable: ToolResult, *, dispatch: CodeDispatchEvent | None = None
    ) -> None:
        """Complete a call's card with its durable result, once, with the plan update when the result
        carries one. A terminal card stopped before its tool could describe the end keeps the output it
        showed (`_stopped_terminal_view`); a program's card keeps the list of its nested calls. A nested
        call's `dispatch` is the registry's durable record of it, logged as is."""
        state.done = True
        sent = False
        if state.live is not None:
            state.live.close()
            sent = state.live.sent
        state.result = durable
        # Logged before the card is shown (and the model told): whatever the client saw completed, a
        # reloaded session shows completed too, even when the bridge dies right after.
        self._record_result(state, durable, dispatch)
        presentable = state.presentable
        result_view: ResultViewT | None = _stopped_terminal_view(state, durable)
        if result_view is None and presentable is not None:
            result_view = presentable.result_view(durable)
        if runs_on(result_view) and self._hand_over(state):
            return  # bg: its command runs on; the card stays live in its session's keeper
        updates = mapping.tool_call_completed(
            state.wire,
            state.call_id,
            state.name,
            state.arguments,
            state.view,
            durable,
            result_view,
            terminal_output_sent=sent,
            note=state.note,
        )
        self._send_final(state, updates)
        plan = mapping.plan_from_result(durable)
        if plan is not None:
            self._send(plan)

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
            self._nested_moved(state)
        return True

    def _send_final(self, state: CallState, updates: Sequence[Update]) -> None:
        updates = list(updates)
        """Send a card's final updates: a program's last one lists its nested calls (their final state:
        they all settled before it did); a nested card's completion is listed on its program's card."""
        if state.nested and updates:
            if state.redraw is not None:
                state.redraw.cancel()
                state.redraw = None
            started = mapping.tool_call_started(
                state.wire, state.call_id, state.name, state.arguments, state.view, "in_progress"
            )
            updates[-1] = mapping.with_nested_calls(
                updates[-1],
                self._nested_lines(state),
                self._nested_locations(state),
                state.wire,
                card_content=started.get("content") or (),
            )
        for update in updates:
            self._emit(state, update)
        if state.parent_id is not None:
            self._nested_moved(state)

    def _settle_leftovers(self) -> None:
        """A turn that ends abruptly (hard cancel, model error mid-batch or mid-stream) still ends every
        card it opened, and keeps the history valid: every call the model asked for gets a result (and
        a call it never finished asking for gets none: the model's history does not have it)."""
        reason = self.controller.signal.reason or USER_CANCEL
        stopped = ToolFailureInfo(reason.message, reason.code)
        for state in self.streaming.values():
            # Not logged: the model never finished asking for these, so its history has no such call.
            self._close_unfinished(state, stopped if self.cancelled else _UNFINISHED)
        self.streaming.clear()
        answered = {m.call_id for m in self.history if isinstance(m, ToolResultMessage)}
        # Nested calls first: a program's card lists them as they ended.
        ordered = sorted(self.calls.values(), key=lambda state: state.parent_id is None)
        for state in ordered:
            if not state.done:
                # Logged like any result, so a reloaded session shows what this card showed.
                self._close_unfinished(state, stopped, record=not self.detached)
        for call_id, state in self.calls.items():
            result = state.result
            if state.parent_id is None and call_id not in answered and result is not None:
                # The model is told what the card showed and the log keeps: the result the call settled
                # with (the observer saw it), else why it was stopped.
                self.history.append(
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
            self._record(CallSettled(event, state.note))
            return
        if dispatch is not None:
            self._record(CodeDispatched(dispatch, state.note))
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
        self._record(CodeDispatched(made, state.note))

    def _close_unfinished(self, state: CallState, failure: ToolFailureInfo, *, record: bool = False) -> None:
        """End the card of a call that never settled, failed with `failure` (logged first if `record`)."""
        state.done = True
        if state.live is not None:
            state.live.close()
        result = ToolResult((TextBlock(failure.message),), True, failure)
        state.result = result
        if record:
            self._record_result(state, result)
        updates = mapping.tool_call_completed(
            state.wire,
            state.call_id,
            state.name,
            state.arguments,
            state.view,
            result,
            _stopped_terminal_view(state, result),
            terminal_output_sent=state.live.sent if state.live is not None else False,
            note=state.note,
        )
        self._send_final(state, updates)


_UNFINISHED = ToolFailureInfo("The model's response ended before this call was complete; it did not run.")


async def _close_stream(stream: AsyncIterator[StepEvent]) -> None:
    """Close a model stream that may have been interrupted, so its HTTP response is released now rather
    than by the garbage collector. Shielded, because it runs while the step's scope is cancelled (anyio
    would cancel the close too), and bounded by `STREAM_CLOSE_DEADLINE_S`, because a cancel must not wait
    on a server that does not answer."""
    if getattr(stream, "ag_frame", True) is None:
        return  # an async generator that ran to its end: nothing to release (the usual step)
    aclose = getattr(stream, "aclose", None)  # every async generator has it; `AsyncIterator` need not
    if aclose is not None:
        with anyio.move_on_after(STREAM_CLOSE_DEADLINE_S, shield=True):
            await aclose()


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
