"""Approvals end to end: the ask decision becomes session/request_permission, each answer does what it says,
"always" answers are remembered with a visible scope, and modes are enforced (visibly) by the bridge."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import CANCELLED_OUTCOME, RecordingClient, selected, write_script


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def _answering(*option_ids: str) -> RecordingClient:
    """A client answering successive permission requests with these option ids."""
    answers = list(option_ids)

    async def policy(
        session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return selected(answers.pop(0))

    return RecordingClient(policy)


def _statuses(bridge: Any, call_id: str) -> list[str]:
    return [u["status"] for u in bridge.call_updates(call_id) if "status" in u]


def _card_text(update: dict[str, Any]) -> str:
    return str(update.get("content", "")) + str(update.get("_meta", ""))


async def _start(bridges: StartBridge, tmp_path: Path, workspace: Path, steps: list[dict[str, Any]],
                 client: RecordingClient, *args: str) -> tuple[Any, str]:  # fmt: skip
    bridge = await bridges(*args, model=write_script(tmp_path / "script.json", [steps]), client=client)
    await bridge.initialize()
    return bridge, await bridge.new_session(workspace)


async def test_an_allowed_call_goes_pending_then_in_progress_then_completed(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering("allow_once")
    steps = [{"tool_calls": [_bash("b1", "echo hi")]}, {"text": "done"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    (request,) = client.permission_requests
    assert request["toolCall"]["toolCallId"] == "b1"
    assert request["toolCall"]["kind"] == "execute"
    assert "echo hi" in request["toolCall"]["title"]
    kinds = [o["kind"] for o in request["options"]]
    assert kinds == ["allow_once", "allow_always", "reject_once", "reject_always"]
    always = next(o for o in request["options"] if o["kind"] == "allow_always")
    assert "`echo` commands" in always["name"]  # the scope is visible before the user picks it
    assert _statuses(bridge, "b1") == ["pending", "in_progress", "completed"]


async def test_a_rejected_call_fails_with_the_reason_and_never_runs(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    marker = workspace / "ran.txt"
    client = _answering("reject_once")
    steps = [{"tool_calls": [_bash("b1", f"touch {marker}")]}, {"text": "ok, I won't"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert not marker.exists()
    final = bridge.call_updates("b1")[-1]
    assert final["status"] == "failed"
    assert "rejected" in _card_text(final)


async def test_always_allow_is_remembered_for_the_prefix_and_shown_on_the_later_card(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering("allow_always")
    steps = [
        {"tool_calls": [_bash("b1", "echo one")]},
        {"tool_calls": [_bash("b2", "echo two --loud")]},
        {"tool_calls": [_bash("b3", "echo three && echo four")]},
        {"text": "done"},
    ]
    client.policy = _answering("allow_always", "reject_once").policy
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    asked = [r["toolCall"]["toolCallId"] for r in client.permission_requests]
    # b2 shares the `echo` prefix: not asked. b3 is compound, so the prefix rule does not cover it.
    assert asked == ["b1", "b3"]
    assert _statuses(bridge, "b2") == ["in_progress", "completed"]
    assert "always allow `echo` commands" in _card_text(bridge.call_updates("b2")[-1])
    assert bridge.call_updates("b3")[-1]["status"] == "failed"
    assert await bridge.prompt(session_id, "/permissions") == "end_turn"
    listing = "".join(
        u["content"]["text"]
        for u in bridge.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert "always allow `echo` commands" in listing


async def test_always_reject_denies_later_calls_without_asking_and_says_why(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering("reject_always")
    steps = [
        {"tool_calls": [_bash("b1", "rm -f nothing-here")]},
        {"tool_calls": [_bash("b2", "rm -f other-thing")]},
        {"text": "done"},
    ]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["b1"]
    final = bridge.call_updates("b2")[-1]
    assert final["status"] == "failed"
    assert "always reject `rm` commands" in _card_text(final)


async def test_a_cancelled_answer_cancels_the_turn(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = RecordingClient(lambda s, c, o: CANCELLED_OUTCOME)
    steps = [{"tool_calls": [_bash("b1", "echo never")]}, {"text": "unreachable"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "cancelled"
    assert bridge.call_updates("b1")[-1]["status"] == "failed"


async def test_an_unknown_option_denies(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    client = _answering("yes_please")
    steps = [{"tool_calls": [_bash("b1", "echo x")]}, {"text": "done"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    final = bridge.call_updates("b1")[-1]
    assert final["status"] == "failed"
    assert "unknown option" in _card_text(final)


async def test_a_pending_approval_never_blocks_another_session(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    release = asyncio.Event()

    async def slow_user(
        session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> dict[str, Any]:
        await release.wait()
        return selected("allow_once")

    steps = [{"tool_calls": [_bash("b1", "echo waited")]}, {"text": "done"}]
    bridge, first = await _start(bridges, tmp_path, workspace, steps, RecordingClient(slow_user))
    second = await bridge.new_session(workspace)
    waiting = asyncio.ensure_future(bridge.prompt(first, "ask"))
    await bridge.wait_for(lambda: bool(bridge.client.permission_requests))
    # Session two runs the same script while session one waits for its user.
    bridge.client.policy = lambda s, c, o: selected("allow_once")
    assert await bridge.prompt(second, "go") == "end_turn"
    assert not waiting.done()
    release.set()
    assert await waiting == "end_turn"


async def test_plan_mode_denies_changes_visibly_and_reads_still_run(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering()
    steps = [
        {"tool_calls": [_bash("b1", "echo nope"), {"id": "n1", "name": "nap", "arguments": {}}]},
        {"text": "done"},
    ]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client, "--mode", "plan")
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert client.permission_requests == []  # denied by the mode, never asked
    final = bridge.call_updates("b1")[-1]
    assert final["status"] == "failed"
    assert "Plan" in _card_text(final)


async def test_full_access_runs_without_asking_and_notes_why(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering()
    steps = [{"tool_calls": [_bash("b1", "echo free")]}, {"text": "done"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client, "--mode", "full_access")
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert client.permission_requests == []
    assert _statuses(bridge, "b1") == ["in_progress", "completed"]
    assert "Full access" in _card_text(bridge.call_updates("b1")[-1])


async def test_accept_edits_runs_edits_inside_the_workspace_and_asks_outside(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / "app.py").write_text("x = 1\n")
    outside = tmp_path / "outside.txt"
    client = _answering("reject_once")
    edit = {"id": "e1", "name": "edit", "arguments": {"file_path": "app.py", "old_string": "x = 1",
                                                      "new_string": "x = 2"}}  # fmt: skip
    write = {"id": "w1", "name": "write", "arguments": {"file_path": str(outside), "content": "no"}}
    steps = [{"tool_calls": [edit]}, {"tool_calls": [write]}, {"text": "done"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, client, "--mode", "accept_edits")
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert (workspace / "app.py").read_text() == "x = 2\n"
    assert "Accept edits" in _card_text(bridge.call_updates("e1")[-1])
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["w1"]
    assert not outside.exists()


async def test_switching_down_from_full_access_takes_effect_on_the_next_call(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    client = _answering("allow_once")
    steps_one = [{"tool_calls": [_bash("b1", "echo first")]}, {"text": "one"}]
    steps_two = [{"tool_calls": [_bash("b2", "echo second")]}, {"text": "two"}]
    script = write_script(tmp_path / "script.json", [steps_one, steps_two])
    bridge = await bridges("--mode", "full_access", model=script, client=client)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "one") == "end_turn"
    await asyncio.wait_for(bridge.conn.set_session_mode(session_id=session_id, mode_id="default"), 10)
    assert await bridge.prompt(session_id, "two") == "end_turn"
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["b2"]


async def test_a_failed_permission_request_denies(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    async def broken(session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]) -> Any:
        raise RequestError.internal_error({"details": "the dialog crashed"})

    marker = workspace / "ran.txt"
    steps = [{"tool_calls": [_bash("b1", f"touch {marker}")]}, {"text": "done"}]
    bridge, session_id = await _start(bridges, tmp_path, workspace, steps, RecordingClient(broken))
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert not marker.exists()
    final = bridge.call_updates("b1")[-1]
    assert final["status"] == "failed"
    assert "permission request failed" in _card_text(final)
