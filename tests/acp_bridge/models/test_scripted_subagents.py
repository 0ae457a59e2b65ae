"""The scripted model's subagents: a child's requests (`StepRequest.subagent`) replay the entry keyed by the
task's description, else its prompt, by the child's own step index, without using up a turn of the script;
a child without an entry is told so; ids need be unique only within an entry."""

from __future__ import annotations

from typing import Any

import pytest

from acp_bridge.models import ModelError, StepComplete, StepRequest, TextDelta, UserMessage
from acp_bridge.models.scripted import ScriptedBackend, parse_script

SCRIPT: dict[str, Any] = {
    "turns": [{"steps": [
        {"text": "parent step", "tool_calls": [{"id": "a", "name": "task", "arguments": {}}]},
    ]}],
    "subagents": {
        "By description": {"steps": [
            {"text": "child one",
             "tool_calls": [{"id": "a", "name": "read", "arguments": {"file_path": "x"}}]},
            {"text": "child one done"},
        ]},
        "The whole prompt.": {"steps": [{"text": "child two"}]},
    },
}  # fmt: skip


async def _step(
    backend: ScriptedBackend, *, subagent: str | None, step: int, prompt: str = "p"
) -> tuple[str, Any]:
    request = StepRequest(
        messages=(UserMessage(prompt),), tools=(), turn_index=0, step_index=step, subagent=subagent
    )
    text, complete = "", None
    async for event in backend.stream_step(request):
        if isinstance(event, TextDelta):
            text += event.text
        elif isinstance(event, StepComplete):
            complete = event
    return text, complete


async def test_a_child_replays_its_entry_by_description_then_by_prompt() -> None:
    backend = ScriptedBackend(parse_script(SCRIPT))
    text, complete = await _step(backend, subagent="By description", step=0)
    assert text == "child one" and [c.name for c in complete.tool_calls] == ["read"]
    assert (await _step(backend, subagent="By description", step=1))[0] == "child one done"
    assert (await _step(backend, subagent="By description", step=2))[0] == ""  # its entry is over
    assert (await _step(backend, subagent="other words", step=0, prompt="The whole prompt."))[
        0
    ] == "child two"
    # The parent's turn is untouched by the children's requests.
    assert (await _step(backend, subagent=None, step=0))[0] == "parent step"


async def test_a_child_without_an_entry_says_so() -> None:
    text, complete = await _step(ScriptedBackend(parse_script(SCRIPT)), subagent="Unknown", step=0)
    assert "no script for the subagent 'Unknown'" in text
    assert complete.tool_calls == ()


def test_ids_repeat_across_entries_but_not_within_one() -> None:
    parse_script(SCRIPT)  # "a" in the turns and in an entry: fine
    twice = {"steps": [{"tool_calls": [{"id": "x", "name": "read", "arguments": {}}] * 2}]}
    with pytest.raises(
        ModelError, match=r"subagents\['dup'\]\.steps\[0\]\.tool_calls\[1\]\.id: duplicate id 'x'"
    ):
        parse_script({"turns": [], "subagents": {"dup": twice}})
    with pytest.raises(ModelError, match=r"subagents\.k\.extra: is not a known field"):
        parse_script({"turns": [], "subagents": {"k": {"steps": [], "extra": 1}}})
