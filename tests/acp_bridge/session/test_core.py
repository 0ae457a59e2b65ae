"""The session core with no transport at all: a `ClientChannel` fake drives `SessionManager` in process.

This is the seam every face (ACP over stdio, LSP) builds on: updates are plain ACP `update` dicts, the
permission question is one awaitable, and nothing here imports the JSON-RPC layer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.client.channel import PermissionOutcome
from acp_bridge.common.errors import InvalidParams, InvalidRequest, ResourceNotFound
from acp_bridge.models import (
    ScriptedBackend,
    StepComplete,
    StepRequest,
    parse_script,
)
from acp_bridge.session import prompt_slot
from acp_bridge.session.manager import CoreConfig, SessionManager
from registry_core import ToolDefinition
from tests.support.bridge_tools import Starts, tools
from tests.support.fake_channel import FakeChannel
from tests.support.steps_backend import StepsBackend


def _manager(
    channel: FakeChannel,
    *steps: dict[str, Any],
    allow: tuple[str, ...] = ("nap",),
    starts: Starts | None = None,
) -> SessionManager:
    from acp_bridge.permissions.policy import PolicyConfig

    backend = ScriptedBackend(parse_script({"turns": [{"steps": list(steps)}]}))
    config = CoreConfig(policy=PolicyConfig(allow_tools=frozenset(allow)))
    return SessionManager(channel, backend, tools(starts), config)


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
    channel = FakeChannel(lambda call, options: PermissionOutcome("selected", "reject_once"))
    nap = {"id": "n1", "name": "nap", "arguments": {}}
    manager = _manager(channel, {"tool_calls": [nap]}, {"text": "ok"}, allow=())
    session = manager.new_session(str(tmp_path))
    assert await session.prompt(TEXT) == "end_turn"
    assert [q["toolCallId"] for q, _ in channel.questions] == ["n1"]
    assert channel.statuses("n1") == ["pending", "failed"]


async def test_busy_unknown_and_relative_are_refused_with_typed_errors(tmp_path: Path) -> None:
    channel, starts = FakeChannel(), Starts()
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 0.3}}
    manager = _manager(channel, {"tool_calls": [nap]}, starts=starts)
    with pytest.raises(InvalidParams):
        manager.new_session("relative")
    with pytest.raises(ResourceNotFound):
        manager.get("sess_nope")
    session = manager.new_session(str(tmp_path))
    first = asyncio.ensure_future(session.prompt(TEXT))
    assert await starts.next() == "n1"
    with pytest.raises(InvalidRequest):
        await session.prompt(TEXT)
    assert await first == "end_turn"


async def test_cancel_and_shutdown_stop_the_turn(tmp_path: Path) -> None:
    channel, starts = FakeChannel(), Starts()
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 30}}
    manager = _manager(channel, {"tool_calls": [nap]}, starts=starts)
    session = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(session.prompt(TEXT))
    assert await starts.next() == "n1"
    manager.cancel(session.id)
    assert await asyncio.wait_for(running, 1) == "cancelled"
    assert channel.statuses("n1")[-1] == "failed"
    again = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(again.prompt(TEXT))
    assert await starts.next() == "n1"
    await asyncio.wait_for(manager.shutdown(), 2)
    assert running.done()
    with pytest.raises(InvalidRequest):
        manager.new_session(str(tmp_path))


async def test_a_nested_call_is_decided_by_the_policy_too(tmp_path: Path) -> None:
    from registry_core import Agent, ToolExecutionInput, ToolExecutionToken

    channel = FakeChannel(lambda call, options: PermissionOutcome("selected", "reject_once"))
    manager = _manager(channel, {"text": "x"}, allow=())
    session = manager.new_session(str(tmp_path))
    agent = Agent(id=session.id, cwd=session.cwd, roots=session.roots)
    nested = ToolExecutionInput("inner", "nap", {}, agent=agent, parent=ToolExecutionToken("outer"))
    result = await manager.registry.execute(nested)
    assert result.is_error
    assert "rejected" in (result.error.message if result.error else "")
    assert [q["toolCallId"] for q, _ in channel.questions] == ["inner"]


class ListRecorder:
    """The `Recorder` of a store, in memory: each session's header and events."""

    def __init__(self) -> None:
        self.logs: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
        self.logs[session_id] = ({"cwd": cwd, "roots": list(roots)}, [])

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        self.logs[session_id][1].append(json.loads(json.dumps(event)))

    def end(self, session_id: str) -> None:
        return None


