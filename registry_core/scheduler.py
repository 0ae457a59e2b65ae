"""Run one model step's tool calls: parallel groups and exclusive barriers, results in call order.

Consecutive calls whose execution mode is `parallel` form a group that runs on a bounded rolling pool
(at most `max_parallel` at once, a new call starting as soon as one finishes): `max_parallel` workers,
each taking the next call when its last one settles, so a step of 200 reads costs 8 tasks, not 200.
An `exclusive` call is a barrier: it starts after everything before it has settled and runs alone.
Results come back in the order the model asked for the calls, whatever order they finished in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence

from .execution import ToolExecutionInput, ToolExecutionResult
from .registry import ExecutionMode, ToolScope

DEFAULT_MAX_PARALLEL = 8


def plan_groups(modes: Sequence[ExecutionMode]) -> list[tuple[ExecutionMode, range]]:
    """Split call indices into consecutive groups: each parallel run, and each exclusive call alone."""
    groups: list[tuple[ExecutionMode, range]] = []
    i = 0
    while i < len(modes):
        if modes[i] == "exclusive":
            groups.append(("exclusive", range(i, i + 1)))
            i += 1
            continue
        j = i
        while j < len(modes) and modes[j] == "parallel":
            j += 1
        groups.append(("parallel", range(i, j)))
        i = j
    return groups


async def run_step(
    scope: ToolScope,
    calls: Sequence[ToolExecutionInput],
    *,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
    on_group: Callable[[ExecutionMode, range], None] | None = None,
    modes: Sequence[ExecutionMode] | None = None,
) -> list[ToolExecutionResult]:
    """Execute every call of one step through `scope`; never raises for a tool's fault.

    `modes`: each call's execution mode when the caller already classified them (it parsed the
    arguments for its cards); otherwise `scope.execution_mode` classifies each call here."""
    if max_parallel < 1:
        raise ValueError("max_parallel must be at least 1")
    if modes is None:
        modes = [scope.execution_mode(c.name, c.arguments) for c in calls]
    elif len(modes) != len(calls):
        raise ValueError("modes must give one execution mode per call")
    results: list[ToolExecutionResult | None] = [None] * len(calls)
    for mode, indices in plan_groups(modes):
        if on_group is not None:
            on_group(mode, indices)
        if mode == "exclusive" or len(indices) == 1:
            for k in indices:
                results[k] = await scope.execute(calls[k])
            continue
        queue = iter(indices)

        async def worker(queue: Iterator[int] = queue) -> None:
            for k in queue:  # shared by the workers: each takes the next call in call order
                results[k] = await scope.execute(calls[k])

        async with asyncio.TaskGroup() as group:
            for _ in range(min(max_parallel, len(indices))):
                group.create_task(worker())
    final: list[ToolExecutionResult] = []
    for r in results:
        assert r is not None
        final.append(r)
    return final
