"""The agent loop of one prompt: model step → tool batch → results → next step, until a step asks for no
tool call (`end_turn`), the step limit (`max_turn_requests`) or a cancel (`cancelled`).

Per step: thought and text deltas become `agent_thought_chunk` / `agent_message_chunk` as they arrive. A
call the model begins while its arguments still stream (`ToolCallStarted`) is shown at once as a `pending`
card (its presenter's card of no arguments when the tool takes none, else the generic card); when the step
completes, that card is refined by a `tool_call_update` into the full one, never announced twice. Each
requested call is announced as a card in the order the model asked (`pending` when the policy will ask,
else `in_progress`); its arguments are parsed once for the card, which also gives its execution mode, and
the policy's decision is kept for the permission gate (`decide`), which reuses it while nothing it depends
on changed. Then the whole batch runs through `registry_core.run_step` (parallel where the tools allow it).
Live terminal output streams through `LiveOutput`. Each call's card completes the moment that call settles
(the session manager's result observer calls `on_result`; only this turn's own top-level calls count, by
their cancel signal, so an abandoned turn's late result never completes a card of the next turn that
reuses its id), with the plan update when the result carries one; a terminal card stopped before its tool
could describe the end (cancelled) keeps the output it showed and says why it stopped. Results go back to
the model as `ToolResultMessage`s in call order, then the contexts they deferred as user messages (an
OpenAI-compatible API rejects a user message between one step's tool messages). A step's token usage
becomes a `usage_update` when the context window is configured. Every card closed without a result of its
own (the turn ended first) is logged with the result it showed, so a reloaded session shows and tells the
model the same. A result is logged before its card is sent, so no card the client saw completed replays as
unfinished.

A session with MCP servers (`acp_bridge.mcp`) first waits for them to start (bounded; failures are said
once as an agent message) and may turn a `/server:prompt` command into the prompt's text; their
instructions join the system prompt, and the tool list is rebuilt for the next step whenever the
registry's `tools_version` moved (a server's `list_changed`). A non-terminal tool's progress
(`StatusProgress`) redraws its card live.

Cancellation is one `CancelController` per turn: it cancels the model stream (its task), every running tool
(the pipeline cancels the body, and `bash` kills its process group) and every pending permission question.

The preview step: when the gate asks about a call, its card is first redrawn from the tool's
`preview_call` if it has one (a file change's hunks against the file as it is at that moment), and the
question carries that card; replay never previews (the pure `present_call` card, then the result).

Must not: know the transport (everything goes through the session's `ClientChannel`), build wire shapes
(only `acp_bridge.mapping` does), or let a tool's failure end the turn (failures are data).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from registry_core import (
    CANCELLED,
    TIMEOUT,
    CancelController,
    CancelReason,
    StatusProgress,
    TerminalCallView,
    TerminalOutputProgress,
    TerminalResultView,
    TextBlock,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolFailureInfo,
    ToolProgress,
    ToolResult,
    ToolScope,
    content_text,
    parse_args_for_display,
    run_step,
    safe_present_call,
    safe_present_result,
    snapshot,
)
from registry_core.presentation import CallViewT, ResultViewT
from registry_core.registry import ExecutionMode

from . import mapping
from .live_output import LiveOutput
from .mapping import ToolStatus, WireContext
from .models import (
    AssistantMessage,
    Message,
    ModelError,
    StepComplete,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from .permissions import Decision, SessionPermissions

if TYPE_CHECKING:
    from .sessions import Session

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

USER_CANCEL = CancelReason(CANCELLED, "Cancelled by the user.")

# How long a tool's preview of a pending card (`preview_call`) may take before the user is asked with the
# card of its arguments instead (a slow editor read must not hold the question back for long).
PREVIEW_TIMEOUT_S = 10.0

# A final step's finish reason (OpenAI's names) that is not a normal end of the turn.
_FINISH_STOPS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


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


@dataclass(slots=True)
class _StepOutput:
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    complete: StepComplete | None = None


def system_prompt(cwd: str, roots: Sequence[str]) -> str:
    extra = [r for r in roots if r != cwd]
    where = f"The workspace is {cwd}" + (f" (also: {', '.join(extra)})" if extra else "") + "."
    return (
        "You are a coding agent working inside a code editor. "
        f"{where} Use the tools to read, search, edit and run things; paths may be relative to the "
        "workspace. Prefer small, verifiable steps, and say briefly what you are doing. Some calls need "
        "the user's approval; when a call is rejected, adapt instead of retrying it unchanged."
    )


@dataclass(frozen=True, slots=True)
class Presentable:
    """A call's definition and its arguments validated for display (parsed once, used for both cards)."""

    definition: ToolDefinition
    typed: Any

    @staticmethod
    def of(scope: ToolScope, name: str, arguments: Any) -> Presentable | None:
        """None when the tool is unknown or the arguments do not parse (the cards are then generic)."""
        definition = scope.get(name)
        if definition is None and name.startswith("mcp__"):
            # An MCP tool whose server is not running (a replayed session): its cards need no server.
            from .mcp.present import presentation_definition

            definition = presentation_definition(name)
        if definition is None or isinstance(arguments, str):
            return None
        try:
            frozen = snapshot(arguments)
        except ValueError:
            return None
        ok, typed = parse_args_for_display(definition, frozen)
        return Presentable(definition, typed) if ok else None

    def call_view(self) -> CallViewT | None:
        present, typed = self.definition.present_call, self.typed
        if present is None:
            return None
        return safe_present_call(lambda: present(typed), tool=self.definition.name)

    async def preview_view(self, execution: ToolExecution) -> CallViewT | None:
        """The tool's live pending card for `execution` (`preview_call`: e.g. the hunks a write would apply
        to the file as it is now; it may also pin what the question is about), or None: no preview, or it
        failed or took longer than `PREVIEW_TIMEOUT_S` (logged; the pure `call_view` stands)."""
        preview, typed, name = self.definition.preview_call, self.typed, self.definition.name
        if preview is None:
            return None
        try:
            view = await asyncio.wait_for(preview(typed, execution), PREVIEW_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - a preview only improves a card; it never fails a call
            log.warning("preview_call of tool %r failed; the card keeps its arguments view: %r", name, exc)
            return None
        return safe_present_call(lambda: view, tool=name)

    def result_view(self, result: ToolResult) -> ResultViewT | None:
        present, typed = self.definition.present_result, self.typed
        if present is None:
            return None
        return safe_present_result(lambda: present(typed, result), tool=self.definition.name)

    def execution_mode(self) -> ExecutionMode:
        """`ToolScope.execution_mode`'s rule on the arguments parsed here, so `run_step` need not parse
        them again: `parallel` only when the tool's classifier returns exactly True."""
        classify = self.definition.is_concurrency_safe
        if classify is None:
            return "exclusive"
        try:
            return "parallel" if classify(self.typed) is True else "exclusive"
        except Exception:  # noqa: BLE001 - contained by contract, as in the registry
            return "exclusive"


class Turn:
    """One prompt's run. Created and awaited by `Session.prompt`; `cancel()` may come from anywhere."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.controller = CancelController()
        self.calls: dict[str, CallState] = {}
        # Calls announced while the model was still streaming their arguments (`ToolCallStarted`), not
        # yet requested by a completed step; `_announce` moves each one to `calls`.
        self.streaming: dict[str, CallState] = {}
        # The conversation this turn appends to: the session's, until the turn is detached.
        self.history: list[Message] = session.history
        self.detached = False

    @property
    def cancelled(self) -> bool:
        return self.controller.signal.cancelled

    def cancel(self, reason: CancelReason = USER_CANCEL) -> None:
        self.controller.cancel(reason)

    def detach(self) -> None:
        """Give up on a turn that did not stop after a cancel (a tool ignored it): close its open cards,
        answer its calls in the session's history, and mute it, so the session can move on while the stuck
        task ends in the background without touching the session again."""
        self._settle_leftovers()
        self.detached = True
        self.history = list(self.history)

    def _send(self, update: dict[str, Any]) -> None:
        if not self.detached:
            self.session.channel.send_update(self.session.id, update)

    def _record(self, event: Mapping[str, Any]) -> None:
        """Log a durable event; a detached turn no longer writes to its session's log."""
        if not self.detached:
            self.session.record(event)

    def _mine(self, execution: ToolExecution) -> bool:
        """Whether `execution` is one of this turn's own calls (not another turn's that reuses an id: an
        abandoned turn's call may settle while the next turn runs; nor a nested call)."""
        return execution.signal is self.controller.signal and execution.parent is None

    # --- the loop ---------------------------------------------------------------------------------

    async def run(self, user_text: str) -> StopReason:
        session = self.session
        servers = session.mcp
        if servers is not None:
            # The session's MCP servers: wait for their start, report failures, expand `/server:prompt`.
            prepared = await servers.prepare_turn(
                user_text, self.controller.signal, lambda text: self._send(mapping.agent_message_chunk(text))
            )
            if prepared is None:
                return "cancelled" if self.cancelled else "end_turn"
            user_text = prepared
        self.history.append(UserMessage(user_text))
        self._record({"type": "user", "text": user_text})
        registry = session.scope.registry
        tools, tools_version = self._tools(), registry.tools_version
        try:
            for step_index in range(session.max_steps):
                if self.cancelled:
                    return "cancelled"
                if registry.tools_version != tools_version:
                    # A tool came or went (an MCP server's list changed): the next step sees the new list.
                    tools, tools_version = self._tools(), registry.tools_version
                prompt = system_prompt(session.cwd, session.roots)
                if servers is not None:
                    prompt += servers.instructions()
                request = StepRequest(
                    messages=tuple(self.history),
                    tools=tools,
                    turn_index=session.turn_index,
                    step_index=step_index,
                    system_prompt=prompt,
                )
                out = await self._model_step(request)
                text, thought = "".join(out.text), "".join(out.thought)
                complete = out.complete
                if complete is not None and complete.usage is not None:
                    # The step's prompt (the whole conversation so far) plus what it generated is what
                    # the context holds now.
                    usage = session.usage_update(complete.usage.input_tokens + complete.usage.output_tokens)
                    if usage is not None:
                        self._send(usage)
                calls = complete.tool_calls if complete is not None else ()
                if text or thought or calls:
                    self.history.append(AssistantMessage(text, tuple(calls), thought or None))
                    self._record(
                        {
                            "type": "assistant",
                            "text": text,
                            "thought": thought,
                            "toolCalls": [
                                {"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls
                            ],
                        }
                    )
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
        return [ToolSpec(s["name"], s["description"], s["parameters"]) for s in self.session.scope.schemas()]

    async def _model_step(self, request: StepRequest) -> _StepOutput:
        """Stream one step. `complete` stays None when the turn was cancelled mid-stream."""
        out = _StepOutput()
        session = self.session
        channel = session.channel

        async def consume() -> None:
            stream = session.backend.stream_step(request)
            async with contextlib.aclosing(stream):  # type: ignore[type-var]
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
            if out.complete is None:
                raise ModelError("the model's step ended without completing", kind="protocol")

        signal = self.controller.signal
        if signal.cancelled:
            return out
        task = asyncio.ensure_future(consume())

        def stop(_reason: CancelReason) -> None:
            task.cancel()

        dispose = signal.on_cancel(stop)
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if signal.cancelled and (current is None or current.cancelling() == 0):
                out.complete = None
                return out
            raise
        finally:
            dispose()
        return out

    async def _run_calls(self, calls: Sequence[ToolCallRequest]) -> bool:
        """Announce, run and complete one step's calls; feed the results back. True if a result concluded
        the turn."""
        session = self.session
        signal = self.controller.signal
        modes = [self._announce(call) for call in calls]
        for call_id, count in Counter(call.id for call in calls).items():
            if count > 1:
                # Two calls under one id share one card state: neither may take the other's decision.
                self.calls[call_id].shared_id = True
        await session.channel.drain()
        inputs = [
            ToolExecutionInput(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                signal=signal,
                agent=session.agent,
                on_progress=self._on_progress,
            )
            for call in calls
        ]
        results = await run_step(session.scope, inputs, modes=modes)
        concluded = False
        for call, result in zip(calls, results, strict=True):
            # The observer normally completed the card already; this covers a call it never saw.
            self._complete(call.id, call.name, call.arguments, result)
            self.history.append(
                ToolResultMessage(call.id, call.name, content_text(result.content), result.is_error)
            )
            concluded = concluded or result.concludes_turn
        # The deferred contexts follow every result of the step: OpenAI-compatible APIs reject a user
        # message between the tool messages that answer one assistant message. Logged in the same order.
        for result in results:
            for extra in result.additional_contexts:
                text = content_text(extra.content)
                self.history.append(UserMessage(text))
                self._record({"type": "context", "text": text})
        await session.channel.drain()
        return concluded

    # --- cards ------------------------------------------------------------------------------------

    def _announce_streaming(self, event: ToolCallStarted) -> None:
        """The model began a call whose arguments are still streaming: show it at once, `pending`, with
        the card its presenter makes of no arguments when the tool accepts none (else the generic card:
        the tool's name). `_announce` refines it when the step completes."""
        if event.id in self.calls or event.id in self.streaming:
            return
        session = self.session
        presentable = Presentable.of(session.scope, event.name, {})
        view = presentable.call_view() if presentable is not None else None
        wire = session.wire
        if not isinstance(view, TerminalCallView):
            # Zed opens a terminal widget only for `_meta.terminal_info` on a `tool_call`, never on an
            # update: should this call turn out to be a terminal one, it shows its output as console
            # text instead of in a widget that would never open.
            wire = dataclasses.replace(wire, terminal_meta=False)
        self.streaming[event.id] = CallState(event.id, event.name, None, view, "pending", wire)
        self._send(mapping.tool_call_started(wire, event.id, event.name, None, view, "pending"))

    def _announce(self, call: ToolCallRequest) -> ExecutionMode:
        """Show a requested call's card; returns its execution mode, from the arguments parsed for it."""
        session = self.session
        presentable = Presentable.of(session.scope, call.name, call.arguments)
        view = presentable.call_view() if presentable is not None else None
        status: ToolStatus = "in_progress"
        decision: Decision | None = None
        permissions = session.permissions
        if not isinstance(call.arguments, str):
            decision = permissions.decide(call.name, call.arguments)
            if decision.kind == "ask":
                status = "pending"
        early = self.streaming.pop(call.id, None)
        wire = early.wire if early is not None else session.wire
        state = CallState(call.id, call.name, call.arguments, view, status, wire, presentable)
        state.decision, state.decided_at = decision, permissions.version
        if isinstance(view, TerminalCallView):
            state.live = LiveOutput(
                functools.partial(self._send_live, call.id),
                deltas=wire.terminal_meta,
                backlog=session.channel.backlog,
            )
        self.calls[call.id] = state
        if early is None:
            self._send(mapping.tool_call_started(wire, call.id, call.name, call.arguments, view, status))
        else:
            self._send(mapping.tool_call_refined(wire, call.id, call.name, call.arguments, view, status))
        return presentable.execution_mode() if presentable is not None else "exclusive"

    def _send_live(self, call_id: str, delta: str, tail: str) -> None:
        state = self.calls.get(call_id)
        if state is not None:
            self._send(mapping.terminal_output(state.wire, call_id, delta, tail, call_view=state.view))

    def _on_progress(self, execution: ToolExecution, progress: ToolProgress) -> None:
        state = self.calls.get(execution.call_id)
        if state is None or state.done:
            return
        if isinstance(progress, TerminalOutputProgress):
            if state.live is not None:
                state.live.feed(progress.data)
        elif isinstance(progress, StatusProgress) and not isinstance(state.view, TerminalCallView):
            self._send(mapping.tool_call_progress(state.wire, execution.call_id, state.view, progress))

    def decide(self, execution: ToolExecution, permissions: SessionPermissions) -> Decision:
        """The policy's decision for a call: for one of this turn's cards, the one made when it was
        announced (or last decided) while `permissions.version` says nothing it depends on changed since;
        otherwise `permissions.decide`, kept for the next question about the same call."""
        state = self.calls.get(execution.call_id) if self._mine(execution) else None
        if state is None or state.done or state.shared_id or state.name != execution.name:
            return permissions.decide(execution.name, execution.arguments)
        if state.decision is None or state.decided_at != permissions.version:
            state.decision = permissions.decide(execution.name, execution.arguments)
            state.decided_at = permissions.version
        return state.decision

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        """The policy decided (or the user answered) for a call: keep its note, move its card."""
        if not self._mine(execution):
            return
        call_id = execution.call_id
        state = self.calls.get(call_id)
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
            self._send(mapping.tool_call_status(state.wire, call_id, target))

    async def permission_tool_call(self, execution: ToolExecution, reason: str | None) -> dict[str, Any]:
        """The `toolCall` of a permission question: this call's card, or (another turn's or a nested call)
        a card of its own arguments. The preview step comes first: a tool with a `preview_call` computes
        its card against the world as it is now (a file change's real hunks), and the pending card is
        redrawn with it (`tool_call_previewed`), so the card and the question show what will happen."""
        call_id = execution.call_id
        state = self.calls.get(call_id) if self._mine(execution) else None
        if state is None:
            presentable = Presentable.of(self.session.scope, execution.name, execution.arguments)
            preview = await presentable.preview_view(execution) if presentable is not None else None
            return mapping.permission_tool_call(
                self.session.wire, call_id, execution.name, execution.arguments, preview, reason
            )
        if state.presentable is not None and not state.shared_id:
            preview = await state.presentable.preview_view(execution)
            if preview is not None and preview != state.view and not state.done:
                state.view = preview
                self._send(
                    mapping.tool_call_previewed(state.wire, call_id, state.name, state.arguments, preview)
                )
        return mapping.permission_tool_call(
            state.wire, call_id, state.name, state.arguments, state.view, reason
        )

    def on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """Result observer: complete the card as soon as one of this turn's calls settles."""
        if not self._mine(execution) or execution.call_id not in self.calls:
            return
        self._complete(execution.call_id, execution.name, execution.arguments, result)

    def _complete(self, call_id: str, name: str, arguments: Any, result: ToolExecutionResult) -> None:
        state = self.calls.get(call_id)
        if state is None or state.done:
            return
        state.done = True
        session = self.session
        sent = False
        if state.live is not None:
            state.live.close()
            sent = state.live.sent
        durable = ToolResult.of(result)
        state.result = durable
        # Logged before the card is shown (and the model told): whatever the client saw completed, a
        # reloaded session shows completed too, even when the bridge dies right after.
        if not self.detached:
            session.record_result(call_id, name, durable, state.note)
        presentable = state.presentable
        result_view: ResultViewT | None = _stopped_terminal_view(state, durable)
        if result_view is None and presentable is not None:
            result_view = presentable.result_view(durable)
        updates = mapping.tool_call_completed(
            state.wire,
            call_id,
            name,
            state.arguments,
            state.view,
            durable,
            result_view,
            terminal_output_sent=sent,
            note=state.note,
        )
        for update in updates:
            self._send(update)
        plan = mapping.plan_from_result(durable)
        if plan is not None:
            self._send(plan)

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
        for call_id, state in self.calls.items():
            if not state.done:
                # Logged like any result, so a reloaded session shows what this card showed.
                self._close_unfinished(state, stopped, record=not self.detached)
            result = state.result
            if call_id not in answered and result is not None:
                # The model is told what the card showed and the log keeps: the result the call settled
                # with (the observer saw it), else why it was stopped.
                self.history.append(
                    ToolResultMessage(call_id, state.name, content_text(result.content), result.is_error)
                )

    def _close_unfinished(self, state: CallState, failure: ToolFailureInfo, *, record: bool = False) -> None:
        """End the card of a call that never settled, failed with `failure` (logged first if `record`)."""
        state.done = True
        if state.live is not None:
            state.live.close()
        result = ToolResult((TextBlock(failure.message),), True, failure)
        state.result = result
        if record:
            self.session.record_result(state.call_id, state.name, result, state.note)
        for update in mapping.tool_call_completed(
            state.wire,
            state.call_id,
            state.name,
            state.arguments,
            state.view,
            result,
            _stopped_terminal_view(state, result),
            terminal_output_sent=state.live.sent if state.live is not None else False,
            note=state.note,
        ):
            self._send(update)


_UNFINISHED = ToolFailureInfo("The model's response ended before this call was complete; it did not run.")


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
