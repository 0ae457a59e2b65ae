"""The scripted model's optional fields for model controls: a window (`context_window`), usage (scripted
per step, or estimated for every response), and compaction summaries (`summaries`, answered to a summary
request without using up a turn). A script without them replays exactly as before."""

from __future__ import annotations

from typing import Any

import pytest

from acp_bridge.models import (
    ModelError,
    ScriptedBackend,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    UserMessage,
    parse_script,
)


async def _events(backend: ScriptedBackend, **fields: Any) -> list[StepEvent]:
    request = StepRequest(**{"messages": [UserMessage("hi")], "tools": [], "turn_index": 0, "step_index": 0,
                             **fields})  # fmt: skip
    return [event async for event in backend.stream_step(request)]


def _text(events: list[StepEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _complete(events: list[StepEvent]) -> StepComplete:
    last = events[-1]
    assert isinstance(last, StepComplete)
    return last


async def test_a_script_without_the_new_fields_reports_no_usage_and_no_window() -> None:
    backend = ScriptedBackend(parse_script({"turns": [{"steps": [{"text": "hello"}]}]}))
    assert _complete(await _events(backend)).usage is None
    assert await backend.list_models() == [{"id": "scripted"}]


async def test_a_step_reports_the_usage_its_script_gives() -> None:
    step = {"text": "hi", "usage": {"input_tokens": 900, "output_tokens": 12, "cached_input_tokens": 800}}
    backend = ScriptedBackend(parse_script({"turns": [{"steps": [step]}], "context_window": 1_000}))
    usage = _complete(await _events(backend)).usage
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens) == (900, 12, 800)
    assert await backend.list_models() == [{"id": "scripted", "context_window": 1_000}]


async def test_estimated_usage_grows_with_what_the_model_is_sent() -> None:
    backend = ScriptedBackend(parse_script({"turns": [{"steps": [{"text": "four"}]}], "usage": "estimate"}))
    short = _complete(await _events(backend)).usage
    long = _complete(await _events(backend, messages=[UserMessage("x" * 4_000)])).usage
    assert short is not None and long is not None
    assert long.input_tokens - short.input_tokens == 1_000 - 1  # four characters a token
    assert short.output_tokens == 1


async def test_summary_requests_get_the_scripted_summaries_in_order_the_last_repeating() -> None:
    script = {"turns": [{"steps": [{"text": "turn"}]}], "summaries": ["first summary", "second summary"]}
    backend = ScriptedBackend(parse_script(script))
    got = [_text(await _events(backend, purpose="summary", summary_index=i)) for i in range(3)]
    assert got == ["first summary", "second summary", "second summary"]
    # A summary request is no turn of the script: turn 0 is still there.
    assert _text(await _events(backend)) == "turn"


async def test_without_scripted_summaries_a_summary_request_gets_a_generic_one() -> None:
    backend = ScriptedBackend(parse_script({"turns": []}))
    text = _text(await _events(backend, purpose="summary", messages=[UserMessage("y" * 50)]))
    assert text == "(Scripted summary of 50 characters of earlier conversation.)"


@pytest.mark.parametrize(
    ("script", "fragment"),
    [
        ({"turns": [{"steps": [{"usage": {"input_tokens": -1}}]}]}, "turns[0].steps[0].usage.input_tokens"),
        ({"turns": [{"steps": [{"usage": {"output_tokens": 3}}]}]}, "usage.input_tokens: is required"),
        ({"turns": [], "usage": "exact"}, "usage: Input should be 'estimate'"),
        ({"turns": [], "context_window": 0}, "context_window: Input should be greater than or equal to 1"),
        ({"turns": [], "summaries": "one"}, "summaries: must be a list, not a string"),
    ],
)
def test_bad_new_fields_are_config_errors_naming_their_path(script: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_script(script)
    assert caught.value.kind == "config"
    assert fragment in caught.value.message
