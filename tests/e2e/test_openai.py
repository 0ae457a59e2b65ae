"""The OpenAI-compatible backend through the whole bridge: a real bridge subprocess talks to a real local SSE
server (fake_openai_server.py) over TCP. What the model is sent (history, tool results, the reason of a
rejection, resource links) is read back from the server's request log."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from acp import schema
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, HTTPError, chat, chat_chunks

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}


async def _start(
    bridges: StartBridge,
    server: FakeOpenAIServer,
    workspace: Path,
    client: RecordingClient | None = None,
    key: str = "test-key",
    *args: str,
) -> tuple[Any, str]:
    bridge = await bridges(
        "--base-url",
        server.base_url,
        *args,
        model="openai:fake-model",
        client=client,
        env={**NO_KEYS, "ACP_BRIDGE_API_KEY": key},
    )
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


def _messages(server: FakeOpenAIServer, index: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = server.requests[index].json()["messages"]
    return messages


async def test_a_turn_with_tool_calls_streams_and_feeds_results_back(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    call = {"id": "call_1", "name": "nap", "arguments": {"seconds": 0, "label": "rested"}}
    server.enqueue(chat(reasoning="I should rest.", text="Napping.", tool_calls=[call]), chat(text="Rested."))
    bridge, session_id = await _start(bridges, server, workspace)
    link = schema.ResourceContentBlock(type="resource_link", uri=f"file://{workspace}/a.txt", name="a.txt")
    response = await asyncio.wait_for(
        bridge.conn.prompt(
            session_id=session_id, prompt=[schema.TextContentBlock(type="text", text="Take a nap."), link]
        ),
        20,
    )
    assert response.stop_reason == "end_turn"
    updates = bridge.updates(session_id)
    thought = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk")
    text = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert (thought, text) == ("I should rest.", "Napping.Rested.")
    assert bridge.call_updates("call_1")[-1]["status"] == "completed"

    first = server.requests[0].json()
    assert first["model"] == "fake-model"
    assert first["stream"] is True
    assert "nap" in {t["function"]["name"] for t in first["tools"]}
    assert server.requests[0].headers["authorization"] == "Bearer test-key"
    user = first["messages"][1]
    assert user["role"] == "user"
    assert "Take a nap." in user["content"]
    assert f"[Resource: a.txt](file://{workspace}/a.txt)" in user["content"]
    second = _messages(server, 1)
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["id"] == "call_1"
    tool = next(m for m in second if m["role"] == "tool")
    assert (tool["tool_call_id"], tool["content"]) == ("call_1", "rested")


async def test_a_rejected_call_reaches_the_model_as_its_reason(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    call = {"id": "call_1", "name": "bash", "arguments": {"command": "rm -rf build"}}
    server.enqueue(chat(tool_calls=[call]), chat(text="Understood, I will not delete it."))
    client = RecordingClient(lambda s, c, o: selected("reject_once"))
    bridge, session_id = await _start(bridges, server, workspace, client)
    assert await bridge.prompt(session_id, "clean up") == "end_turn"
    tool = next(m for m in _messages(server, 1) if m["role"] == "tool")
    assert "rejected" in tool["content"]
    assert bridge.call_updates("call_1")[-1]["status"] == "failed"


async def test_an_invalid_key_fails_the_prompt_with_auth_required_naming_the_variable(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(HTTPError(401, "Incorrect API key provided"))
    bridge, session_id = await _start(bridges, server, workspace)
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi")
    assert caught.value.code == -32000
    assert "ACP_BRIDGE_API_KEY" in str(caught.value)
    assert len(server.requests) == 1  # an auth failure is not retried
    # The session survives: the next prompt is tried afresh.
    server.enqueue(chat(text="Now it works."))
    assert await bridge.prompt(session_id, "again") == "end_turn"


async def test_no_key_at_all_fails_the_prompt_with_auth_required(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge, session_id = await _start(bridges, server, workspace, key="")
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi")
    assert caught.value.code == -32000
    assert "ACP_BRIDGE_API_KEY" in str(caught.value)
    assert server.requests == []


async def test_a_server_error_after_retries_is_a_clear_error_not_a_hang(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(*[HTTPError(503, "overloaded", retry_after="0")] * 4)
    bridge, session_id = await _start(bridges, server, workspace)
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi", within=30)
    assert caught.value.code == -32603
    assert "503" in str(caught.value)
    assert json.loads(json.dumps(caught.value.data))["kind"] == "server"


async def test_cancel_closes_a_stalled_model_stream(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(SSE(chat_chunks(text="I am thinking very slowly about this"), stall_after=3))
    bridge, session_id = await _start(bridges, server, workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "hi"))
    await bridge.wait_for(lambda: any(u["sessionUpdate"] == "agent_message_chunk" for u in bridge.updates()))
    started = time.perf_counter()
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 2) == "cancelled"
    assert time.perf_counter() - started < 1.0
    assert await asyncio.to_thread(server.wait_for_stall_closed, 1, 5.0)


async def test_a_final_step_cut_by_the_token_limit_stops_with_max_tokens(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="This answer is cut", finish_reason="length"))
    bridge, session_id = await _start(bridges, server, workspace)
    assert await bridge.prompt(session_id, "write a novel") == "max_tokens"


async def test_a_rejection_with_feedback_tells_the_model_why(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    call = {"id": "call_1", "name": "bash", "arguments": {"command": "rm -rf build"}}
    server.enqueue(chat(tool_calls=[call]), chat(text="I will keep the build directory."))
    answer = {"outcome": {"outcome": "selected", "optionId": "reject_once",
                          "_meta": {"feedback": "keep build/, it has the release artefacts"}}}  # fmt: skip
    bridge, session_id = await _start(bridges, server, workspace, RecordingClient(lambda s, c, o: answer))
    assert await bridge.prompt(session_id, "clean up") == "end_turn"
    tool = next(m for m in _messages(server, 1) if m["role"] == "tool")
    assert "keep build/, it has the release artefacts" in tool["content"]


@pytest.mark.parametrize("window", [None, 64000])
async def test_usage_is_reported_only_with_a_known_context_window(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, window: int | None
) -> None:
    call = {"id": "call_1", "name": "nap", "arguments": {"seconds": 0}}
    server.enqueue(
        chat(tool_calls=[call], usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}),
        chat(text="Done.", usage={"prompt_tokens": 150, "completion_tokens": 30, "total_tokens": 180}),
    )
    args = ("--context-window", str(window)) if window is not None else ()
    bridge, session_id = await _start(bridges, server, workspace, None, "test-key", *args)
    assert await bridge.prompt(session_id, "nap") == "end_turn"
    usage = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "usage_update"]
    if window is None:
        assert usage == []  # no truthful `size` to give
    else:
        # One per step, each the tokens now in context: that step's prompt plus its output.
        expected = [{"sessionUpdate": "usage_update", "used": used, "size": 64000} for used in (120, 180)]
        assert usage == expected


async def test_a_streamed_call_shows_at_once_then_is_refined_into_its_full_card(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    read = {"id": "call_r", "name": "read", "arguments": {"file_path": "a.txt"}}
    bash = {"id": "call_b", "name": "bash", "arguments": {"command": "echo hi"}}
    # Each chunk comes 50 ms after the previous one: the ten or so chunks after the first call's first
    # fragment (arguments, the second call, the finish) make the step complete long after that call began.
    server.enqueue(SSE(chat_chunks(tool_calls=[read, bash]), delay=0.05), chat(text="Done."))
    bridge, session_id = await _start(bridges, server, workspace)  # with the terminal opt-in
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "look"))
    await bridge.wait_for(lambda: bool(bridge.call_updates("call_r")))
    announced = time.perf_counter()
    await bridge.wait_for(lambda: len(bridge.call_updates("call_r")) > 1)
    assert time.perf_counter() - announced > 0.2  # the rest of the stream took at least that long
    assert await asyncio.wait_for(prompt, 20) == "end_turn"

    for call, kind, status in (("call_r", "read", "in_progress"), ("call_b", "execute", "pending")):
        early, refined, *_rest, final = bridge.call_updates(call)
        # At once: a pending card titled with the tool's name (its arguments were still streaming).
        assert early["sessionUpdate"] == "tool_call"
        assert (early["status"], early["kind"]) == ("pending", "other")
        assert "rawInput" not in early
        # Then the same card, refined: no second `tool_call` for the id.
        assert refined["sessionUpdate"] == "tool_call_update"
        assert (refined["kind"], refined["status"]) == (kind, status)
        assert final["status"] == "completed"
        assert [u["sessionUpdate"] for u in bridge.call_updates(call)].count("tool_call") == 1
    assert [bridge.call_updates(c)[0]["title"] for c in ("call_r", "call_b")] == ["read", "bash"]
    read_refined = bridge.call_updates("call_r")[1]
    assert read_refined["title"] == "Read a.txt"
    assert read_refined["rawInput"] == {"file_path": "a.txt"}
    assert read_refined["locations"][0]["path"] == str(workspace / "a.txt")
    # A terminal widget only opens on a `tool_call`, so the refined command card shows console text.
    bash_updates = bridge.call_updates("call_b")
    assert bash_updates[1]["title"] == "echo hi"
    assert not any(b.get("type") == "terminal" for u in bash_updates for b in u.get("content") or [])
    assert "hi" in json.dumps(bash_updates[-1]["content"])


@pytest.mark.parametrize("how", ["cancelled", "stream broke"])
async def test_a_call_announced_mid_stream_is_closed_when_the_step_never_completes(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, how: str
) -> None:
    call = {"id": "call_1", "name": "bash", "arguments": {"command": "echo never"}}
    chunks = chat_chunks(tool_calls=[call])  # role, first fragment (id, name), argument fragments, ...
    server.enqueue(SSE(chunks, stall_after=3) if how == "cancelled" else SSE(chunks, drop_after=3))
    bridge, session_id = await _start(bridges, server, workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "go"))
    await bridge.wait_for(lambda: bool(bridge.call_updates("call_1")))
    if how == "cancelled":
        await bridge.conn.cancel(session_id=session_id)
        assert await asyncio.wait_for(prompt, 2) == "cancelled"
        reason = "Cancelled by the user."
    else:
        with pytest.raises(RequestError):
            await asyncio.wait_for(prompt, 10)
        reason = "ended before this call was complete"
    early, final = bridge.call_updates("call_1")
    assert (early["sessionUpdate"], early["status"]) == ("tool_call", "pending")
    assert final["status"] == "failed"
    assert reason in final["rawOutput"]["error"]["message"]


async def test_deferred_contexts_follow_all_of_a_steps_tool_results_live_and_after_a_reload(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    # OpenAI-compatible APIs answer 400 to a user message between the tool messages of one assistant
    # message. Both calls defer a context; the first asked settles last.
    calls = [
        {
            "id": "call_slow",
            "name": "nap",
            "arguments": {"seconds": 0.3, "label": "slow", "context": "ctx slow"},
        },
        {
            "id": "call_fast",
            "name": "nap",
            "arguments": {"seconds": 0, "label": "fast", "context": "ctx fast"},
        },
    ]
    server.enqueue(chat(tool_calls=calls), chat(text="Both rested."))
    state = str(tmp_path / "state")
    bridge, session_id = await _start(bridges, server, workspace, None, "test-key", "--state-dir", state)
    assert await bridge.prompt(session_id, "nap twice") == "end_turn"
    live = _messages(server, 1)
    assert [m["role"] for m in live] == ["system", "user", "assistant", "tool", "tool", "user", "user"]
    assert [m["tool_call_id"] for m in live[3:5]] == ["call_slow", "call_fast"]
    assert [m["content"] for m in live[5:]] == ["ctx slow", "ctx fast"]
    await bridge.stop()

    # A reloaded session tells the model the same conversation, in the same order.
    server.enqueue(chat(text="Still rested."))
    again, _ = await _start(bridges, server, workspace, None, "test-key", "--state-dir", state)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert await again.prompt(session_id, "and now?") == "end_turn"
    reloaded = _messages(server, 2)
    assert reloaded[: len(live)] == live
    assert [m["role"] for m in reloaded[len(live) :]] == ["assistant", "user"]
