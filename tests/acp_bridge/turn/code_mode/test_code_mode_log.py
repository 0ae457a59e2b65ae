"""A program's sub-calls in the session log, in process: each is logged as a `tool/code-dispatch` record
before its card completes, none reaches the model's history, and a replay draws their cards under the
program's from the log alone (passing over what it cannot place)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_bridge import mapping
from acp_bridge.history.session_log import CodeDispatched, decode
from acp_bridge.models import ScriptedBackend, ToolResultMessage, parse_script
from acp_bridge.session.manager import SessionManager
from acp_bridge.session.replay import replay
from presenters import build_tools
from registry_core import CodeDispatchEvent, TextBlock, ToolExecution, snapshot
from registry_core.cancellation import linked
from tests.support.fake_channel import FakeChannel

PROGRAM = 'const a = await read({ file_path: "a.txt" }); return a.lines[0];'


def _channel(journal: list[tuple[str, Any]]) -> FakeChannel:
    """Records updates, in one sequence with the log records (`journal`)."""
    return FakeChannel(on_update=lambda session_id, update: journal.append(("update", update)))


@dataclass
class Recorder:
    journal: list[tuple[str, Any]]

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
        return None

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        self.journal.append(("log", dict(event)))

    def end(self, session_id: str) -> None:
        return None


async def test_each_sub_call_is_logged_before_its_card_completes_and_never_told_to_the_model(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    script = parse_script(
        {"turns": [{"steps": [
            {"tool_calls": [{"id": "p1", "name": "run_code", "arguments": {"code": PROGRAM}}]},
            {"text": "done"},
        ]}]}
    )  # fmt: skip
    journal: list[tuple[str, Any]] = []
    manager = SessionManager(
        _channel(journal), ScriptedBackend(script), build_tools(), recorder=Recorder(journal)
    )
    session = manager.new_session(str(tmp_path))
    assert await session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    await manager.shutdown()

    logged = [entry["type"] for kind, entry in journal if kind == "log"]
    assert logged == ["user", "assistant", "tool/code-dispatch", "tool/result", "assistant"]
    record = next(entry for kind, entry in journal if kind == "log" and entry["type"] == "tool/code-dispatch")
    assert (record["parentCallId"], record["callId"], record["name"]) == ("p1", "p1:code:1", "read")
    assert record["arguments"] == {"file_path": "a.txt"}
    assert decode(record) == CodeDispatched(CodeDispatchEvent.from_json(record))
    # Logged first, then the card completed.
    order = [
        "log" if kind == "log" and entry["type"] == "tool/code-dispatch" else "card"
        for kind, entry in journal
        if (kind == "log" and entry["type"] == "tool/code-dispatch")
        or (
            kind == "update" and entry.get("toolCallId") == "p1:code:1" and entry.get("status") == "completed"
        )
    ]
    assert order == ["log", "card"]
    answered = [m.call_id for m in session.history if isinstance(m, ToolResultMessage)]
    assert answered == ["p1"]


@dataclass
class Host:
    id: str = "s1"
    scope: Any = None
    wire: mapping.WireContext = field(default_factory=lambda: mapping.WireContext(cwd="/ws"))
    history: list[Any] = field(default_factory=list)
    updates: list[dict[str, Any]] = field(default_factory=list)

    def send(self, update: dict[str, Any]) -> None:
        self.updates.append(update)


def _dispatch(parent: str, call_id: str) -> dict[str, Any]:
    event = CodeDispatchEvent(
        parent, call_id, "read", snapshot({"file_path": "a.txt"}), (TextBlock("alpha"),), False
    )
    return CodeDispatched(event, note="a note").to_json()


def test_replay_draws_sub_calls_under_their_program_and_passes_over_the_rest() -> None:
    registry_host = SessionManager(FakeChannel(), ScriptedBackend(parse_script({"turns": []})), build_tools())
    host = Host(scope=registry_host.registry.root)
    unreadable = _dispatch("p1", "p1:code:9")
    del unreadable["parentCallId"]
    events = [
        {"type": "user", "text": "go"},
        {"type": "assistant", "text": "", "thought": "", "toolCalls": [
            {"id": "p1", "name": "run_code", "arguments": {"code": PROGRAM}}]},
        _dispatch("p7", "p7:code:1"),  # a program no step asked for
        unreadable,
        _dispatch("p1", "p1:code:1"),
        {"type": "tool/result", "callId": "p1", "name": "run_code", "content": [
            {"type": "text", "text": "The program returned:\n\"alpha\""}], "isError": False},
    ]  # fmt: skip
    replay(host, events)
    cards = {u["toolCallId"] for u in host.updates if u["sessionUpdate"] == "tool_call"}
    assert cards == {"p1", "p1:code:1"}
    sub = [u for u in host.updates if u.get("toolCallId") == "p1:code:1"]
    assert [u["sessionUpdate"] for u in sub] == ["tool_call", "tool_call_update"]
    assert all(u["_meta"]["parentToolCallId"] == "p1" for u in sub)
    assert sub[-1]["_meta"]["acpBridge"]["note"] == "a note"
    final = [u for u in host.updates if u.get("toolCallId") == "p1" and u.get("status") == "completed"]
    texts = [b["content"]["text"] for b in final[-1]["content"]]
    assert "1 tool call:\n1. ✓ Read a.txt" in texts
    assert [m.call_id for m in host.history if isinstance(m, ToolResultMessage)] == ["p1"]


async def test_sub_calls_get_their_cards_when_a_wrapper_gives_the_program_a_signal_of_its_own(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    script = parse_script(
        {"turns": [{"steps": [
            {"tool_calls": [{"id": "p1", "name": "run_code", "arguments": {"code": PROGRAM}}]},
            {"text": "done"},
        ]}]}
    )  # fmt: skip
    journal: list[tuple[str, Any]] = []
    manager = SessionManager(_channel(journal), ScriptedBackend(script), build_tools())

    async def own_signal(execution: ToolExecution, call_next: Any) -> Any:
        signal = linked(execution.signal)
        try:
            return await call_next(execution.with_signal(signal))
        finally:
            signal.close()

    manager.registry.add_execute_wrapper(own_signal, outermost=True)
    session = manager.new_session(str(tmp_path))
    assert await session.prompt([{"type": "text", "text": "go"}]) == "end_turn"
    await manager.shutdown()
    sub = [u for kind, u in journal if kind == "update" and u.get("toolCallId") == "p1:code:1"]
    assert [u.get("status") for u in sub] == ["in_progress", "completed"]
    assert all(u["_meta"]["parentToolCallId"] == "p1" for u in sub)
