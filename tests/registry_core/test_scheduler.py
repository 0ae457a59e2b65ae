from __future__ import annotations

import asyncio
from typing import Any

import pytest

from registry_core import ToolExecutionInput, ToolRegistry, ToolRunContext, ToolSuccess, plan_groups, run_step
from tests.support.raw_tools import raw_tool


def test_plan_groups_forms_parallel_runs_and_exclusive_barriers() -> None:
    modes: list[Any] = ["parallel", "parallel", "exclusive", "parallel", "exclusive", "exclusive"]
    assert plan_groups(modes) == [
        ("parallel", range(0, 2)),
        ("exclusive", range(2, 3)),
        ("parallel", range(3, 4)),
        ("exclusive", range(4, 5)),
        ("exclusive", range(5, 6)),
    ]


class Timeline:
    def __init__(self) -> None:
        self.running: set[str] = set()
        self.max_parallel = 0
        self.overlaps: dict[str, set[str]] = {}

    def tool(self, name: str, safe: bool, delay: float) -> Any:
        async def body(args: Any, ctx: ToolRunContext) -> Any:
            me = ctx.call_id
            self.overlaps.setdefault(me, set()).update(self.running)
            for other in self.running:
                self.overlaps.setdefault(other, set()).add(me)
            self.running.add(me)
            self.max_parallel = max(self.max_parallel, len(self.running))
            await asyncio.sleep(args.get("delay", delay))
            self.running.discard(me)
            return me

        return raw_tool(name, body, is_concurrency_safe=lambda args: safe)


async def test_parallel_calls_overlap_while_an_exclusive_call_runs_alone() -> None:
    tl = Timeline()
    registry = ToolRegistry()
    registry.register(tl.tool("read", True, 0.05))
    registry.register(tl.tool("write", False, 0.02))
    calls = [
        ToolExecutionInput("r1", "read", {}),
        ToolExecutionInput("r2", "read", {"delay": 0.01}),
        ToolExecutionInput("w1", "write", {}),
        ToolExecutionInput("r3", "read", {}),
        ToolExecutionInput("r4", "read", {}),
    ]
    results = await run_step(registry.root, calls)
    # results come back in call order even though r2 finished before r1
    assert [r.value for r in results if isinstance(r, ToolSuccess)] == ["r1", "r2", "w1", "r3", "r4"]
    assert "r2" in tl.overlaps["r1"] and "r4" in tl.overlaps["r3"]
    assert tl.overlaps["w1"] == set()  # the exclusive call ran alone
    assert not (tl.overlaps["r1"] & {"r3", "r4"})  # the barrier separates the groups


async def test_the_pool_is_bounded_and_rolling() -> None:
    tl = Timeline()
    registry = ToolRegistry()
    registry.register(tl.tool("read", True, 0.01))
    # r0 is slow; r1 and r2 are quick. A rolling pool starts r3 as soon as r1 frees a slot, while r0 is
    # still running; a batched pool would wait for r0 (the whole first batch) before starting r3.
    delays = [0.3, 0.01, 0.01, 0.01, 0.01, 0.01]
    calls = [ToolExecutionInput(f"r{i}", "read", {"delay": d}) for i, d in enumerate(delays)]
    results = await run_step(registry.root, calls, max_parallel=3)
    assert tl.max_parallel == 3
    assert len(results) == 6
    assert {"r3", "r4", "r5"} <= tl.overlaps["r0"]  # later calls started while r0 still held its slot


async def test_precomputed_modes_are_used_as_given() -> None:
    tl = Timeline()
    registry = ToolRegistry()
    registry.register(tl.tool("read", True, 0.02))  # parallel by its own classifier
    calls = [ToolExecutionInput("a", "read", {}), ToolExecutionInput("b", "read", {})]
    await run_step(registry.root, calls, modes=["exclusive", "exclusive"])
    assert tl.overlaps["a"] == set() and tl.overlaps["b"] == set()
    with pytest.raises(ValueError, match="one execution mode per call"):
        await run_step(registry.root, calls, modes=["parallel"])


async def test_a_failing_classifier_or_unknown_tool_is_exclusive() -> None:
    def boom(args: Any) -> bool:
        raise RuntimeError("x")

    registry = ToolRegistry()
    registry.register(raw_tool("weird", is_concurrency_safe=boom))
    registry.register(raw_tool("truthy", is_concurrency_safe=lambda a: 1))  # only True opts in
    assert registry.execution_mode("weird", {}) == "exclusive"
    assert registry.execution_mode("truthy", {}) == "exclusive"
    assert registry.execution_mode("ghost", {}) == "exclusive"
    assert registry.execution_mode("weird", "raw string") == "exclusive"


async def test_a_parallel_group_holds_at_most_max_parallel_tasks() -> None:
    """A step of many parallel calls costs a task per pool slot, not a task per call."""
    alive: list[int] = []

    async def body(args: Any, ctx: ToolRunContext) -> Any:
        alive.append(len(asyncio.all_tasks()))
        await asyncio.sleep(0)
        return None

    registry = ToolRegistry()
    registry.register(raw_tool("read", body, is_concurrency_safe=lambda args: True))
    calls = [ToolExecutionInput(f"r{i}", "read", {}) for i in range(40)]
    results = await run_step(registry.root, calls, max_parallel=4)
    assert len(results) == 40 and not any(r.is_error for r in results)
    assert max(alive) <= 4 + 1, max(alive)  # the pool's tasks and this test's own
