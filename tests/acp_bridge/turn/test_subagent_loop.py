"""`SessionSubagents`, the child's model loop, against the scripted model: what each child request carries
(the subagent system prompt after the parent's, the task's prompt, its own call results, its tools), the
calls of one child step dispatched at once, usage reported outside the context, the step limit, and a
model failure as a TOOL_FAILED error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from acp_bridge.models import ModelBackend, ModelError, StepEvent, StepRequest, ToolResultMessage, Usage
from acp_bridge.models.scripted import ScriptedBackend, parse_script
from acp_bridge.turn.subagent import SUBAGENT_PROMPT, SessionSubagents
from presenters.task import STEP_LIMIT, SubagentRun
from registry_core import (
    NEVER,
    TOOL_FAILED,
    NestedTool,
    TextBlock,
    ToolError,
    ToolExecutionResult,
    ToolSuccess,
)
from tests.support.fake_channel import FakeChannel


class Recording:
    """A backend that records each request and answers with `inner`'s step."""

    def __init__(self, inner: ModelBackend) -> None:
        self.inner = inner
        self.requests: list[StepRequest] = []
        self.name = "recording"

    def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        self.requests.append(request)
        return self.inner.stream_step(request)


@dataclass
class Host:
    backend: Any
    max_steps: int = 5
    id: str = "s1"
    cwd: str = "/ws"
    roots: tuple[str, ...] = ("/ws",)
    channel: FakeChannel = field(default_factory=FakeChannel)
    vision: bool = True
    usage: list[tuple[Usage, bool]] = field(default_factory=list)

    def parent_prompt(self) -> tuple[str, int]:
        return "PARENT SYSTEM PROMPT", 3

    def model_choice(self) -> tuple[str | None, str | None]:
        return None, None

    def report_usage(self, usage: Usage, *, in_context: bool = True) -> None:
        self.usage.append((usage, in_context))


def _script(steps: list[dict[str, Any]]) -> ScriptedBackend:
    return ScriptedBackend(parse_script({"turns": [], "subagents": {"Look": {"steps": steps}}}))


def _run(dispatch: Any, tools: tuple[str, ...] = ("read", "meet")) -> SubagentRun:
    given = tuple(NestedTool(n, f"the {n} tool", {"type": "object"}, {}) for n in tools)
    return SubagentRun("t1", "Look", "Find the thing.", given, NEVER, dispatch)


def _ok(text: str) -> ToolExecutionResult:
    return ToolSuccess(text, (TextBlock(text),))


async def test_the_child_gets_its_own_context_and_its_calls_run_at_once() -> None:
    backend = Recording(_script([
        {"text": "Meeting both.", "tool_calls": [
            {"id": "m1", "name": "meet", "arguments": {"n": 1}},
            {"id": "m2", "name": "meet", "arguments": {"n": 2}},
        ], "usage": {"input_tokens": 10, "output_tokens": 2}},
        {"text": "Both met.", "usage": {"input_tokens": 20, "output_tokens": 3}},
    ]))  # fmt: skip
    both = asyncio.Barrier(2)
    dispatched: list[tuple[str, Any]] = []

    async def dispatch(name: str, arguments: Any) -> ToolExecutionResult:
        dispatched.append((name, arguments))
        await asyncio.wait_for(both.wait(), 10)  # returns only once the other call is running too
        return _ok(f"met {arguments['n']}")

    host = Host(backend)
    answer = await SessionSubagents(host).run(_run(dispatch))
    assert (answer.text, answer.steps, answer.stop) == ("Both met.", 2, "end_turn")
    assert dispatched == [("meet", {"n": 1}), ("meet", {"n": 2})]
    first, second = backend.requests
    assert first.system_prompt == f"PARENT SYSTEM PROMPT\n\n{SUBAGENT_PROMPT}"
    assert first.subagent == "Look" and first.turn_index == 3
    assert [t.name for t in first.tools] == ["read", "meet"]
    assert [m.text for m in first.messages] == ["Find the thing."]  # type: ignore[union-attr]
    results = [m for m in second.messages if isinstance(m, ToolResultMessage)]
    assert [(m.call_id, m.content) for m in results] == [("m1", "met 1"), ("m2", "met 2")]
    # Each response's usage, reported as outside the session's context.
    assert [(u.input_tokens, in_context) for u, in_context in host.usage] == [(10, False), (20, False)]
    assert host.channel.updates == []  # a client without `subagents` is sent nothing by the child


async def test_the_step_limit_stops_the_child_with_what_it_said_last() -> None:
    call = {"id": "r", "name": "read", "arguments": {"file_path": "x"}}
    backend = _script([{"text": f"step {i}", "tool_calls": [{**call, "id": f"r{i}"}]} for i in range(5)])

    async def dispatch(name: str, arguments: Any) -> ToolExecutionResult:
        return _ok("x")

    answer = await SessionSubagents(Host(backend, max_steps=2)).run(_run(dispatch))
    assert (answer.text, answer.steps, answer.stop) == ("step 1", 2, STEP_LIMIT)


class Failing:
    name = "failing"

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        raise ModelError("the endpoint said no", kind="server")
        yield  # pragma: no cover - an async generator


async def test_a_model_failure_fails_the_task_with_the_reason() -> None:
    async def dispatch(name: str, arguments: Any) -> ToolExecutionResult:
        raise AssertionError("no call was asked for")

    with pytest.raises(ToolError) as caught:
        await SessionSubagents(Host(Failing())).run(_run(dispatch))
    assert caught.value.code == TOOL_FAILED
    assert "The subagent's model failed: the endpoint said no" in caught.value.message
