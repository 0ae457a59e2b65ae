"""`additionalDirectories`: every root is a workspace root, for the path policy (a write there needs no
"outside" question), grep's and glob's default search, the cards' titles, and the model's system prompt;
on `session/load` and `session/resume` too, where the request's list is the session's list from then on
(ACP: "the complete resulting additional-root list")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, write_script
from tests.support.fake_openai_server import FakeOpenAIServer, chat

from .conftest import openai_bridge, sent_messages, text_of


def _write(call_id: str, path: Path, content: str = "new\n") -> dict[str, Any]:
    return {"id": call_id, "name": "write", "arguments": {"file_path": str(path), "content": content}}


def _read(path: Path) -> str:
    return path.read_text()


async def _session(bridge: Bridge, cwd: Path, *extra: Path) -> str:
    response = await asyncio.wait_for(
        bridge.conn.new_session(cwd=str(cwd), mcp_servers=[], additional_directories=[str(p) for p in extra]),
        10,
    )
    return str(response.session_id)


async def _advertised(bridge: Bridge) -> None:
    """Initialize, checking the agent says it takes additional directories (else Zed sends only one)."""
    init = await bridge.initialize()
    sessions = init.agent_capabilities.session_capabilities if init.agent_capabilities else None
    assert sessions is not None and sessions.additional_directories is not None


def _asked_why(client: RecordingClient) -> list[str]:
    return [str(r["toolCall"].get("content", "")) for r in client.permission_requests]


async def test_a_write_in_a_second_root_needs_no_outside_question(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    second, outside = tmp_path / "second", tmp_path / "outside"
    second.mkdir()
    outside.mkdir()
    steps = [
        {"tool_calls": [_write("w1", second / "x.txt")]},
        {"tool_calls": [_write("w2", outside / "y.txt")]},
    ]
    client = RecordingClient()
    bridge = await bridges(
        "--mode", "accept_edits", model=write_script(tmp_path / "s.json", [steps]), client=client
    )
    await _advertised(bridge)
    session_id = await _session(bridge, workspace, second)
    assert await bridge.prompt(session_id, "write both") == "end_turn"
    assert _read(second / "x.txt") == "new\n"
    # Only the write outside every root asked, and it said why.
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["w2"]
    assert "outside the workspace" in _asked_why(client)[0]


async def test_in_default_mode_a_write_in_a_second_root_asks_as_inside_the_workspace(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    second = tmp_path / "second"
    second.mkdir()
    client = RecordingClient()
    script = write_script(tmp_path / "s.json", [[{"tool_calls": [_write("w1", second / "x.txt")]}]])
    bridge = await bridges(model=script, client=client)
    await _advertised(bridge)
    session_id = await _session(bridge, workspace, second)
    assert await bridge.prompt(session_id, "write") == "end_turn"
    (why,) = _asked_why(client)
    assert "outside" not in why


async def test_titles_search_and_the_system_prompt_know_every_root(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    second = tmp_path / "library"
    (second / "src").mkdir(parents=True)
    (second / "src" / "lib.py").write_text("# TODO: document\n")
    (workspace / "main.py").write_text("# TODO: test\n")
    calls = [
        {"id": "r1", "name": "read", "arguments": {"file_path": str(second / "src" / "lib.py")}},
        {"id": "g1", "name": "grep", "arguments": {"pattern": "TODO"}},
        {"id": "f1", "name": "glob", "arguments": {"pattern": "**/*.py"}},
    ]
    server.enqueue(chat(tool_calls=calls), chat(text="Found them."))
    bridge = await openai_bridge(bridges, server)
    session_id = await _session(bridge, workspace, second)
    assert await bridge.prompt(session_id, "find the TODOs") == "end_turn"
    # The card announced while the call streamed is refined with its arguments: the title names the
    # file by its root's name, its location stays absolute.
    refined = next(u for u in bridge.call_updates("r1") if "locations" in u)
    assert refined["title"] == "Read library/src/lib.py"
    assert refined["locations"] == [{"path": str(second / "src" / "lib.py"), "line": 1}]
    results = {m["tool_call_id"]: m["content"] for m in sent_messages(server, 1) if m["role"] == "tool"}
    for call_id in ("g1", "f1"):
        assert "main.py" in results[call_id] and str(second / "src" / "lib.py") in results[call_id]
    system = sent_messages(server, 0)[0]
    assert system["role"] == "system" and str(second) in system["content"]


async def test_load_and_resume_take_the_roots_they_are_given(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    second, third = tmp_path / "second", tmp_path / "third"
    second.mkdir()
    third.mkdir()
    state = tmp_path / "state"
    script = write_script(
        tmp_path / "s.json",
        [
            [{"text": "hello"}],
            [{"tool_calls": [_write("w3", third / "t.txt"), _write("w2", second / "s.txt")]}],
        ],
    )
    bridge = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    await bridge.initialize()
    session_id = await _session(bridge, workspace, second)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    (listed,) = (await bridge.conn.list_sessions()).sessions
    assert listed.additional_directories == [str(second)]
    await bridge.stop()

    client = RecordingClient()
    again = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script, client=client)
    await again.initialize()
    await again.conn.resume_session(
        cwd=str(workspace), session_id=session_id, additional_directories=[str(third)]
    )
    assert await again.prompt(session_id, "write") == "end_turn"
    # The third root is one now; the second is not any more.
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["w2"]
    assert _read(third / "t.txt") == "new\n"
    (listed,) = (await again.conn.list_sessions()).sessions
    assert listed.additional_directories == [str(third)]

    loaded = await bridges("--state-dir", str(state), model=script)
    await loaded.initialize()
    await loaded.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert "hello" in text_of(loaded.updates(session_id))
    (listed,) = (await loaded.conn.list_sessions()).sessions
    assert listed.additional_directories == []  # none given: none activated
