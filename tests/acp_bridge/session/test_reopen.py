"""What `session/load`, `session/resume` and `session/fork` share, one path in the bridge: after a restart
the stored conversation is the model's context again and the session's remembered rules come back;
resume and fork send the client none of the conversation (load replays it), only the commands and the
title; an unknown session or another cwd is refused and leaves nothing behind. What only a fork does is
in test_fork.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, selected
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages

CONVERSATION_UPDATES = {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call"}
UNKNOWN = "sess_" + "0" * 32


async def reopen(bridge: Bridge, how: str, session_id: str, cwd: Path) -> tuple[str, dict[str, Any]]:
    """`session/<how>` of `session_id`: the id of the session it opened (a fork's is new), and the answer."""
    result: dict[str, Any] = await bridge.request(
        f"session/{how}", {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    )
    return result.get("sessionId", session_id), result


@pytest.mark.parametrize(("how", "title"), [("resume", "My name is Ada."), ("fork", "Fork: My name is Ada.")])
async def test_after_a_restart_the_context_comes_back_without_being_replayed(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, how: str, title: str
) -> None:
    server.enqueue(chat(text="Nice to meet you, Ada."))
    live = await openai_bridge(bridges, server)
    source = await live.new_session(workspace)
    assert await live.prompt(source, "My name is Ada.") == "end_turn"
    await live.stop()

    server.enqueue(chat(text="Your name is Ada."))
    again = await openai_bridge(bridges, server)
    session_id, answer = await reopen(again, how, source, workspace)
    assert (session_id != source) is (how == "fork")
    assert answer["modes"]["currentModeId"] == "default"
    assert {o["id"] for o in answer["configOptions"]} >= {"mode", "model"}
    info = {"sessionUpdate": "session_info_update", "title": title}
    await again.wait_for(lambda: info in again.updates(session_id))
    assert not [u for u in again.updates(session_id) if u["sessionUpdate"] in CONVERSATION_UPDATES]
    assert any(u["sessionUpdate"] == "available_commands_update" for u in again.updates(session_id))

    assert await again.prompt(session_id, "What is my name?") == "end_turn"
    history = [(m["role"], m["content"]) for m in sent_messages(server, 1) if m["role"] != "system"]
    assert history == [
        ("user", "My name is Ada."),
        ("assistant", "Nice to meet you, Ada."),
        ("user", "What is my name?"),
    ]


@pytest.mark.parametrize("how", ["load", "resume", "fork"])
async def test_a_reopened_session_keeps_its_remembered_rules(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, how: str
) -> None:
    echo = {"id": "call_1", "name": "bash", "arguments": {"command": "echo one"}}
    server.enqueue(chat(tool_calls=[echo]), chat(text="Done."))
    client = RecordingClient(lambda s, c, o: selected("allow_always"))
    live = await openai_bridge(bridges, server, client=client)
    source = await live.new_session(workspace)
    assert await live.prompt(source, "echo") == "end_turn"
    assert len(client.permission_requests) == 1
    await live.stop()

    again_echo = {"id": "call_2", "name": "bash", "arguments": {"command": "echo two"}}
    server.enqueue(chat(tool_calls=[again_echo]), chat(text="Done again."))
    other = RecordingClient(lambda s, c, o: selected("reject_once"))
    again = await openai_bridge(bridges, server, client=other)
    session_id, _ = await reopen(again, how, source, workspace)
    assert await again.prompt(session_id, "echo again") == "end_turn"
    assert other.permission_requests == []  # `echo` commands were allowed for this session
    assert again.call_updates("call_2", session_id)[-1]["status"] == "completed"


@pytest.mark.parametrize("how", ["load", "resume", "fork"])
async def test_reopening_checks_the_session_and_its_cwd(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, how: str
) -> None:
    server.enqueue(chat(text="ok"))
    bridge = await openai_bridge(bridges, server)
    source = await bridge.new_session(workspace)
    assert await bridge.prompt(source, "hi") == "end_turn"
    with pytest.raises(RequestError) as unknown:
        await reopen(bridge, how, UNKNOWN, workspace)
    assert unknown.value.code == -32002
    assert UNKNOWN in str(unknown.value)
    with pytest.raises(RequestError) as wrong_cwd:
        await reopen(bridge, how, source, workspace.parent)
    assert wrong_cwd.value.code == -32602
    assert f"belongs to {workspace}" in str(wrong_cwd.value)
    listed = (await bridge.request("session/list", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [source]  # a refused reopening leaves nothing behind
    server.enqueue(chat(text="still here"))
    assert await bridge.prompt(source, "and now?") == "end_turn"  # nor breaks the session
