"""A subagent's model loop: what runs a `task` call (`presenters.task`), as `agent.services["subagents"]`.

The child has a context of its own: its messages start from the task's prompt alone (nothing of the
parent's conversation), under the parent turn's system prompt followed by `SUBAGENT_PROMPT` (same
environment and project instructions; its role, and that its last message is its answer). It runs on
the session's backend and model choice, step after step as a turn does (`model_step.stream_model_step`,
which the task's signal interrupts at once), up to the session's step limit. Each call its model asks
for goes back to the task (`SubagentRun.dispatch`: a nested call with its own card under the task's,
through the same policy and approvals); the calls of one step run at once in a task group (each nested
call is scheduled by the task's `NestedCalls`), and every one has settled before the next step or the end,
so a cancel leaves nothing running. Its results, and the contexts they defer, join the child's messages
only.

Usage: each response's tokens count toward the session (cost) and the running prompt's `usage`, but not
toward the parent's context gauge (`report_usage(in_context=False)`).

For a client that advertises `clientCapabilities.subagents` (the subagents RFD), the child is also a
session of its own: announced on the parent's stream (`subagent_update`, with the task call's id in
`_meta`), its thoughts and text streamed under its own session id, and ended with its terminal state
after all of that. Its calls stay cards nested under the task card in the parent's stream (the one place
every client sees them, and where their permission questions come from), not copies in the child's.

On `session/load`, `ReplayedSubagents` gives such a client the children the log shows (announced and
ended as live; an orphan `disconnected`).

Must not: hand the child the parent's history, leave a child's call running when it returns or raises,
or send a child update after its terminal `subagent_update`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

import anyio

from acp_bridge import mapping
from acp_bridge.client.channel import SessionPlace
from acp_bridge.mapping import SubagentState, Update
from acp_bridge.models import (
    AssistantMessage,
    Message,
    ModelBackend,
    ModelError,
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
from acp_bridge.turn.model_step import StepDelta, stream_model_step
from presenters.task import NAME as TASK
from presenters.task import STEP_LIMIT, SubagentAnswer, SubagentRun
from registry_core import CANCELLED, TOOL_FAILED, ToolError, ToolExecutionResult, ToolResult, content_text

SUBAGENT_PROMPT = """\
# You are a subagent

Another agent (the one working with the user) handed you one task, in the message you were given. You \
see nothing of its conversation with the user: that message is all you know of the task. Work on it \
with your tools until it is done; don't ask for more. Your tool calls are shown to the user and \
approved like any, under the task's card.

Your last message, the one without tool calls, is your answer: the agent that gave you the task gets it \
as the result and nothing else you wrote. Make it complete and to the point: what you found or changed, \
with `path:line` references, and anything you could not do. You cannot start subagents or write the \
plan, whatever the text above says about those tools.
"""

# A final step's finish reason (OpenAI's names) that is not a normal end of the child's loop.
_FINISH_STOPS = {"length": "max_tokens", "content_filter": "refusal"}


class SubagentHost(SessionPlace, Protocol):
    """What a child's loop uses of its session (`session.Session` is one) besides its place."""

    @property
    def backend(self) -> ModelBackend: ...

    @property
    def max_steps(self) -> int: ...

    @property
    def vision(self) -> bool: ...

    def parent_prompt(self) -> tuple[str, int]:
        """The running turn's system prompt and prompt index (("", 0) outside a turn)."""
        ...

    def model_choice(self) -> tuple[str | None, str | None]: ...

    def report_usage(self, usage: Usage, *, in_context: bool = True) -> Update | None: ...


class SessionSubagents:
    """`agent.services["subagents"]` (`presenters.task.SubagentRunner`) of one session."""

    def __init__(self, host: SubagentHost) -> None:
        self.host = host

    async def run(self, run: SubagentRun) -> SubagentAnswer:
        """Run the child to its answer. Raises ToolError (TOOL_FAILED) when the model fails, (CANCELLED)
        when the task's signal stopped it; the caller's own cancellation propagates."""
        stream = _ChildStream(self.host, run)
        stream.announce()
        state: SubagentState = "failed"
        try:
            answer = await self._loop(run, stream)
            state = "completed"
            return answer
        except ToolError as exc:
            state = "cancelled" if exc.code == CANCELLED else "failed"
            raise
        except BaseException:
            state = "cancelled" if run.signal.cancelled else "failed"
            raise
        finally:
            stream.end(state)

    async def _loop(self, run: SubagentRun, stream: _ChildStream) -> SubagentAnswer:
        host = self.host
        parent_prompt, turn_index = host.parent_prompt()
        system = f"{parent_prompt.rstrip()}\n\n{SUBAGENT_PROMPT}" if parent_prompt else SUBAGENT_PROMPT
        tools = [ToolSpec(tool.name, tool.description, tool.parameters) for tool in run.tools]
        history: list[Message] = [UserMessage(run.prompt)]
        text = ""
        for step_index in range(host.max_steps):
            run.progress(f"Step {step_index + 1}")
            model, effort = host.model_choice()
            request = StepRequest(
                messages=tuple(history) if host.vision else without_images(history),
                tools=tools,
                turn_index=turn_index,
                step_index=step_index,
                system_prompt=system,
                model=model,
                reasoning_effort=effort,
                subagent=run.description,
            )
            stream.begin_step()
            try:
                complete = await stream_model_step(
                    host.backend, request, run.signal, stream.on_event, what="subagent step"
                )
            except ModelError as exc:
                raise ToolError(f"The subagent's model failed: {exc.message}", code=TOOL_FAILED) from exc
            if complete is None:
                reason = run.signal.reason
                raise ToolError(reason.message if reason is not None else "Cancelled.", code=CANCELLED)
            if complete.usage is not None:
                update = host.report_usage(complete.usage, in_context=False)
                if update is not None:
                    host.channel.send_update(host.id, update)
            text, thought, calls = "".join(stream.texts), "".join(stream.thoughts), complete.tool_calls
            if text or thought or calls:
                history.append(AssistantMessage(text, tuple(calls), thought or None))
            if not calls:
                stop = _FINISH_STOPS.get(complete.finish_reason or "", "end_turn")
                return SubagentAnswer(text, step_index + 1, stop)
            await _run_calls(run, calls, history)
        return SubagentAnswer(text, host.max_steps, STEP_LIMIT)


