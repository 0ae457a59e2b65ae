"""Checkpoints through the bridge as an editor sees it (a real `serve` subprocess over real pipes, real bash
commands, a real MCP server, files in a temporary workspace): what a command or an MCP tool changed shows
on its card as diffs (live and replayed), `/rewind` and `_acpBridge/rewind` put created, changed and
deleted files back, a file the user changed since is never overwritten without consent, one file of one
card can be reverted, a fork at a turn gets the conversation and the files as they were, and nothing is
ever written inside the workspace."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, schema

from tests.acp_bridge.mcp.conftest import workbench_stdio
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, fold_cards, selected, write_script

ALLOW = ("--allow-tool", "bash")


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


def _tree(root: Path) -> dict[str, str]:
    """Every file under `root` (the user's `.git` included) with its content, or its size for `.git`."""
    out: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            rel = str(path.relative_to(root))
            out[rel] = (
                f"{path.stat().st_size}:{path.stat().st_mtime_ns}" if ".git/" in rel else path.read_text()
            )
    return out


def _diffs(card: dict[str, Any]) -> list[dict[str, Any]]:
    return [block for block in card.get("content") or [] if block.get("type") == "diff"]


def _log_events(state: Path, session_id: str) -> list[dict[str, Any]]:
    (log,) = [p for p in state.rglob(f"{session_id}*.jsonl") if "checkpoints" not in p.parts]
    return [json.loads(line) for line in log.read_text().splitlines()]


async def _start(bridges: StartBridge, tmp_path: Path, turns: list[list[dict[str, Any]]],
                 client: RecordingClient | None = None, *args: str) -> Bridge:  # fmt: skip
    script = write_script(tmp_path / "script.json", turns)
    bridge = await bridges(*ALLOW, "--state-dir", str(tmp_path / "state"), *args, model=script, client=client)
    await bridge.initialize(terminal_meta=False)
    return bridge


async def test_sed_and_rm_show_as_diffs_live_and_on_replay_and_the_model_is_told(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    calls = [
        _bash("sed", "sed -i 's/alpha/ALPHA/' a.txt"),
        _bash("rm", "rm b.txt"),
        _bash("new", "printf 'one\\ntwo\\n' > c.txt"),
        _bash("none", "cat a.txt"),
    ]
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": calls}, {"text": "done"}]])
    init = await bridge.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    assert init["agentCapabilities"]["_meta"]["acpBridge"]["checkpoints"] is True
    session_id = await bridge.new_session(workspace)
    answer = await bridge.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}, within=60
    )
    assert answer["_meta"]["acpBridge"]["turn"] == 1

    cards = fold_cards(bridge.updates(session_id))
    (sed,) = _diffs(cards["sed"])
    assert sed["path"] == str(workspace / "a.txt")
    assert (sed["oldText"], sed["newText"]) == ("alpha\n", "ALPHA\n")
    assert {"path": str(workspace / "a.txt"), "line": 1} in cards["sed"]["locations"]
    (deleted,) = _diffs(cards["rm"])
    assert (deleted["path"], deleted["oldText"], deleted["newText"]) == (
        str(workspace / "b.txt"),
        "beta\n",
        "",
    )
    (created,) = _diffs(cards["new"])
    assert (created["path"], created.get("oldText"), created["newText"]) == (
        str(workspace / "c.txt"), None, "one\ntwo\n",
    )  # fmt: skip
    assert _diffs(cards["none"]) == []  # a command that changed nothing shows no diff

    # The model is told which files changed, in the result the log keeps.
    results = {
        e["callId"]: e for e in _log_events(tmp_path / "state", session_id) if e["type"] == "tool/result"
    }
    told = json.dumps(results["sed"]["content"])
    assert "Files changed under the workspace: a.txt (modified)" in told
    assert "b.txt (deleted)" in json.dumps(results["rm"]["content"])
    assert "Files changed" not in json.dumps(results["none"]["content"])

    # session/load draws the same diffs from the log, and the prompt's first chunk names its turn.
    again = await bridges("--state-dir", str(tmp_path / "state"), model=tmp_path / "script.json")
    await again.initialize(terminal_meta=False)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = fold_cards(again.updates(session_id))
    for call_id in ("sed", "rm", "new"):
        assert _diffs(replayed[call_id]) == _diffs(cards[call_id])
    first = next(u for u in again.updates(session_id) if u["sessionUpdate"] == "user_message_chunk")
    assert first["_meta"]["acpBridge"]["turn"] == 1


