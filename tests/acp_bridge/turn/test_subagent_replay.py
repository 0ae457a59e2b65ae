"""`ReplayedSubagents`: on `session/load`, each `task` call the log shows is announced and ended with the
state its result says; an orphan (no result: the bridge stopped while it ran) ends `disconnected`, after
everything else; nothing for another tool, or for a client that does not show subagents."""

from __future__ import annotations

from typing import Any

from acp_bridge.turn.subagent import ReplayedSubagents
from registry_core import CANCELLED, TOOL_FAILED, TextBlock, ToolFailureInfo, ToolResult

OK = ToolResult((TextBlock("answer"),), False)


def _failed(code: str) -> ToolResult:
    return ToolResult((TextBlock("no"),), True, ToolFailureInfo("no", code))


def _task(description: str) -> dict[str, Any]:
    return {"description": description, "prompt": f"Do {description}."}


def test_children_are_announced_and_ended_as_their_results_say_and_orphans_disconnected() -> None:
    sent: list[Any] = []
    replayed = ReplayedSubagents(sent.append, "s", lambda: True)
    for call_id in ("a", "b", "c", "d"):
        replayed.asked(call_id, "task", _task(call_id))
    replayed.asked("r", "read", {"file_path": "x"})  # not a subagent
    replayed.settled("a", OK)
    replayed.settled("b", _failed(CANCELLED))
    replayed.settled("c", _failed(TOOL_FAILED))
    replayed.settled("r", OK)
    replayed.close()
    assert [(u["subagentSessionId"], u.get("name"), u.get("state")) for u in sent] == [
        ("s/task/a", "a", None), ("s/task/b", "b", None), ("s/task/c", "c", None), ("s/task/d", "d", None),
        ("s/task/a", None, "completed"), ("s/task/b", None, "cancelled"), ("s/task/c", None, "failed"),
        ("s/task/d", None, "disconnected"),
    ]  # fmt: skip
    assert sent[0]["task"] == "Do a."


def test_a_client_without_subagents_gets_nothing() -> None:
    sent: list[Any] = []
    replayed = ReplayedSubagents(sent.append, "s", lambda: False)
    replayed.asked("a", "task", _task("a"))
    replayed.settled("a", OK)
    replayed.asked("b", "task", _task("b"))
    replayed.close()
    assert sent == []
