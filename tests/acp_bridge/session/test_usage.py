"""Usage and cost end to end: after every model response that reports usage, a real bridge subprocess sends
`usage_update` with the tokens in context against the selected model's window, from the endpoint's model
metadata or the built-in table of well-known models (never a guess), and the session's cumulative cost
where a price is known (`--price-in/--price-out` or the table), prompt-cache hits priced apart. A reloaded
session shows the same gauge and cost. Each `session/prompt` answer carries the prompt's own tokens (ACP's
unstable `PromptResponse.usage`): every model request it made, a compaction's summary included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, chat, chat_chunks

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
NAP = {"id": "call_1", "name": "nap", "arguments": {"seconds": 0}}


async def _session(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, model: str, *args: str
) -> tuple[Bridge, str]:
    env = {**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"}
    bridge = await bridges("--base-url", server.base_url, *args, model=f"openai:{model}", env=env)
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


def _usage(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "usage_update"]


async def test_the_window_comes_from_the_endpoints_metadata_and_the_cost_from_the_price_flags(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.set_models([{"id": "fake-model", "context_length": 32_000}])
    server.enqueue(
        chat(tool_calls=[NAP], usage={"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}),
        chat(text="Done.", usage={"prompt_tokens": 1300, "completion_tokens": 100, "total_tokens": 1400,
                                  "prompt_tokens_details": {"cached_tokens": 1000}}),
    )  # fmt: skip
    bridge, session_id = await _session(
        bridges, server, workspace, "fake-model", "--price-in", "2", "--price-out", "8"
    )
    assert await bridge.prompt(session_id, "nap") == "end_turn"
    first = (1000 * 2 + 200 * 8) / 1e6
    # No cached-input price given: cache hits cost the input price.
    second = first + (1300 * 2 + 100 * 8) / 1e6
    assert _usage(bridge, session_id) == [
        {"sessionUpdate": "usage_update", "used": 1200, "size": 32_000,
         "cost": {"amount": first, "currency": "USD"}},
        {"sessionUpdate": "usage_update", "used": 1400, "size": 32_000,
         "cost": {"amount": round(second, 6), "currency": "USD"}},
    ]  # fmt: skip


async def test_a_well_known_model_gets_its_window_and_price_from_the_built_in_table(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    usage = {"prompt_tokens": 10_000, "completion_tokens": 1_000, "total_tokens": 11_000,
             "prompt_tokens_details": {"cached_tokens": 4_000}}  # fmt: skip
    server.enqueue(chat(text="Hello.", usage=usage, model="gpt-4o-mini"))
    bridge, session_id = await _session(bridges, server, workspace, "gpt-4o-mini")
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    # gpt-4o-mini per million tokens: $0.15 input, $0.075 cached input, $0.60 output; 128,000 tokens.
    cost = (6_000 * 0.15 + 4_000 * 0.075 + 1_000 * 0.60) / 1e6
    assert _usage(bridge, session_id) == [
        {"sessionUpdate": "usage_update", "used": 11_000, "size": 128_000,
         "cost": {"amount": round(cost, 6), "currency": "USD"}}
    ]  # fmt: skip


async def test_an_unknown_model_reports_no_usage_even_with_a_price(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Hello."))
    bridge, session_id = await _session(
        bridges, server, workspace, "mystery-model", "--price-in", "1", "--price-out", "1"
    )
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    assert _usage(bridge, session_id) == []  # no truthful window to measure against


async def test_a_reloaded_session_shows_the_gauge_and_cost_it_had(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    state = str(tmp_path / "state")
    server.set_models([{"id": "fake-model", "context_length": 32_000}])
    server.enqueue(
        chat(text="One.", usage={"prompt_tokens": 500, "completion_tokens": 100, "total_tokens": 600}),
        chat(text="Two.", usage={"prompt_tokens": 700, "completion_tokens": 100, "total_tokens": 800}),
    )
    prices = ("--price-in", "1", "--price-out", "2")
    live, session_id = await _session(bridges, server, workspace, "fake-model", "--state-dir", state, *prices)
    assert await live.prompt(session_id, "one") == "end_turn"
    last = _usage(live, session_id)[-1]
    await live.stop()

    again, _ = await _session(bridges, server, workspace, "fake-model", "--state-dir", state, *prices)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _usage(again, session_id) == [last]
    assert await again.prompt(session_id, "two") == "end_turn"
    total = _usage(again, session_id)[-1]
    assert total["cost"]["amount"] == round((500 * 1 + 100 * 2 + 700 * 1 + 100 * 2) / 1e6, 6)


def _tokens(prompt: int, completion: int, **details: int) -> dict[str, Any]:
    usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                             "total_tokens": prompt + completion}  # fmt: skip
    if "cached" in details:
        usage["prompt_tokens_details"] = {"cached_tokens": details["cached"]}
    if "reasoning" in details:
        usage["completion_tokens_details"] = {"reasoning_tokens": details["reasoning"]}
    return usage


async def _prompt(bridge: Bridge, session_id: str, text: str) -> dict[str, Any]:
    """The raw `session/prompt` answer (the harness checks its `usage` against ACP's `Usage`)."""
    answer: dict[str, Any] = await bridge.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}, within=20
    )
    return answer


