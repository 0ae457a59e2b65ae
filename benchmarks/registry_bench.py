"""The registry pipeline's added cost per call, against calling the bare tool function in the same run.

A no-op tool goes through one pre-execute listener, one guard and one post-execute listener, with a live
caller signal and an agent as in a bridge session. Rows marked (info) add `timeout_ms` (the built-in timeout
policy then runs on every call) and carry no target. Each call is timed on its own; the row reports the
median added cost and the sustained calls per second on one core. Targets (issue 2): <= 40 us added
(median), >= 25,000 calls/s.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from typing import Any

from pydantic import BaseModel

from registry_core import (
    Agent,
    CancelController,
    Output,
    TextBlock,
    ToolDefinition,
    ToolExecution,
    ToolExecutionInput,
    ToolExecutionResult,
    ToolOutputDefinition,
    ToolRegistry,
    ToolRunContext,
    define_tool,
)

CALLS = 20_000


class NoopArgs(BaseModel):
    path: str


async def _noop(args: Any, ctx: Any) -> Any:
    return {"ok": True}


def _render(args: Any, value: Any) -> Any:
    return (TextBlock("ok"),)


def _raw_tool(timeout_ms: float | None = None) -> ToolDefinition:
    return ToolDefinition(
        name="noop",
        description="does nothing",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
        output=ToolOutputDefinition(schema={"type": "object"}, render=_render),
        execute=_noop,
        timeout_ms=timeout_ms,
    )


def _typed_tool(timeout_ms: float | None = None) -> ToolDefinition:
    async def body(args: NoopArgs, ctx: ToolRunContext) -> dict[str, bool]:
        return {"ok": True}

    return define_tool(
        name="noop",
        description="does nothing",
        parameters=NoopArgs,
        output=Output(dict[str, bool], render=lambda a, v: "ok"),
        execute=body,
        timeout_ms=timeout_ms,
    )


def _registry(tool: ToolDefinition) -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(tool)

    async def pre(ex: ToolExecution, nxt: Any) -> Any:
        return await nxt()

    async def post(ex: ToolExecution, result: ToolExecutionResult, nxt: Any) -> Any:
        return await nxt()

    registry.on_pre_execute(pre)
    registry.add_guard(lambda ex: None)
    registry.on_post_execute(post)
    return registry


async def _measure(fn: Any, calls: int) -> tuple[float, float]:
    """(median seconds per call, calls per second over the whole run)."""
    samples = []
    clock = time.perf_counter
    for _ in range(500):  # warm-up
        await fn()
    gc.collect()
    start = clock()
    for _ in range(calls):
        t0 = clock()
        await fn()
        samples.append(clock() - t0)
    total = clock() - start
    return statistics.median(samples), calls / total


async def _run() -> list[dict[str, Any]]:
    args = {"path": "a.txt"}

    async def bare() -> Any:
        value = await _noop(args, None)
        return _render(args, value)

    bare_median, bare_rate = await _measure(bare, CALLS)
    rows: list[dict[str, Any]] = []
    # The setup (targets apply), then the same tools with `timeout_ms` set as the built-in tools
    # have it (the timeout policy's wrapper, its timer and linked signal run on every call): informational.
    cases = [
        ("raw ToolDefinition", _raw_tool(), True),
        ("define_tool (pydantic args)", _typed_tool(), True),
        ("raw ToolDefinition + timeout_ms", _raw_tool(60_000), False),
        ("define_tool + timeout_ms", _typed_tool(60_000), False),
    ]
    for label, tool, targeted in cases:
        registry = _registry(tool)
        counter = iter(range(10**9))
        # Like a bridge session: a live caller signal (the turn's) and an agent on every call, so the
        # cancellation plumbing is measured too, not skipped as it is for the never-firing default.
        turn = CancelController()
        agent = Agent(id="bench", cwd="/tmp", roots=("/tmp",))

        async def through_pipeline(
            registry: ToolRegistry = registry,
            counter: Any = counter,
            turn: CancelController = turn,
            agent: Agent = agent,
        ) -> Any:
            return await registry.execute(
                ToolExecutionInput(f"c{next(counter)}", "noop", args, signal=turn.signal, agent=agent)
            )

        median, rate = await _measure(through_pipeline, CALLS)
        added_us = (median - bare_median) * 1e6
        rows.append(
            {
                "name": f"registry: added cost per call, {label}",
                "value": round(added_us, 1),
                "unit": "us (median)",
                "target": "<= 40" if targeted else "(info)",
                "ok": added_us <= 40 if targeted else True,
                "baseline": f"bare call {bare_median * 1e6:.2f} us",
            }
        )
        rows.append(
            {
                "name": f"registry: throughput, {label}",
                "value": round(rate),
                "unit": "calls/s",
                "target": ">= 25000" if targeted else "(info)",
                "ok": rate >= 25_000 if targeted else True,
                "baseline": f"bare {bare_rate:,.0f} calls/s",
            }
        )
    return rows


def run() -> list[dict[str, Any]]:
    return asyncio.run(_run())


if __name__ == "__main__":
    for row in run():
        print(row)
