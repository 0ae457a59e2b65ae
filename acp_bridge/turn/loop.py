"""The agent loop of one prompt: model step → cards → tool batch → results → next step, until a step asks
for no tool call (`end_turn`), the step limit (`max_turn_requests`) or a cancel (`cancelled`).

Contract: each call the turn announces has one card, completed once (with its result, or closed as
stopped when the turn ends first), and that result is logged before the card completes; every call the
model asked for gets an answer in the history. The turn reaches its session only through `TurnHost`.
The cards are its `CardBook`'s (`cards`, Code Mode's nested ones `nested`); a step streams through
`model_step.stream_model_step`, which a cancel interrupts at once.

A session with MCP servers (`acp_bridge.mcp`) first waits for them to start (bounded; failures are said
once as an agent message) and may turn a `/server:prompt` command into the prompt's text; their
instructions join the system prompt, and the tool list is rebuilt for the next step whenever the
registry's `tools_version` moved (a server's `list_changed`).

Must not: know the transport (updates go through the host's `ClientChannel`), build wire shapes (only
`acp_bridge.mapping` does), let a tool's failure end the turn (failures are data), or touch its session
once detached.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from acp_bridge import mapping
from acp_bridge.history.session_log import AssistantStep, DeferredContext, LogEvent, UserPrompt
from acp_bridge.mapping import Update
from acp_bridge.models import (
    AssistantMessage,
    ImageData,
    Message,
    ModelBackend,
    StepComplete,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from acp_bridge.models.images import result_images, without_images
from acp_bridge.turn import waits
from acp_bridge.turn.cards import USER_CANCEL, CardBook, CardHost
from acp_bridge.turn.model_step import StepDelta, stream_model_step
from acp_bridge.turn.nested import NestedCards
from acp_bridge.turn.steering import SteeringInbox, deliver, takes_step
from registry_core import (
    Agent,
    CancelController,
    CancelReason,
    CancelSignal,
    JsonValue,
    ToolExecutionInput,
    content_text,
    run_step,
)

if TYPE_CHECKING:
    from acp_bridge.mcp.servers import SessionServers

log = logging.getLogger(__name__)

StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]

# A final step's finish reason (OpenAI's names) that is not a normal end of the turn.
_FINISH_STOPS: dict[str, StopReason] = {"length": "max_tokens", "content_filter": "refusal"}


class TurnHost(CardHost, Protocol):
    """What a turn needs of its session (`session.session.Session` is one): where its updates and log
    events go, the model, the tools and who runs them, and (`CardHost`) the channel, the scope, the wire
    context, the permission state its cards reflect and the keeper of cards whose commands run on."""

    @property
    def id(self) -> str: ...

    @property
    def backend(self) -> ModelBackend: ...

    @property
    def agent(self) -> Agent: ...

    @property
    def mcp(self) -> SessionServers | None:
        """The session's MCP servers, or None when it has none."""
        ...

    @property
    def steering(self) -> SteeringInbox | None:
        """The prompts the user sends while the turn runs (`turn.steering`), if the host takes any."""
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
        wait_notice: float = waits.DEFAULT_WAIT_NOTICE_S,
    ) -> None:
        self.host = host
        # waits: after how many seconds of the model's silence the user is told (0: never).
        self.wait_notice = wait_notice
        # Whether the model sees images; without vision each one is named in text instead.
        self.vision = vision
        self.history = history
        self.system_prompt = system_prompt
        self.turn_index = turn_index
        self.max_steps = max_steps
        self.controller = CancelController()
        self.detached = False
        self.cards = cards = CardBook(
            host, self.controller.signal, send=self._send, record=self._record, nested=NestedCards
        )
        # What the session's permission gate and observers ask of the turn's cards, bound once: no hop
        # through the turn on a call's path.
        self.decide = cards.decide
        self.on_decision = cards.on_decision
        self.permission_tool_call = cards.permission_tool_call
        self.on_result = cards.on_result
        self.on_code_dispatch = cards.nested.on_code_dispatch

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
        self.cards.settle_leftovers(self.history, record=not self.detached)
        self.detached = True
        self.history = list(self.history)

    def _send(self, update: Update) -> None:
        if not self.detached:
            self.host.channel.send_update(self.host.id, update)

    def _record(self, event: LogEvent) -> None:
        if not self.detached:
            self.host.record(event)

    # --- the loop ---------------------------------------------------------------------------------

    async def run(
        self, user_text: str, images: tuple[ImageData, ...] = (), blocks: tuple[JsonValue, ...] | None = None
    ) -> StopReason:
        """Run the prompt to its stop reason. Each step's text, thought and calls join the history and the
        log as one assistant message, with its calls in the order the model asked; a step's token usage
        becomes a `usage_update` (when the host reports one), and the host may compact the history before
        a step. However the turn ends, its open cards are closed (`CardBook.settle_leftovers`). `blocks`: the
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
                # steer: what the user sent while the turn ran joins it here (turn/steering.py).
                deliver(host.steering, self.history, self._send, self._record, host.wire.max_update_bytes)
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
                    stop = _FINISH_STOPS.get(complete.finish_reason or "", "end_turn")
                    if stop == "end_turn" and step_index + 1 < self.max_steps and takes_step(host.steering):
                        continue  # steer: sent during the final answer, it gets one more step (steering.py)
                    return stop
                concluded = await self._run_calls(calls)
                if self.cancelled:
                    return "cancelled"
                if concluded:
                    return "end_turn"
            return "max_turn_requests"
        finally:
            self.cards.settle_leftovers(self.history, record=not self.detached)

    def _tools(self) -> list[ToolSpec]:
        return [ToolSpec(s["name"], s["description"], s["parameters"]) for s in self.host.model_schemas()]

    async def run_compaction(self, focus: str | None) -> StopReason:
        """`/compact [focus]`: compact the session's history now, as the prompt's whole work (no model
        step follows). Raises `ModelError` when the summary failed."""
        try:
            await self.host.compact(self.history, self.controller.signal, focus=focus, forced=True)
        finally:
            self.cards.settle_leftovers(self.history, record=not self.detached)
        return "cancelled" if self.cancelled else "end_turn"

    async def _model_step(self, request: StepRequest) -> _StepOutput:
        """Stream one step under the turn's signal (`stream_model_step`): thought and text deltas go out as
        chunks as they arrive (the channel drained after each), and a call the model begins is shown at
        once (`CardBook.announce_streaming`). `complete` stays None when the turn was cancelled."""
        out = _StepOutput()
        channel = self.host.channel

        async def on_event(event: StepDelta) -> None:
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
            else:
                self.cards.announce_streaming(event)

        # waits: the backend's waits before a retry, and a silent model, are told to the user.
        notices = channel.capabilities.notices
        out.complete = await stream_model_step(
            self.host.backend, request, self.controller.signal, on_event,
            on_wait=lambda waiting: self._send(waits.tell(waiting, notices=notices)),
            silence_after=self.wait_notice,
        )  # fmt: skip
        return out

    async def _run_calls(self, calls: Sequence[ToolCallRequest]) -> bool:
        """Announce one step's calls, run them as one batch through `registry_core.run_step` (parallel
        where the tools allow it), and answer each in the history in the order the model asked, then the
        contexts the results deferred. True if a result concluded the turn.

        Each card completes the moment its call settles (the session's result observer calls `on_result`),
        not when the batch ends; this covers a call the observer never saw."""
        host, cards = self.host, self.cards
        signal = self.controller.signal
        modes = cards.announce_step(calls)
        await host.channel.drain()
        inputs = [
            ToolExecutionInput(
                call_id=call.id,
                name=call.name,
                arguments=call.arguments,
                signal=signal,
                agent=host.agent,
                on_progress=cards.on_progress,
                parsed=cards.parsed(call),
            )
            for call in calls
        ]
        # The batch is cancelled through the registry's signal, not a cancel scope: anyio's cancellation
        # is level-triggered, so a scope around `run_step` would cancel every await of a tool's own
        # cleanup again and again unless every tool shielded it (`bash` waits up to 0.5 s for its process
        # group between SIGTERM and SIGKILL; a file tool finishes its atomic rename). The signal is one
        # edge per call: the pipeline cancels the tool's body once, and the tool cleans up and settles
        # with its failure as data. A tool that ignores it is not waited for either: its session gives
        # the turn `CANCEL_GRACE` seconds, then abandons it (`session.prompt_slot`).
        results = await run_step(host.scope, inputs, modes=modes)
        concluded = False
        for call, result in zip(calls, results, strict=True):
            cards.complete(call.id, result)
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