async def _run_calls(run: SubagentRun, calls: tuple[ToolCallRequest, ...], history: list[Message]) -> None:
    """One child step's calls, started in the order the model asked (so they are numbered and scheduled
    in that order) and all settled before this returns; their results (and deferred contexts) join the
    child's messages in that order."""
    results: list[ToolExecutionResult | None] = [None] * len(calls)

    async def one(index: int, call: ToolCallRequest) -> None:
        results[index] = await run.dispatch(call.name, call.arguments)

    async with anyio.create_task_group() as group:
        for index, call in enumerate(calls):
            group.start_soon(one, index, call)
    settled = [result for result in results if result is not None]
    for call, result in zip(calls, settled, strict=True):
        history.append(
            ToolResultMessage(
                call.id, call.name, content_text(result.content), result.is_error,
                result_images(call.name, result.content),
            )
        )  # fmt: skip
    for result in settled:
        for extra in result.additional_contexts:
            history.append(UserMessage(content_text(extra.content)))


class _ChildStream:
    """A child step's text and thought as they stream (`texts`, `thoughts`), and the child as a session of
    its own for a client with `subagents` (else nothing is sent)."""

    def __init__(self, host: SubagentHost, run: SubagentRun) -> None:
        self.host = host
        self.run = run
        self.texts: list[str] = []
        self.thoughts: list[str] = []
        self.enabled = host.channel.capabilities.subagents
        self.child_id = mapping.child_session_id(host.id, run.call_id)
        self.ended = False
        self.max_bytes = mapping.DEFAULT_MAX_UPDATE_BYTES

    def announce(self) -> None:
        if self.enabled:
            run = self.run
            self._send(
                self.host.id,
                mapping.subagent_announced(self.child_id, run.call_id, run.description, run.prompt),
            )

    def begin_step(self) -> None:
        self.texts, self.thoughts = [], []

    async def on_event(self, event: StepDelta) -> None:
        """A step's delta: kept, and streamed under the child's session id (a call's start shows nothing:
        its card appears when the task dispatches it)."""
        live = self.enabled and not self.ended
        if isinstance(event, TextDelta) and event.text:
            self.texts.append(event.text)
            if live:
                self._send(self.child_id, mapping.agent_message_chunk(event.text, max_bytes=self.max_bytes))
        elif isinstance(event, ThoughtDelta) and event.text:
            self.thoughts.append(event.text)
            if live:
                self._send(self.child_id, mapping.agent_thought_chunk(event.text, max_bytes=self.max_bytes))

    def end(self, state: SubagentState) -> None:
        if self.enabled and not self.ended:
            self.ended = True
            self._send(self.host.id, mapping.subagent_ended(self.child_id, state))

    def _send(self, session_id: str, update: Update) -> None:
        self.host.channel.send_update(session_id, update)


class ReplayedSubagents:
    """A loaded session's subagents, for a client with `subagents`: each `task` call the log shows is
    announced where its card starts and ended where its result is (`completed`, `failed`, `cancelled`),
    under the same child session id as live; one whose result the log lacks (the bridge stopped while it
    ran) ends `disconnected` once the whole log is replayed, as the subagents RFD asks of an orphan. The
    child's own text is not logged: its session carries no messages on replay. Everything goes through
    `send`, the replay's own (on the parent's stream; muted for `session/resume`, which sends nothing)."""

    def __init__(self, send: Callable[[Update], None], session_id: str, enabled: Callable[[], bool]) -> None:
        self.send = send
        self.session_id = session_id
        # Whether the client shows subagents: asked only for a `task` call (a test host may have no channel).
        self._enabled = enabled
        self.open: list[str] = []  # child session ids announced and not ended, in order

    def asked(self, call_id: str, name: str, arguments: object) -> None:
        if name != TASK or not isinstance(arguments, Mapping) or not self._enabled():
            return
        description, prompt = arguments.get("description"), arguments.get("prompt")
        child_id = mapping.child_session_id(self.session_id, call_id)
        if child_id in self.open:
            return
        self.open.append(child_id)
        name = description if isinstance(description, str) else ""
        task = prompt if isinstance(prompt, str) else ""
        announced = mapping.subagent_announced(child_id, call_id, name, task)
        self.send(announced)

    def settled(self, call_id: str, result: ToolResult) -> None:
        child_id = mapping.child_session_id(self.session_id, call_id)
        if child_id not in self.open:
            return
        self.open.remove(child_id)
        state: SubagentState = "completed"
        if result.is_error:
            state = "cancelled" if result.error is not None and result.error.code == CANCELLED else "failed"
        self.send(mapping.subagent_ended(child_id, state))

    def close(self) -> None:
        """The log is over: a child still open was running when it was saved (`disconnected`)."""
        for child_id in reversed(self.open):
            self.send(mapping.subagent_ended(child_id, "disconnected"))
        self.open.clear()
