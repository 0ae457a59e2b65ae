"""`session/resume` after a bridge restart: the stored conversation is the model's context again, and the
client is sent none of it (unlike `session/load`), only the commands and the session's title; the
session's remembered rules come back with it."""

from __future__ import annotations

from pathlib import Path

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages

CONVERSATION_UPDATES = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call"}


async def test_resume_after_a_restart_restores_the_context_without_replaying_it(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Nice to meet you, Ada."))
    live = await openai_bridge(bridges, server)
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "My name is Ada.") == "end_turn"
    await live.stop()

    server.enqueue(chat(text="Your name is Ada."))
    again = await openai_bridge(bridges, server)
    response = await again.conn.resume_session(cwd=str(workspace), session_id=session_id)
    assert response.modes is not None and response.modes.current_mode_id == "default"
    await again.wait_for(lambda: any(u["sessionUpdate"] == "session_info_update" for u in again.updates()))
    after_resume = again.updates(session_id)
    assert not [u for u in after_resume if u["sessionUpdate"] in CONVERSATION_UPDATES]
    assert {"sessionUpdate": "session_info_update", "title": "My name is Ada."} in after_resume

    assert await again.prompt(session_id, "What is my name?") == "end_turn"
    history = [(m["role"], m["content"]) for m in sent_messages(server, 1) if m["role"] != "system"]
    assert history == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


async def test_a_resumed_session_keeps_its_remembered_rules(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    echo = {"id": "call_1", "name": "bash", "arguments": {"command": "echo one"}}
    server.enqueue(chat(tool_calls=[echo]), chat(text="Done."))
    client = RecordingClient(lambda s, c, o: selected("allow_always"))
    live = await openai_bridge(bridges, server, client=client)
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "echo") == "end_turn"
    assert len(client.permission_requests) == 1
    await live.stop()

    again_echo = {"id": "call_2", "name": "bash", "arguments": {"command": "echo two"}}
    server.enqueue(chat(tool_calls=[again_echo]), chat(text="Done again."))
    other = RecordingClient(lambda s, c, o: selected("reject_once"))
    again = await openai_bridge(bridges, server, client=other)
    await again.conn.resume_session(cwd=str(workspace), session_id=session_id)
    assert await again.prompt(session_id, "echo again") == "end_turn"
    assert other.permission_requests == []  # `echo` commands were allowed for this session
    assert again.call_updates("call_2")[-1]["status"] == "completed"


async def test_resume_checks_the_session_and_its_cwd(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="ok"))
    bridge = await openai_bridge(bridges, server)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    with pytest.raises(RequestError) as unknown:
        await bridge.conn.resume_session(cwd=str(workspace), session_id="sess_" + "0" * 32)
    assert unknown.value.code == -32002
    with pytest.raises(RequestError) as wrong_cwd:
        await bridge.conn.resume_session(cwd=str(workspace.parent), session_id=session_id)
    assert wrong_cwd.value.code == -32602
