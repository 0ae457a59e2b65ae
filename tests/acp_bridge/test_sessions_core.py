"""The session core with no transport at all: a `ClientChannel` fake drives `SessionManager` in process.

This is the seam every face (ACP over stdio, LSP) builds on: updates are plain ACP `update` dicts, the
permission question is one awaitable, and nothing here imports the JSON-RPC layer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.channel import ClientCapabilities, PermissionOutcome
from acp_bridge.errors import InvalidParams, InvalidRequest, ResourceNotFound
from acp_bridge.models import ScriptedBackend, parse_script
from acp_bridge.sessions import CoreConfig, SessionManager

from .bridge_tools import tools


class FakeChannel:
    """Records updates in order; answers permission questions with `answer`."""

    def __init__(self, answer: Callable[[dict[str, Any]], PermissionOutcome] | None = None) -> None:
        self.capabilities = ClientCapabilities(terminal_meta=True)
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.questions: list[dict[str, Any]] = []
        self.answer = answer or (lambda call: PermissionOutcome("selected", "allow_once"))

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        self.updates.append((session_id, update))

    async def drain(self) -> None:
        return None

    def backlog(self) -> int:
        return 0

    async def request_permission(
        self, session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> PermissionOutcome:
        self.questions.append(tool_call)
        await asyncio.sleep(0)
        return self.answer(tool_call)

    async def read_text_file(self, session_id: str, path: str) -> str:
        raise AssertionError("no fs capability was advertised")

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise AssertionError("no fs capability was advertised")

    def statuses(self, call_id: str) -> list[str]:
        return [u["status"] for _, u in self.updates if u.get("toolCallId") == call_id and "status" in u]


def _manager(
    channel: FakeChannel, *steps: dict[str, Any], allow: tuple[str, ...] = ("nap",)
) -> SessionManager:
    from acp_bridge.permissions import PolicyConfig

    backend = ScriptedBackend(parse_script({"turns": [{"steps": list(steps)}]}))
    config = CoreConfig(policy=PolicyConfig(allow_tools=frozenset(allow)))
    return SessionManager(channel, backend, tools(), config)


TEXT = [{"type": "text", "text": "go"}]


async def test_a_prompt_runs_to_end_turn_through_the_channel(tmp_path: Path) -> None:
    channel = FakeChannel()
    nap = {"id": "n1", "name": "nap", "arguments": {}}
    manager = _manager(channel, {"text": "napping", "tool_calls": [nap]}, {"text": "done"})
    session = manager.new_session(str(tmp_path))
    assert await session.prompt(TEXT) == "end_turn"
    kinds = [u["sessionUpdate"] for sid, u in channel.updates if sid == session.id]
    assert kinds[0] == "agent_message_chunk"
    assert "tool_call" in kinds
    assert channel.statuses("n1") == ["in_progress", "completed"]


async def test_an_ask_goes_to_the_channel_and_a_reject_fails_the_card(tmp_path: Path) -> None:
    channel = FakeChannel(lambda call: PermissionOutcome("selected", "reject_once"))
    nap = {"id": "n1", "name": "nap", "arguments": {}}
    manager = _manager(channel, {"tool_calls": [nap]}, {"text": "ok"}, allow=())
    session = manager.new_session(str(tmp_path))
    assert await session.prompt(TEXT) == "end_turn"
    assert [q["toolCallId"] for q in channel.questions] == ["n1"]
    assert channel.statuses("n1") == ["pending", "failed"]


async def test_busy_unknown_and_relative_are_refused_with_typed_errors(tmp_path: Path) -> None:
    channel = FakeChannel()
    manager = _manager(channel, {"tool_calls": [{"id": "n1", "name": "nap", "arguments": {"seconds": 0.3}}]})
    with pytest.raises(InvalidParams):
        manager.new_session("relative")
    with pytest.raises(ResourceNotFound):
        manager.get("sess_nope")
    session = manager.new_session(str(tmp_path))
    first = asyncio.ensure_future(session.prompt(TEXT))
    await asyncio.sleep(0.05)
    with pytest.raises(InvalidRequest):
        await session.prompt(TEXT)
    assert await first == "end_turn"


async def test_cancel_and_shutdown_stop_the_turn(tmp_path: Path) -> None:
    channel = FakeChannel()
    manager = _manager(channel, {"tool_calls": [{"id": "n1", "name": "nap", "arguments": {"seconds": 30}}]})
    session = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(session.prompt(TEXT))
    await asyncio.sleep(0.05)
    manager.cancel(session.id)
    assert await asyncio.wait_for(running, 1) == "cancelled"
    assert channel.statuses("n1")[-1] == "failed"
    again = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(again.prompt(TEXT))
    await asyncio.sleep(0.05)
    await asyncio.wait_for(manager.shutdown(), 2)
    assert running.done()
    with pytest.raises(InvalidRequest):
        manager.new_session(str(tmp_path))


async def test_a_nested_call_is_decided_by_the_policy_too(tmp_path: Path) -> None:
    from registry_core import Agent, ToolExecutionInput, ToolExecutionToken

    channel = FakeChannel(lambda call: PermissionOutcome("selected", "reject_once"))
    manager = _manager(channel, {"text": "x"}, allow=())
    session = manager.new_session(str(tmp_path))
    agent = Agent(id=session.id, cwd=session.cwd, roots=session.roots)
    nested = ToolExecutionInput("inner", "nap", {}, agent=agent, parent=ToolExecutionToken("outer"))
    result = await manager.registry.execute(nested)
    assert result.is_error
    assert "rejected" in (result.error.message if result.error else "")
    assert [q["toolCallId"] for q in channel.questions] == ["inner"]
