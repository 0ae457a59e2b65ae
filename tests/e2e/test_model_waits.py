"""The user is told when the model keeps a prompt waiting, the bridge a real subprocess over real pipes and
the model the fake OpenAI-compatible server on 127.0.0.1: a rate-limited request (HTTP 429 with `Retry-After`)
is a `notice` "rate limited, retrying in 2 s (attempt 1 of 3)" before the wait (an agent thought for a
client without notices), a model that sends nothing is a notice every `--wait-notice` seconds, and a cancel
during a retry's wait answers `cancelled` at once, without trying again."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, HTTPError, chat, chat_chunks

pytestmark = pytest.mark.slow

KEYS = {"ACP_BRIDGE_API_KEY": "test-key", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
NOTICES = {"session": {"notices": {}}}


async def _session(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, capabilities: dict[str, Any], *args: str
) -> tuple[Bridge, str]:
    bridge = await bridges("--base-url", server.base_url, *args, model="openai:fake-model", env=KEYS)
    await bridge.initialize_raw(capabilities)
    return bridge, await bridge.new_session(workspace)


def _notices(bridge: Bridge, session_id: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "notice"]


def _answered_cancelled(frame: dict[str, Any]) -> bool:
    result = frame.get("result")
    return "method" not in frame and isinstance(result, dict) and result.get("stopReason") == "cancelled"


async def test_a_rate_limited_request_is_told_before_the_wait_then_the_answer_comes(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.enqueue(HTTPError(429, "Too many requests", retry_after="2"), chat(text="Here at last."))
        bridge, session_id = await _session(bridges, server, workspace, NOTICES)
        assert await bridge.prompt(session_id, "hello") == "end_turn"
        assert len(server.requests) == 2
    (notice,) = _notices(bridge, session_id)
    assert notice["title"] == "Rate limited, retrying in 2 s (attempt 1 of 3)"
    assert notice["severity"] == "warning"
    assert notice["_meta"]["acpBridge"]["wait"] == {
        "reason": "rate_limited",
        "seconds": 2.0,
        "attempt": 1,
        "of": 3,
    }
    kinds = [u["sessionUpdate"] for u in bridge.updates(session_id)]
    assert kinds.index("notice") < kinds.index("agent_message_chunk")  # told before the answer came
    assert not bridge.schema_errors


async def test_without_notices_the_wait_is_an_agent_thought(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.enqueue(HTTPError(429, "Too many requests", retry_after="2"), chat(text="Here at last."))
        bridge, session_id = await _session(bridges, server, workspace, {})
        assert await bridge.prompt(session_id, "hello") == "end_turn"
    thoughts = [
        u["content"]["text"]
        for u in bridge.updates(session_id)
        if u["sessionUpdate"] == "agent_thought_chunk"
    ]
    assert thoughts == ["(rate limited, retrying in 2 s (attempt 1 of 3))\n"]
    assert not _notices(bridge, session_id)


async def test_a_cancel_during_the_retry_wait_answers_cancelled_at_once_and_tries_no_more(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.enqueue(HTTPError(429, "Too many requests", retry_after="2"), chat(text="Never asked for."))
        bridge, session_id = await _session(bridges, server, workspace, NOTICES)
        prompt = asyncio.ensure_future(bridge.prompt(session_id, "hello"))
        await bridge.wait_for(lambda: bool(_notices(bridge, session_id)))
        told = bridge.arrival(
            lambda f: f.get("params", {}).get("update", {}).get("sessionUpdate") == "notice"
        )
        await bridge.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 5) == "cancelled"
        # Well before the 2 s the server asked for, counted from the notice that started the wait.
        assert bridge.arrival(_answered_cancelled) - told < 1.5
        assert len(server.requests) == 1 and server.pending == 1
        # The session goes on: the next prompt is the next request.
        assert await bridge.prompt(session_id, "again") == "end_turn"


async def test_a_silent_model_is_told_every_few_seconds_until_it_speaks(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    chunks = chat_chunks(text="Thought long.")
    with FakeOpenAIServer() as server:
        # The role chunk, then nothing until the client goes away.
        server.enqueue(SSE(chunks, stall_after=1), chat(text="Quick this time."))
        bridge, session_id = await _session(bridges, server, workspace, NOTICES, "--wait-notice", "0.3")
        prompt = asyncio.ensure_future(bridge.prompt(session_id, "think hard"))
        await bridge.wait_for(lambda: len(_notices(bridge, session_id)) >= 2)
        await bridge.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 5) == "cancelled"
        first, second = _notices(bridge, session_id)[:2]
        waits = [n["_meta"]["acpBridge"]["wait"] for n in (first, second)]
        assert [w["reason"] for w in waits] == ["silent", "silent"]
        assert 0.3 <= waits[0]["seconds"] < waits[1]["seconds"]  # the silence so far, growing
        assert first["title"].startswith("Waiting for the model for ") and first["severity"] == "info"
        # Once the step ended, nothing more is told: the next prompt is answered, and the watch is gone.
        assert await bridge.prompt(session_id, "quick") == "end_turn"
    assert not bridge.schema_errors