def _turns_manager(
    channel: FakeChannel,
    turns: list[list[dict[str, Any]]],
    *,
    allow: tuple[str, ...] = ("nap", "stubborn"),
    recorder: ListRecorder | None = None,
    extra: Sequence[ToolDefinition] = (),
    backend: Any = None,
    starts: Starts | None = None,
) -> SessionManager:
    from acp_bridge.permissions.policy import PolicyConfig

    if backend is None:
        backend = ScriptedBackend(parse_script({"turns": [{"steps": steps} for steps in turns]}))
    config = CoreConfig(policy=PolicyConfig(allow_tools=frozenset(allow)))
    return SessionManager(channel, backend, [*tools(starts), *extra], config, recorder=recorder)


async def _other_tasks_ended(within: float) -> None:
    """Wait (at most `within` seconds) until every task of the loop but the test's own has ended: a turn
    abandoned by its prompt, and its tools, run on as tasks of their own."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        _, running = await asyncio.wait(others, timeout=within)
        assert not running, f"still running after {within} s: {running}"


def _completions(channel: FakeChannel, call_id: str, after: int = 0) -> list[dict[str, Any]]:
    return [
        u
        for _, u in channel.updates[after:]
        if u.get("toolCallId") == call_id and u.get("status") in ("completed", "failed")
    ]


async def test_an_abandoned_turns_late_result_never_completes_the_next_turns_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_slot, "CANCEL_GRACE", 0.1)
    channel = FakeChannel()
    stuck = {"id": "x1", "name": "stubborn", "arguments": {"seconds": 0.5}}
    fresh = {"id": "x1", "name": "nap", "arguments": {"seconds": 1.0, "label": "fresh"}}
    starts = Starts()
    manager = _turns_manager(channel, [], backend=StepsBackend([[[stuck]], [[fresh]]]), starts=starts)
    session = manager.new_session(str(tmp_path))
    first = asyncio.ensure_future(session.prompt(TEXT))
    assert await starts.next() == "x1"
    session.cancel()
    assert await asyncio.wait_for(first, 1) == "cancelled"  # abandoned: `stubborn` still runs
    mark = len(channel.updates)
    assert await asyncio.wait_for(session.prompt(TEXT), 3) == "end_turn"
    # `stubborn` settled (reusing the id x1) while the second turn's `nap` x1 ran: its card waited for
    # its own result.
    (done,) = _completions(channel, "x1", mark)
    assert done["status"] == "completed"
    assert "fresh" in json.dumps(done)
    assert "finally" not in json.dumps(done)


async def test_a_call_closed_unfinished_is_logged_so_a_reload_shows_and_tells_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_slot, "CANCEL_GRACE", 0.1)
    channel = FakeChannel()
    recorder = ListRecorder()
    stuck = {"id": "x1", "name": "stubborn", "arguments": {"seconds": 0.4}}
    starts = Starts()
    manager = _turns_manager(channel, [[{"tool_calls": [stuck]}]], recorder=recorder, starts=starts)
    session = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(session.prompt(TEXT))
    assert await starts.next() == "x1"
    session.cancel()
    assert await asyncio.wait_for(running, 1) == "cancelled"
    (live,) = _completions(channel, "x1")
    await _other_tasks_ended(within=3)  # the abandoned turn ended: nothing more is logged for it
    assert [e["type"] for e in recorder.logs[session.id][1]] == ["user", "assistant", "tool/result"]

    replayed = FakeChannel()
    other = _turns_manager(replayed, [[{"text": "x"}]])
    loaded = other.reopen("load", session.id, session.cwd, recorder.logs[session.id])
    (shown,) = _completions(replayed, "x1")
    assert shown == live
    assert loaded.history == session.history


async def test_a_nested_call_never_moves_or_borrows_the_card_of_a_top_level_call_with_its_id(
    tmp_path: Path,
) -> None:
    from registry_core import ToolExecutionInput, ToolExecutionToken

    channel = FakeChannel(lambda call, options: PermissionOutcome("selected", "reject_once"))
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 0.3, "label": "outer"}}
    starts = Starts()
    steps = [{"tool_calls": [nap]}, {"text": "ok"}]
    manager = _turns_manager(channel, [steps], allow=("nap",), starts=starts)
    session = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(session.prompt(TEXT))
    assert await starts.next() == "n1"
    turn = session.turn
    assert turn is not None
    # A composite tool's nested call, asking (stubborn is not allowed), under the outer call's id.
    nested = ToolExecutionInput(
        "n1",
        "stubborn",
        {"seconds": 0},
        signal=turn.controller.signal,
        agent=session.agent,
        parent=ToolExecutionToken("outer"),
    )
    assert (await manager.registry.execute(nested)).is_error
    assert await asyncio.wait_for(running, 2) == "end_turn"
    assert channel.statuses("n1") == ["in_progress", "completed"]
    ((question, _),) = channel.questions
    assert question["title"] == "stubborn"  # its own card, not the outer call's "Nap outer"
    assert "note" not in json.dumps(_completions(channel, "n1"))


async def test_the_gate_reuses_the_announced_decision_unless_a_call_changed_the_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from acp_bridge.permissions.policy import SessionPermissions
    from presenters import build_tools

    decided: list[str] = []
    original = SessionPermissions.decide

    def counting(self: SessionPermissions, tool: str, args: Any) -> Any:
        decided.append(tool)
        return original(self, tool, args)

    monkeypatch.setattr(SessionPermissions, "decide", counting)
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret\n")
    (workspace / "a.txt").write_text("a\n")
    naps = [{"id": f"n{i}", "name": "nap", "arguments": {"label": str(i)}} for i in range(3)]
    link = {"id": "b1", "name": "bash", "arguments": {"command": f"ln -s {outside} link"}}
    read = {"id": "r1", "name": "read", "arguments": {"file_path": "link/secret.txt"}}
    channel = FakeChannel()
    manager = _turns_manager(
        channel,
        [[{"tool_calls": naps}, {"tool_calls": [link, read]}, {"text": "done"}]],
        allow=("nap", "bash"),
        extra=build_tools(),
    )
    session = manager.new_session(str(workspace))
    assert await asyncio.wait_for(session.prompt(TEXT), 10) == "end_turn"
    # Three naps: decided once each, when their cards were announced.
    assert decided[:3] == ["nap", "nap", "nap"]
    assert decided.count("nap") == 3
    # `bash` made `link` point outside the workspace after `read` was announced (inside, then): the
    # gate decided again, and asked.
    assert decided.count("read") == 2
    assert [q["toolCallId"] for q, _ in channel.questions] == ["r1"]
    assert channel.statuses("r1") == ["in_progress", "pending", "in_progress", "completed"]


class StuckClient(FakeChannel):
    """A client that stops reading: `drain` never returns. `chunk` is set when the first update came."""

    def __init__(self) -> None:
        super().__init__()
        self.chunk = asyncio.Event()

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        super().send_update(session_id, update)
        self.chunk.set()

    async def drain(self) -> None:
        await asyncio.Event().wait()


class UnclosableModel:
    """Streams one chunk, and when asked to close, waits forever (a server that never answers the close);
    `close_interrupted` records that the close was given up."""

    name = "unclosable"

    def __init__(self) -> None:
        self.close_interrupted = False

    async def stream_step(self, request: StepRequest) -> AsyncIterator[Any]:
        from acp_bridge.models import TextDelta

        try:
            yield TextDelta("thinking about it")
            yield StepComplete()
        finally:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.close_interrupted = True
                raise

    async def aclose(self) -> None:
        return None


async def test_a_model_stream_that_will_not_close_still_lets_a_cancelled_turn_stop_by_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from acp_bridge.turn import model_step

    monkeypatch.setattr(model_step, "STREAM_CLOSE_DEADLINE_S", 0.1)
    channel = StuckClient()
    model = UnclosableModel()
    manager = SessionManager(channel, model, tools(), CoreConfig())
    session = manager.new_session(str(tmp_path))
    running = asyncio.ensure_future(session.prompt(TEXT))
    await asyncio.wait_for(channel.chunk.wait(), 2)  # the turn now waits on the client's drain
    session.cancel()
    assert await asyncio.wait_for(running, 2) == "cancelled"
    assert model.close_interrupted
    # It stopped on its own: not abandoned after `CANCEL_GRACE`, so the session's history is its own.
    assert not [r for r in caplog.records if "abandoning" in r.getMessage()]
    assert not session.busy