async def test_rewind_restores_created_changed_and_deleted_files_and_tells_the_model(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    turn1 = [_bash("sed", "sed -i 's/alpha/ALPHA/' a.txt && rm b.txt && echo new > c.txt")]
    turn2 = [_bash("more", "echo more >> a.txt")]
    turns = [
        [{"tool_calls": turn1}, {"text": "one"}],
        [{"tool_calls": turn2}, {"text": "two"}],
        [{"text": "3"}],
    ]
    bridge = await _start(bridges, tmp_path, turns)
    before = _tree(workspace)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first turn", within=60) == "end_turn"
    assert await bridge.prompt(session_id, "second turn", within=60) == "end_turn"
    assert (workspace / "a.txt").read_text() == "ALPHA\nmore\n"

    listing = await bridge.request("_acpBridge/checkpoints", {"sessionId": session_id})
    assert [(t["turn"], t["prompt"], t["files"]) for t in listing["turns"]] == [
        (1, "first turn", 3), (2, "second turn", 1),
    ]  # fmt: skip

    assert await bridge.prompt(session_id, "/rewind", within=60) == "end_turn"  # the last turn
    assert (workspace / "a.txt").read_text() == "ALPHA\n"
    assert await bridge.prompt(session_id, "/rewind 1", within=60) == "end_turn"
    assert _tree(workspace) == before  # changed, deleted and created files all back; nothing added
    said = "".join(
        u["content"]["text"]
        for u in bridge.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert f"- {workspace / 'c.txt'} (removed)" in said
    assert f"- {workspace / 'b.txt'} (recreated)" in said

    # The conversation goes on, and the model was told what was reverted.
    assert await bridge.prompt(session_id, "go on", within=60) == "end_turn"
    notes = [e["text"] for e in _log_events(tmp_path / "state", session_id) if e["type"] == "context"]
    assert any("reverted the files changed in turn 1" in note and "c.txt (removed)" in note for note in notes)

    with pytest.raises(RequestError) as unknown:
        await bridge.request("_acpBridge/rewind", {"sessionId": session_id, "turn": 9})
    assert unknown.value.code == -32602
    with pytest.raises(RequestError) as no_session:
        await bridge.request("_acpBridge/rewind", {"sessionId": "nope", "turn": 1})
    assert no_session.value.code == -32002


async def test_a_file_the_user_changed_since_is_not_overwritten_without_consent(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    answers: list[str] = []

    async def keep(session_id: str, call: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any]:
        answers.append(call["title"])
        return selected("keep")

    calls = [_bash("edit", "sed -i 's/alpha/ALPHA/' a.txt && sed -i 's/beta/BETA/' b.txt")]
    bridge = await _start(
        bridges, tmp_path, [[{"tool_calls": calls}, {"text": "done"}]], RecordingClient(keep)
    )
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    answers.clear()
    (workspace / "a.txt").write_text("my own words\n")  # the user, outside the agent

    result = await bridge.request("_acpBridge/rewind", {"sessionId": session_id, "turn": 1})
    assert result["status"] == "conflict"
    assert [c["path"] for c in result["conflicts"]] == [str(workspace / "a.txt")]
    assert (workspace / "a.txt").read_text() == "my own words\n"
    assert (workspace / "b.txt").read_text() == "BETA\n"  # nothing written on a conflict

    # The slash command asks; "keep" keeps the user's file and puts back the rest.
    assert await bridge.prompt(session_id, "/rewind 1", within=60) == "end_turn"
    assert answers == ["Rewind to before turn 1: overwrite files changed since?"]
    assert (workspace / "a.txt").read_text() == "my own words\n"
    assert (workspace / "b.txt").read_text() == "beta\n"

    forced = await bridge.request("_acpBridge/rewind", {"sessionId": session_id, "turn": 1, "force": True})
    assert forced["status"] == "restored"
    assert forced["restored"] == [{"path": str(workspace / "a.txt"), "action": "restored"}]
    assert (workspace / "a.txt").read_text() == "alpha\n"


async def test_revert_one_file_of_one_card(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    calls = [_bash("both", "sed -i 's/alpha/ALPHA/' a.txt && sed -i 's/beta/BETA/' b.txt")]
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": calls}, {"text": "done"}]])
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    result = await bridge.request(
        "_acpBridge/revertFile",
        {"sessionId": session_id, "toolCallId": "both", "path": str(workspace / "a.txt")},
    )
    assert result == {
        "status": "restored",
        "restored": [{"path": str(workspace / "a.txt"), "action": "restored"}],
        "conflicts": [],
    }
    assert (workspace / "a.txt").read_text() == "alpha\n"
    assert (workspace / "b.txt").read_text() == "BETA\n"  # the card's other file stays
    with pytest.raises(RequestError) as untouched:
        await bridge.request(
            "_acpBridge/revertFile",
            {"sessionId": session_id, "toolCallId": "both", "path": str(workspace / "nothing.txt")},
        )
    assert untouched.value.code == -32602


async def test_fork_at_a_turn_has_the_conversation_and_the_files_before_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    turns: list[list[dict[str, Any]]] = [
        [{"tool_calls": [_bash("one", "sed -i 's/alpha/ALPHA/' a.txt")]}, {"text": "one"}],
        [{"tool_calls": [_bash("two", "sed -i 's/beta/BETA/' b.txt")]}, {"text": "two"}],
    ]
    bridge = await _start(bridges, tmp_path, turns)
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "first", within=60) == "end_turn"
    assert await bridge.prompt(session_id, "second", within=60) == "end_turn"
    fork = await bridge.request(
        "session/fork",
        {
            "sessionId": session_id,
            "cwd": str(workspace),
            "mcpServers": [],
            "_meta": {"acpBridge": {"turn": 2}},
        },
    )
    assert (workspace / "a.txt").read_text() == "ALPHA\n"  # turn 1's change stays
    assert (workspace / "b.txt").read_text() == "beta\n"  # turn 2's is undone
    fork_id = fork["sessionId"]
    listing = await bridge.request("_acpBridge/checkpoints", {"sessionId": fork_id})
    assert [t["turn"] for t in listing["turns"]] == [1]
    prompts = [e["text"] for e in _log_events(tmp_path / "state", fork_id) if e["type"] == "user"]
    assert prompts == ["first"]


async def test_git_repository_and_gitignore_and_the_users_repository_untouched(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    (workspace / ".gitignore").write_text("build/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        git = await asyncio.create_subprocess_exec("git", *args, cwd=workspace, env=env)
        assert await git.wait() == 0
    repo_before = {k: v for k, v in _tree(workspace).items() if k.startswith(".git/")}
    calls = [
        _bash("mk", "mkdir -p build && echo out > build/out.txt && echo src > src.txt && echo x > .envrc")
    ]
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": calls}, {"text": "done"}]])
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    card = fold_cards(bridge.updates(session_id))["mk"]
    # Ignored and protected files are not checkpointed: neither shown nor removed by a rewind.
    assert [d["path"] for d in _diffs(card)] == [str(workspace / "src.txt")]
    assert await bridge.prompt(session_id, "/rewind 1", within=60) == "end_turn"
    assert not (workspace / "src.txt").exists()
    assert (workspace / "build" / "out.txt").exists() and (workspace / ".envrc").exists()
    assert {k: v for k, v in _tree(workspace).items() if k.startswith(".git/")} == repo_before


async def test_an_mcp_tool_that_writes_a_file_shows_its_diff(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    target = workspace / "notes.md"
    calls = [
        {"id": "m1", "name": "mcp__bench__save", "arguments": {"path": str(target), "text": "# Notes\n"}}
    ]
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": calls}, {"text": "done"}]])
    entry = workbench_stdio()
    server = schema.McpServerStdio(
        name=entry["name"], command=entry["command"], args=entry["args"],
        env=[schema.EnvVariable(name=e["name"], value=e["value"]) for e in entry["env"]],
    )  # fmt: skip
    response = await asyncio.wait_for(bridge.conn.new_session(cwd=str(workspace), mcp_servers=[server]), 10)
    session_id = str(response.session_id)
    assert await bridge.prompt(session_id, "save", within=60) == "end_turn"
    (diff,) = _diffs(fold_cards(bridge.updates(session_id))["m1"])
    assert (diff["path"], diff.get("oldText"), diff["newText"]) == (str(target), None, "# Notes\n")


async def test_kill_background_stops_one_command(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "bg", "name": "bash", "arguments": {"command": "sleep 30", "run_in_background": True}}
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": [call]}, {"text": "started"}]])
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    assert await bridge.request("_acpBridge/killBackground", {"sessionId": session_id, "bashId": "bg"}) == {
        "killed": True
    }
    await bridge.wait_for(lambda: fold_cards(bridge.updates(session_id))["bg"]["status"] != "in_progress")
    assert await bridge.request("_acpBridge/killBackground", {"sessionId": session_id, "bashId": "bg"}) == {
        "killed": False
    }


async def test_a_background_commands_changes_show_on_its_card_when_it_ends(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    go = tmp_path / "go"  # outside the workspace: the test's signal is no change of the command's
    command = f"while [ ! -e {go} ]; do sleep 0.05; done; echo late > late.txt"
    call = {"id": "bg", "name": "bash", "arguments": {"command": command, "run_in_background": True}}
    bridge = await _start(bridges, tmp_path, [[{"tool_calls": [call]}, {"text": "started"}]])
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    assert _diffs(fold_cards(bridge.updates(session_id))["bg"]) == []
    go.write_text("")
    await bridge.wait_for(lambda: fold_cards(bridge.updates(session_id))["bg"]["status"] == "completed", 20)
    (diff,) = _diffs(fold_cards(bridge.updates(session_id))["bg"])
    assert (diff["path"], diff.get("oldText"), diff["newText"]) == (
        str(workspace / "late.txt"),
        None,
        "late\n",
    )
    again = await bridges("--state-dir", str(tmp_path / "state"), model=tmp_path / "script.json")
    await again.initialize(terminal_meta=False)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert _diffs(fold_cards(again.updates(session_id))["bg"]) == [diff]