async def test_a_prompts_answer_carries_the_tokens_of_all_its_model_requests_compaction_included(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.set_models([{"id": "fake-model", "context_length": 1_000}])
    server.enqueue(
        chat(tool_calls=[NAP], usage=_tokens(700, 150, cached=500, reasoning=40)),  # 85%: compacts
        chat(text="The user asked for a nap.", usage=_tokens(200, 10)),  # the summary request
        chat(text="Rested.", usage=_tokens(300, 20)),
        chat(text="Hi.", usage=_tokens(100, 5)),
    )
    bridge, session_id = await _session(bridges, server, workspace, "fake-model")
    first = await _prompt(bridge, session_id, "nap")
    assert len(server.requests) == 3  # a step, the compaction's summary, a step
    assert first == {
        "stopReason": "end_turn",
        "usage": {"totalTokens": 850 + 210 + 320, "inputTokens": 1200, "outputTokens": 180,
                  "thoughtTokens": 40, "cachedReadTokens": 500},
        "_meta": {"acpBridge": {"turn": 1}},
    }  # fmt: skip
    # The next prompt counts its own requests only; no cache or reasoning figure reported, none sent.
    second = await _prompt(bridge, session_id, "hi")
    assert second["usage"] == {"totalTokens": 105, "inputTokens": 100, "outputTokens": 5}


async def test_compact_reports_its_summary_and_a_prompt_without_usage_reports_none(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(
        chat(text="Alpha.", usage=_tokens(40, 4)),
        chat(text="Beta.", usage=_tokens(60, 6)),
        chat(text="We did alpha.", usage=_tokens(80, 20)),  # /compact's summary
        SSE(chat_chunks(text="No usage.")[:-1]),  # an endpoint that reports no usage
    )
    bridge, session_id = await _session(bridges, server, workspace, "mystery-model")
    assert (await _prompt(bridge, session_id, "first"))["usage"]["totalTokens"] == 44
    assert (await _prompt(bridge, session_id, "second"))["usage"]["totalTokens"] == 66
    compact = await _prompt(bridge, session_id, "/compact")
    assert compact == {"stopReason": "end_turn",
                       "usage": {"totalTokens": 100, "inputTokens": 80, "outputTokens": 20}}  # fmt: skip
    assert await _prompt(bridge, session_id, "/title Named") == {"stopReason": "end_turn"}  # no model request
    # The third turn: `/compact` and `/title` ran none.
    assert await _prompt(bridge, session_id, "third") == {
        "stopReason": "end_turn",
        "_meta": {"acpBridge": {"turn": 3}},
    }
    assert len(server.requests) == 4
