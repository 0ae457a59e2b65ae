"""Background commands: `bash` with `run_in_background` returns at once, whatever the command's length.

Row: the median time from a `bash` call with `run_in_background` to its result (what the model is given
next), through the registry's full pipeline, for a command that would run 10 minutes and one that prints
64 MB as fast as it can: <= 50 ms. Baseline, in the same run: a foreground `true` (a spawn, an exit and a
reap: the least any command costs). Each command is stopped between runs, outside the timed part, with the
session's own `stop_all`, as a session's close would.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

from presenters import build_tools
from presenters.background import BACKGROUND_SERVICE, BackgroundCommands
from presenters.process_tree import PROCESSES_SERVICE, ProcessScope
from presenters.runtime import SCRATCH_SERVICE, ScratchDir
from registry_core import Agent, ToolExecutionInput, ToolRegistry

RUNS = 15
TARGET_MS = 50.0
COMMANDS = {
    "a 10-minute command": "sleep 600",
    "a command printing 64 MB": "head -c 67108864 /dev/zero | tr '\\0' x",
}


async def _measure(workspace: str) -> dict[str, float]:
    registry = ToolRegistry()
    for tool in build_tools():
        registry.register(tool)
    scope, scratch = ProcessScope(), ScratchDir(parent=lambda: workspace)
    timings: dict[str, list[float]] = {"baseline": [], **{label: [] for label in COMMANDS}}
    calls = 0

    async def timed(arguments: dict[str, Any], background: BackgroundCommands) -> float:
        nonlocal calls
        calls += 1
        agent = Agent(
            id="bench",
            cwd=workspace,
            roots=(workspace,),
            services={PROCESSES_SERVICE: scope, SCRATCH_SERVICE: scratch, BACKGROUND_SERVICE: background},
        )
        call = ToolExecutionInput(call_id=f"b{calls}", name="bash", arguments=arguments, agent=agent)
        started = time.perf_counter()
        result = await registry.execute(call)
        elapsed = time.perf_counter() - started
        assert not result.is_error, result
        return elapsed

    try:
        for _ in range(RUNS):
            background = BackgroundCommands()
            timings["baseline"].append(await timed({"command": "true"}, background))
            for label, command in COMMANDS.items():
                timings[label].append(
                    await timed({"command": command, "run_in_background": True}, background)
                )
            await background.stop_all()  # not timed
    finally:
        await scope.stop()
        scratch.remove()
    return {label: statistics.median(samples) * 1000 for label, samples in timings.items()}


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as workspace:
        medians = asyncio.run(_measure(workspace))
    baseline = medians.pop("baseline")
    return [
        {
            "name": f"background: bash run_in_background returns, {label}",
            "value": round(value, 2),
            "unit": "ms (median)",
            "target": f"<= {TARGET_MS:g} ms",
            "ok": value <= TARGET_MS,
            "baseline": f"foreground `true` {baseline:.2f} ms",
        }
        for label, value in medians.items()
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
