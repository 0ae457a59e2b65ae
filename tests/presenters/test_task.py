"""`task`'s contract, in process against a real registry: the child's tools (the default set, a subset, the
refusals), each call the child asks for dispatched as a nested call of the task (its id, its progress
announcement, its durable `tool/code-dispatch` event, a tool it was not given refused without running), the
calls of one child step running at once, the answer and its summary, and a host with no runner."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from presenters.task import (
    NOT_FOR_SUBAGENTS,
    STEP_LIMIT,
    SUBAGENTS_SERVICE,
    SubagentAnswer,
    SubagentRun,
    subagent_tools,
)
from registry_core import (
    INTERNAL,
    INVALID_ARGS,
    UNKNOWN_TOOL,
    Agent,
    NestedCallProgress,
    NestedTool,
    ToolError,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolRunContext,
    ToolSuccess,
    content_text,
    thaw,
)
from tests.support.code_session import CodeSession, make_code_session, tool

Script = Callable[[SubagentRun], Awaitable[SubagentAnswer]]


class Runner:
    """A runner whose child does what `script` says (its calls go through `run.dispatch`)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.runs: list[SubagentRun] = []

    async def run(self, run: SubagentRun) -> SubagentAnswer:
        self.runs.append(run)
        return await self.script(run)


def _session(tmp_path: Path, runner: Runner | None, extra: list[Any] | None = None) -> CodeSession:
    session = make_code_session(tmp_path, extra=extra or [])
    if runner is not None:
        services = dict(session.agent.services)
        services[SUBAGENTS_SERVICE] = runner
        session.agent = Agent(id="s1", cwd=session.agent.cwd, roots=session.agent.roots, services=services)
    return session


async def _task(session: CodeSession, **arguments: Any) -> ToolExecutionResult:
    return await session.scope.execute(
        ToolExecutionInput(
            call_id="t1",
            name="task",
            arguments={"description": "Look around", "prompt": "Read a.txt.", **arguments},
            agent=session.agent,
            on_progress=lambda execution, update: session.progress.append((execution.call_id, update)),
        )
    )


def test_the_default_tools_are_all_but_task_and_todo_write_and_a_subset_keeps_its_order() -> None:
    available = [NestedTool(name, "", {}, {}) for name in ("read", "task", "bash", "todo_write", "grep")]
    assert [t.name for t in subagent_tools(available, None)] == ["read", "bash", "grep"]
    assert [t.name for t in subagent_tools(available, ["grep", "read", "grep"])] == ["grep", "read"]
    with pytest.raises(ToolError) as caught:
        subagent_tools(available, ["read", "rm"])
    assert caught.value.code == INVALID_ARGS
    assert "`rm`" in caught.value.message and "It can be given: bash, grep, read." in caught.value.message
    for forbidden in NOT_FOR_SUBAGENTS:
        with pytest.raises(ToolError, match="cannot start subagents or write the plan"):
            subagent_tools(available, [forbidden])


async def test_each_child_call_is_a_nested_call_of_the_task_and_its_answer_is_the_result(
    tmp_path: Path,
) -> None:
    async def child(run: SubagentRun) -> SubagentAnswer:
        assert [t.name for t in run.tools] == ["read", "secret"]
        first = await run.dispatch("read", {"file_path": "a.txt"})
        refused = await run.dispatch("bash", {"command": "echo no"})
        assert refused.is_error and refused.error is not None and refused.error.code == UNKNOWN_TOOL
        assert "is not a tool this subagent was given" in refused.error.message
        second = await run.dispatch("secret", {})
        assert isinstance(second, ToolSuccess) and second.value == "the secret"
        return SubagentAnswer(f"a.txt says: {content_text(first.content).strip()}", 3)

    runner = Runner(child)
    session = _session(tmp_path, runner)
    (Path(session.agent.cwd) / "a.txt").write_text("alpha\n")
    result = await _task(session, tools=["read", "secret"])
    assert isinstance(result, ToolSuccess), content_text(result.content)
    value = thaw(result.value)
    assert isinstance(value, dict)
    assert (value["steps"], value["calls"], value["failed_calls"], value["stop"]) == (3, 2, 0, "end_turn")
    assert "alpha" in value["answer"]
    text = content_text(result.content)
    assert text.startswith("a.txt says:") and "(The subagent took 3 steps and made 2 tool calls.)" in text
    (run,) = runner.runs
    assert (run.call_id, run.description, run.prompt) == ("t1", "Look around", "Read a.txt.")
    # The refused call ran nothing and has no number: the two dispatched ones are t1:task:1 and :2.
    nested = session.nested()
    assert [(e.call_id, e.name) for e, _ in nested] == [("t1:task:1", "read"), ("t1:task:2", "secret")]
    outer = next(e for e, _ in session.results if e.parent is None)
    assert all(e.parent is outer.token for e, _ in nested)
    assert session.bodies == ["secret"]
    announced = [(cid, u.call_id) for cid, u in session.progress if isinstance(u, NestedCallProgress)]
    assert announced == [("t1", "t1:task:1"), ("t1", "t1:task:2")]
    assert [(d.parent_call_id, d.call_id) for d in session.dispatches] == [
        ("t1", "t1:task:1"),
        ("t1", "t1:task:2"),
    ]


async def test_the_calls_of_one_child_step_run_at_once(tmp_path: Path) -> None:
    both = asyncio.Barrier(2)

    async def meet(_args: Any, _ctx: ToolRunContext) -> Any:
        await asyncio.wait_for(both.wait(), 10)  # only returns when the other call is running too
        return "met"

    async def child(run: SubagentRun) -> SubagentAnswer:
        results = await asyncio.gather(run.dispatch("meet", {}), run.dispatch("meet", {}))
        assert all(not r.is_error for r in results), [content_text(r.content) for r in results]
        return SubagentAnswer("both met", 1)

    session = _session(tmp_path, Runner(child), [tool("meet", meet, is_concurrency_safe=lambda _a: True)])
    result = await _task(session, tools=["meet"])
    assert not result.is_error, content_text(result.content)


async def test_an_answer_cut_by_the_step_limit_says_so(tmp_path: Path) -> None:
    async def child(run: SubagentRun) -> SubagentAnswer:
        return SubagentAnswer("", 50, STEP_LIMIT)

    result = await _task(_session(tmp_path, Runner(child)))
    text = content_text(result.content)
    assert "(The subagent gave no final answer.)" in text
    assert "stopped at the step limit" in text


async def test_a_host_without_a_runner_fails_the_call_clearly(tmp_path: Path) -> None:
    result = await _task(_session(tmp_path, None))
    assert result.is_error and result.error is not None and result.error.code == INTERNAL
    assert "runs no subagents" in result.error.message


async def test_an_empty_prompt_fails_before_any_child_runs(tmp_path: Path) -> None:
    runner = Runner(lambda run: asyncio.sleep(0, SubagentAnswer("never", 1)))
    result = await _task(_session(tmp_path, runner), prompt="  \n")
    assert result.is_error and result.error is not None and result.error.code == INVALID_ARGS
    assert "prompt is empty" in result.error.message and not runner.runs


async def test_unknown_tools_fail_before_any_child_runs(tmp_path: Path) -> None:
    runner = Runner(lambda run: asyncio.sleep(0, SubagentAnswer("never", 1)))
    result = await _task(_session(tmp_path, runner), tools=["read", "nope"])
    assert result.is_error and result.error is not None and result.error.code == INVALID_ARGS
    assert "`nope`" in result.error.message and not runner.runs
