"""`StepsBackend`: a model whose turns are lists of steps, each the calls it asks for. Unlike the scripted
model it may reuse a call id (in a later turn, as real models do, or within one step), which the scripted
model's script format refuses."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from acp_bridge.models import StepComplete, StepRequest, ToolCallRequest


class StepsBackend:
    """`turns[turn][step]`: the calls (`{"id", "name", "arguments"}`) of that step; a turn ends at the
    first step past its list."""

    name = "steps"

    def __init__(self, turns: list[list[list[dict[str, Any]]]]) -> None:
        self.turns = turns

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepComplete]:
        steps = self.turns[request.turn_index]
        calls = steps[request.step_index] if request.step_index < len(steps) else []
        yield StepComplete(tuple(ToolCallRequest(c["id"], c["name"], c["arguments"]) for c in calls))

    async def aclose(self) -> None:
        return None
