"""`session/fork` (unstable in ACP v1): a new session that starts from another's conversation so far; the
two go on apart, and the fork is a session like any other (listed, reloaded after a restart, forked
again). What a fork shares with load and resume (the context back, nothing replayed, the checks) is in
test_reopen.py."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from acp_bridge.session.replay import UNFINISHED_MESSAGE
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import NO_KEYS, openai_bridge, sent_messages


def _history(server: FakeOpenAIServer, index: int) -> list[tuple[str, Any]]:
    return [(m["role"], m.get("content")) for m in sent_messages(server, index) if m["role"] != "system"]


async def test_a_fork_starts_from_the_conversation_and_the_two_go_on_apart(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Nice to meet you, Ada."))
    bridge = await openai_bridge(bridges, server)
    source = await bridge.new_session(workspace)
    assert await bridge.prompt(source, "My name is Ada.") == "end_turn"

    # Through the SDK's client: its `fork_session` reads the answer (what was sent and what was not is
    # test_reopen.py's).
    response = await bridge.conn.fork_session(cwd=str(workspace), session_id=source)
    fork = response.session_id
    assert fork != source and fork.startswith("sess_")
    assert response.modes is not None and response.modes.current_mode_id == "default"

    server.enqueue(chat(text="You are Ada."), chat(text="Hello again."))
    assert await bridge.prompt(fork, "Who am I?") == "end_turn"
    assert await bridge.prompt(source, "Say hello.") == "end_turn"
    ada = [("user", "My name is Ada."), ("assistant", "Nice to meet you, Ada.")]
    assert _history(server, 1) == [*ada, ("user", "Who am I?")]
    assert _history(server, 2) == [*ada, ("user", "Say hello.")]  # the fork's turn is not the source's

    listed = {s["sessionId"]: s.get("title") for s in (await bridge.request("session/list", {}))["sessions"]}
    assert listed == {source: "My name is Ada.", fork: "Fork: My name is Ada."}


async def test_a_fork_is_kept_and_reloads_with_its_own_turns_after_a_restart(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Noted: blue."), chat(text="Noted: green."))
    live = await openai_bridge(bridges, server)
    source = await live.new_session(workspace)
    assert await live.prompt(source, "My colour is blue.") == "end_turn"
    fork = (await live.conn.fork_session(cwd=str(workspace), session_id=source)).session_id
    assert await live.prompt(fork, "No, it is green.") == "end_turn"
    second = (await live.conn.fork_session(cwd=str(workspace), session_id=fork)).session_id
    await live.stop()

    server.enqueue(chat(text="Green."))
    again = await openai_bridge(bridges, server)
    await again.conn.resume_session(cwd=str(workspace), session_id=second)
    assert await again.prompt(second, "What is my colour?") == "end_turn"
    assert _history(server, 2) == [
        ("user", "My colour is blue."),
        ("assistant", "Noted: blue."),
        ("user", "No, it is green."),
        ("assistant", "Noted: green."),
        ("user", "What is my colour?"),
    ]
    listed = {s["sessionId"]: s.get("title") for s in (await again.request("session/list", {}))["sessions"]}
    assert listed[second] == "Fork: Fork: My colour is blue."


async def test_forking_a_session_mid_prompt_copies_the_turn_so_far_and_leaves_the_prompt_running(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    asked, answer = asyncio.Event(), asyncio.Event()

    async def wait_to_allow(session_id: str, call: dict[str, Any], options: Any) -> dict[str, Any]:
        asked.set()
        await answer.wait()
        return selected("allow_once")

    echo = {"id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}
    server.enqueue(chat(tool_calls=[echo]), chat(text="It printed hi."))
    bridge = await openai_bridge(bridges, server, client=RecordingClient(wait_to_allow))
    source = await bridge.new_session(workspace)
    running = asyncio.ensure_future(bridge.prompt(source, "Run echo."))
    await asyncio.wait_for(asked.wait(), 10)

    fork = (await bridge.conn.fork_session(cwd=str(workspace), session_id=source)).session_id
    answer.set()
    assert await running == "end_turn"
    assert bridge.call_updates("call_1", source)[-1]["status"] == "completed"

    server.enqueue(chat(text="It did not run here."))
    assert await bridge.prompt(fork, "Did it run?") == "end_turn"
    history = sent_messages(server, 2)
    roles = [m["role"] for m in history if m["role"] != "system"]
    # The user's prompt, the call the model asked for and its answer (stopped: it never ran in the
    # fork), then the fork's own prompt; nothing of the source's later turn.
    assert roles == ["user", "assistant", "tool", "user"]
    assert history[-1]["content"] == "Did it run?"
    assert history[-2]["content"] == UNFINISHED_MESSAGE
    assert "It printed hi." not in str(history)


async def test_a_session_open_here_with_nothing_logged_yet_can_be_forked(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    bridge = await openai_bridge(bridges, server)
    source = await bridge.new_session(workspace)
    fork = (await bridge.conn.fork_session(cwd=str(workspace), session_id=source)).session_id
    server.enqueue(chat(text="Hi."))
    assert await bridge.prompt(fork, "Hello.") == "end_turn"
    assert _history(server, 0) == [("user", "Hello.")]


async def test_fork_is_offered_only_with_history(bridges: StartBridge, server: FakeOpenAIServer) -> None:
    for args, offered in (((), True), (("--no-history",), False)):
        bridge = await bridges(
            "--base-url", server.base_url, *args, model="openai:fake-model",
            env={**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"},
        )  # fmt: skip
        result = await bridge.initialize_raw({})
        assert ("fork" in result["agentCapabilities"]["sessionCapabilities"]) is offered
        if not offered:
            with pytest.raises(RequestError) as refused:
                await bridge.request("session/fork", {"sessionId": "sess_" + "0" * 32, "cwd": "/"})
            assert refused.value.code == -32601
