""" "Always" answers that last and can be revoked: with `--remember project` they hold for every session of
the project (its cwd), after a restart too, and are kept in the state directory; `/permissions` lists the
rules numbered, `/forget N` revokes one and `/forget` all of them, in the project's file too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, selected, write_script

from .conftest import text_of


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def _answering(option: str) -> RecordingClient:
    return RecordingClient(lambda s, call, options: selected(option))


def _asked(client: RecordingClient) -> list[str]:
    return [r["toolCall"]["toolCallId"] for r in client.permission_requests]


async def _bridge(
    bridges: StartBridge,
    tmp_path: Path,
    turns: list[list[dict[str, Any]]],
    client: RecordingClient,
    *args: str,
) -> Bridge:
    script = write_script(tmp_path / f"script{len(turns)}.json", turns)
    bridge = await bridges("--state-dir", str(tmp_path / "state"), *args, model=script, client=client)
    await bridge.initialize()
    return bridge


def _rules_files(tmp_path: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((tmp_path / "state" / "rules").glob("*.json"))]


async def test_an_always_answer_lasts_for_the_project_across_sessions_and_restarts(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    other_project = tmp_path / "other"
    other_project.mkdir()
    first = _answering("allow_always")
    bridge = await _bridge(bridges, tmp_path, [[{"tool_calls": [_bash("b1", "echo one")]}]], first,
                           "--remember", "project")  # fmt: skip
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    names = [o["name"] for o in first.permission_requests[0]["options"]]
    assert "Always allow `echo` commands (this project)" in names
    (stored,) = _rules_files(tmp_path)
    assert stored["cwd"] == str(workspace) and len(stored["rules"]) == 1
    await bridge.stop()

    later = _answering("reject_once")
    again = await _bridge(bridges, tmp_path, [[{"tool_calls": [_bash("b2", "echo two")]}]], later,
                          "--remember", "project")  # fmt: skip
    same = await again.new_session(workspace)
    assert await again.prompt(same, "go") == "end_turn"
    elsewhere = await again.new_session(other_project)
    assert await again.prompt(elsewhere, "go") == "end_turn"
    assert _asked(later) == ["b2"]  # asked in the other project only
    assert "Allowed by your session rule: always allow `echo` commands" in str(again.call_updates("b2", same))


async def test_permissions_numbers_the_rules_and_forget_n_revokes_one(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    steps = [
        {"tool_calls": [_bash("b1", "echo one")]},
        {"tool_calls": [_bash("b2", "ls -la")]},
        {"text": "ok"},
    ]
    client = _answering("allow_always")
    bridge = await _bridge(bridges, tmp_path, [steps], client, "--remember", "project")
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert await bridge.prompt(session_id, "/permissions") == "end_turn"
    listing = text_of(bridge.updates(session_id))
    assert "Remembered for this project" in listing
    assert "1. always allow `echo` commands" in listing and "2. always allow `ls` commands" in listing
    assert await bridge.prompt(session_id, "/forget 1") == "end_turn"
    assert "Forgot rule 1: always allow `echo` commands." in text_of(bridge.updates(session_id))
    assert await bridge.prompt(session_id, "/forget 7") == "end_turn"
    assert "There is no rule 7" in text_of(bridge.updates(session_id))
    (stored,) = _rules_files(tmp_path)
    assert [r["scope"]["value"] for r in stored["rules"]] == [["ls"]]
    await bridge.stop()

    later = _answering("reject_once")
    turns = [[{"tool_calls": [_bash("b3", "echo three"), _bash("b4", "ls -l")]}, {"text": "ok"}]]
    again = await _bridge(bridges, tmp_path, turns, later, "--remember", "project")
    fresh = await again.new_session(workspace)
    assert await again.prompt(fresh, "go") == "end_turn"
    assert _asked(later) == ["b3"]  # `echo` was revoked; `ls` still holds
    assert await again.prompt(fresh, "/forget") == "end_turn"
    assert "Forgot 1 remembered rule." in text_of(again.updates(fresh))
    assert _rules_files(tmp_path)[0]["rules"] == []


async def test_by_default_rules_last_for_the_session_and_forget_n_works_there_too(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    steps = [{"tool_calls": [_bash("b1", "echo one")]}, {"tool_calls": [_bash("b2", "ls")]}, {"text": "ok"}]
    client = _answering("allow_always")
    bridge = await _bridge(bridges, tmp_path, [steps], client)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert "Always allow `echo` commands (this session)" in [
        o["name"] for o in client.permission_requests[0]["options"]
    ]
    assert await bridge.prompt(session_id, "/forget 2") == "end_turn"
    assert await bridge.prompt(session_id, "/permissions") == "end_turn"
    listing = text_of(bridge.updates(session_id))
    assert "Remembered for this session" in listing and "1. always allow `echo` commands" in listing
    assert "always allow `ls` commands\n" not in listing.split("Forgot rule 2")[-1]
    assert not (tmp_path / "state" / "rules").exists()


async def test_a_client_lists_and_revokes_rules_through_the_extension_methods(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    steps = [
        {"tool_calls": [_bash("b1", "echo one")]},
        {"tool_calls": [_bash("b2", "ls -la")]},
        {"text": "ok"},
    ]
    bridge = await _bridge(bridges, tmp_path, [steps], _answering("allow_always"), "--remember", "project")
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    listed = await bridge.conn.ext_method("acpBridge/listRules", {"sessionId": session_id})
    assert listed == {
        "mode": "default",
        "rememberedFor": "this project",
        "rules": [
            {"number": 1, "description": "always allow `echo` commands", "allow": True, "tool": "bash",
             "scope": "`echo` commands"},
            {"number": 2, "description": "always allow `ls` commands", "allow": True, "tool": "bash",
             "scope": "`ls` commands"},
        ],
    }  # fmt: skip
    left = await bridge.conn.ext_method("acpBridge/forgetRules", {"sessionId": session_id, "number": 1})
    assert [r["description"] for r in left["rules"]] == ["always allow `ls` commands"]
    assert [r["scope"]["value"] for r in _rules_files(tmp_path)[0]["rules"]] == [["ls"]]
    with pytest.raises(RequestError) as missing:
        await bridge.conn.ext_method("acpBridge/forgetRules", {"sessionId": session_id, "number": 5})
    assert missing.value.code == -32602
    emptied = await bridge.conn.ext_method("acpBridge/forgetRules", {"sessionId": session_id})
    assert emptied["rules"] == [] and _rules_files(tmp_path)[0]["rules"] == []
