"""Steering: a message sent while a turn runs reaches the model within one step.

Row: the number of model steps (responses the model gives) between the steer being sent and the request
that carries it, worst of the cases in `CASES` (sent while a tool runs, while the model streams a step that
asks for a tool, and while it streams its final answer, under `--steer-late step` and `turn`): at most 1.
Baseline, in the same runs: the same message refused while the turn runs and sent again once it answered
(the behaviour before steering): the steps the rest of the turn took.

In process: a `SessionManager` with a model that plays a six-step turn (five steps asking for a `hold`
call, then a final answer) and can hold any step mid-stream, and a `hold` tool that can hold its call, so
each case steers at a known point, without timing.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Literal

from acp_bridge.client.channel import ClientCapabilities, PermissionOutcome
from acp_bridge.common.settings import SteerLate
from acp_bridge.models import StepComplete, StepEvent, StepRequest, TextDelta, ToolCallRequest, UserMessage
from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.manager import CoreConfig, SessionManager
from registry_core import Output, ToolDefinition, ToolRunContext, define_tool

TOOL_STEPS = 5  # steps asking for a call, then the final answer
STEER_AT = 2  # the step during which (or during whose call) the message is sent
TARGET = 1
STEER_TEXT = "steer: use the other approach"

Where = Literal["tool", "model", "final"]
CASES: tuple[tuple[str, Where, SteerLate], ...] = (
    ("while a tool runs", "tool", "step"),
    ("while the model streams a step", "model", "step"),
    ("during the final answer (step)", "final", "step"),
    ("during the final answer (turn)", "final", "turn"),
    ("while a tool runs (turn)", "tool", "turn"),
)


class _Channel:
    """A client that takes every update and allows every call."""

    def __init__(self) -> None:
        self.capabilities = ClientCapabilities()

    def send_update(self, session_id: str, update: Any) -> None:
        return None

    async def drain(self) -> None:
        return None

    def backlog(self) -> int:
        return 0

    async def request_permission(self, session_id: str, tool_call: Any, options: Any) -> PermissionOutcome:
        return PermissionOutcome("selected", "allow_once")

    async def read_text_file(self, session_id: str, path: str) -> str:
        raise NotImplementedError

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise NotImplementedError


@dataclass
class _Point:
    """Where a case holds the turn: reached, then released by the driver."""

    reached: asyncio.Event
    release: asyncio.Event


def _point() -> _Point:
    return _Point(asyncio.Event(), asyncio.Event())


class _Model:
    """Plays the turn: steps 0..TOOL_STEPS-1 ask for a `hold` call, the next one answers; any request past
    it (a steer's extra step, or the next prompt) answers too. `log` says, in order, when each request
    was made (with whether it carried the steer) and when each response completed."""

    name = "bench:steering"

    def __init__(self, hold_step: int | None, point: _Point) -> None:
        self.hold_step = hold_step
        self.point = point
        self.requests = 0
        self.log: list[tuple[str, bool]] = []  # ("request", carries the steer) | ("response", scripted)

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        index = self.requests
        self.requests += 1
        carries = any(isinstance(m, UserMessage) and m.text == STEER_TEXT for m in request.messages)
        self.log.append(("request", carries))
        yield TextDelta(f"step {index} ")
        if index == self.hold_step:
            self.point.reached.set()
            await self.point.release.wait()
        scripted = index <= TOOL_STEPS and request.turn_index == 0
        self.log.append(("response", scripted))
        calls = (ToolCallRequest(f"h{index}", "hold", {"step": index}),) if index < TOOL_STEPS else ()
        yield StepComplete(tuple(calls), finish_reason="tool_calls" if calls else "stop")

    async def aclose(self) -> None:
        return None


def _hold_tool(hold_step: int | None, point: _Point) -> ToolDefinition:
    async def body(args: Any, ctx: ToolRunContext) -> str:
        if args["step"] == hold_step:
            point.reached.set()
            await point.release.wait()
        return "held" if args["step"] == hold_step else "ok"

    return define_tool(
        name="hold",
        description="Runs until released.",
        parameters={"step": {"type": "integer", "required": True}},
        output=Output(type={"type": "string"}, render=lambda args, value: value),
        execute=body,
    )


async def _case(where: Where, late: SteerLate, workspace: str) -> tuple[int, int]:
    """(steps between the steer and the request carrying it, the same without steering)."""
    point = _point()
    model_hold = {"tool": None, "model": STEER_AT, "final": TOOL_STEPS}[where]
    model = _Model(model_hold, point)
    tool = _hold_tool(STEER_AT if where == "tool" else None, point)
    policy = PolicyConfig(allow_tools=frozenset({"hold"}))
    config = CoreConfig(policy=policy, steer_late=late, compact_at=None)
    manager = SessionManager(_Channel(), model, [tool], config)
    try:
        session = manager.new_session(workspace)
        first = asyncio.ensure_future(session.submit([{"type": "text", "text": "do the job"}]))
        await point.reached.wait()
        model.log.append(("steer", False))
        steer = asyncio.ensure_future(session.submit([{"type": "text", "text": STEER_TEXT}]))
        await asyncio.sleep(0)  # one pass of the event loop: the steer's request runs until it waits, queued
        assert session.steering.waiting == 1, "the steer was not queued"
        point.release.set()
        await first
        await steer
    finally:
        await manager.shutdown()
    return _steps_between(model.log)


def _steps_between(log: list[tuple[str, bool]]) -> tuple[int, int]:
    after = log[log.index(("steer", False)) + 1 :]
    carried = next(i for i, entry in enumerate(after) if entry == ("request", True))
    steered = sum(1 for kind, _ in after[:carried] if kind == "response")
    resent = sum(1 for kind, scripted in after if kind == "response" and scripted)
    return steered, resent


async def _measure() -> dict[str, tuple[int, int]]:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as workspace:
        return {label: await _case(where, late, workspace) for label, where, late in CASES}


def run() -> list[dict[str, Any]]:
    results = asyncio.run(_measure())
    worst = max(steps for steps, _ in results.values())
    resent = max(base for _, base in results.values())
    cases = "; ".join(f"{name} {steps} vs {base}" for name, (steps, base) in results.items())
    return [
        {
            "name": f"steering: model steps from a steer to the request carrying it (worst of {len(CASES)})",
            "value": worst,
            "unit": "step(s)",
            "target": f"<= {TARGET}",
            "ok": worst <= TARGET,
            "baseline": f"refused, resent when the turn answers: up to {resent} ({cases})",
        }
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
