"""Stored sessions end to end: with --state-dir, session/list finds a conversation after the bridge
restarted and session/load replays it through the same mapping as live (the folded cards are identical),
then the conversation goes on where it stopped, with the permission mode and rules it had; a write whose
change was made before the bridge was killed (`kill -9`) replays as made."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge, live_and_replayed
from tests.support.bridge_harness import RecordingClient, fold_cards, selected, write_script


def _text(updates: list[dict[str, Any]], kind: str) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


async def test_a_stored_session_is_listed_and_replayed_as_it_looked_live(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    (workspace / "app.py").write_text('GREETING = "hello"\n')
    step = {
        "thought": "Reading and fixing.",
        "text": "Let me look.",
        "tool_calls": [
            {"id": "r1", "name": "read", "arguments": {"file_path": "a.txt"}},
            {"id": "n1", "name": "nap", "arguments": {"label": "rested"}},
        ],
    }
    edit = {"id": "e1", "name": "edit", "arguments": {
        "file_path": "app.py", "old_string": '"hello"', "new_string": '"hello, editor"'}}  # fmt: skip
    script = write_script(
        tmp_path / "script.json",
        [[step, {"tool_calls": [edit]}, {"text": "Fixed."}], [{"text": "Second turn."}]],
    )
    live = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    init = await live.initialize()
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.load_session is True
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "Please fix the greeting") == "end_turn"
    live_updates = live.updates(session_id)
    await live.stop()

    again = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    await again.initialize()
    listed = await again.conn.list_sessions(cwd=str(workspace))
    (info,) = listed.sessions
    assert (info.session_id, info.cwd, info.title) == (session_id, str(workspace), "Please fix the greeting")
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = again.updates(session_id)
    assert _text(replayed, "user_message_chunk") == "Please fix the greeting"
    assert _text(replayed, "agent_thought_chunk") == _text(live_updates, "agent_thought_chunk")
    assert _text(replayed, "agent_message_chunk") == _text(live_updates, "agent_message_chunk")
    live_cards, replayed_cards = fold_cards(live_updates), fold_cards(replayed)
    assert set(replayed_cards) == {"r1", "n1", "e1"}
    for call_id, card in live_cards.items():
        assert replayed_cards[call_id] == card, call_id
    # The conversation continues with the script's next turn, in the same session.
    assert await again.prompt(session_id, "and then?") == "end_turn"
    assert _text(again.updates(session_id), "agent_message_chunk").endswith("Second turn.")


async def test_read_cards_of_every_window_shape_replay_as_they_looked_live(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    """A replay builds every read card again from the logged window: a partial one, a whole file whose
    numbers cross a digit boundary, an empty file, a window past the end, a cut long line."""
    state = tmp_path / "state"
    (workspace / "twelve.py").write_text("".join(f"line_{i} = {i}\n" for i in range(1, 13)))
    (workspace / "empty.txt").write_text("")
    (workspace / "long.txt").write_text("x" * 5000 + "\nend\n")
    reads = {
        "whole": {"file_path": "twelve.py"},
        "part": {"file_path": "twelve.py", "offset": 8, "limit": 4},
        "empty": {"file_path": "empty.txt"},
        "past": {"file_path": "twelve.py", "offset": 40},
        "cut": {"file_path": "long.txt"},
    }
    calls = [{"id": call_id, "name": "read", "arguments": args} for call_id, args in reads.items()]
    script = write_script(tmp_path / "script.json", [[{"tool_calls": calls}, {"text": "Read."}]])
    live_cards, replayed_cards = await live_and_replayed(bridges, state, workspace, script, "read them")
    assert set(replayed_cards) == set(reads)
    for call_id, card in live_cards.items():
        assert replayed_cards[call_id] == card, call_id
    whole = json.dumps(live_cards["whole"]["content"], ensure_ascii=False)
    assert " 9 │ line_9 = 9" in whole and "12 │ line_12 = 12" in whole
    assert "Lines 8–11 of 12" in json.dumps(live_cards["part"]["content"], ensure_ascii=False)


async def test_load_checks_the_cwd_and_the_id(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    state = tmp_path / "state"
    bridge = await bridges(
        "--state-dir", str(state), model=write_script(tmp_path / "s.json", [[{"text": "x"}]])
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    with pytest.raises(RequestError) as wrong_cwd:
        await bridge.conn.load_session(cwd=str(tmp_path), session_id=session_id, mcp_servers=[])
    assert wrong_cwd.value.code == -32602
    with pytest.raises(RequestError) as unknown:
        await bridge.conn.load_session(cwd=str(workspace), session_id="sess_" + "0" * 32, mcp_servers=[])
    assert unknown.value.code == -32002
    with pytest.raises(RequestError) as traversal:
        await bridge.conn.load_session(cwd=str(workspace), session_id="../../etc/passwd", mcp_servers=[])
    assert traversal.value.code == -32002
    with pytest.raises(RequestError) as cursor:
        await bridge.conn.list_sessions(cursor="bogus")
    assert cursor.value.code == -32602
    assert (await bridge.conn.list_sessions(cwd=str(tmp_path))).sessions == []


async def test_with_no_history_nothing_is_stored_or_advertised(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges("--no-history", model=write_script(tmp_path / "s.json", [[{"text": "x"}]]))
    init = await bridge.initialize()
    assert init.agent_capabilities is not None
    assert init.agent_capabilities.load_session is False
    await bridge.send_raw(
        json.dumps({"jsonrpc": "2.0", "id": 77, "method": "session/list", "params": {}}).encode() + b"\n"
    )
    await bridge.wait_for(lambda: bool(bridge.responses(77)))
    assert bridge.responses(77)[0]["error"]["code"] == -32601


async def test_a_write_killed_after_its_change_was_made_replays_completed_with_its_diff(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state, marker = tmp_path / "state", tmp_path / "written.marker"
    notes = workspace / "notes.txt"
    notes.write_text("one\ntwo\nthree\n")
    write = {"id": "w1", "name": "write_then_hang",
             "arguments": {"file_path": "notes.txt", "content": "one\nTWO\nthree\n"}}  # fmt: skip
    script = write_script(tmp_path / "script.json", [[{"tool_calls": [write]}, {"text": "never"}]])
    args = ("--state-dir", str(state), "--extra-tools", "tests.support.commit_tools:tools",
            "--allow-tool", "write_then_hang")  # fmt: skip
    env = {"ACP_BRIDGE_TEST_MARKER": str(marker)}
    live = await bridges(*args, model=script, env=env)
    await live.initialize()
    session_id = await live.new_session(workspace)
    prompt = asyncio.ensure_future(live.prompt(session_id, "Capitalise two"))
    # The body returned: the file is written and the tool hangs before its result reaches the bridge.
    await live.wait_for(lambda: marker.exists() or prompt.done())
    assert not prompt.done()
    live.proc.kill()  # SIGKILL: no shutdown code runs
    await live.proc.wait()
    prompt.cancel()
    with contextlib.suppress(BaseException):
        await prompt
    assert notes.read_text() == "one\nTWO\nthree\n"

    again = await bridges(*args, model=script, env=env)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    card = fold_cards(again.updates(session_id))["w1"]
    assert card["status"] == "completed", card
    (diff,) = [block for block in card["content"] if block["type"] == "diff"]
    assert diff["path"] == str(notes)
    assert "two" in diff["oldText"] and "TWO" in diff["newText"]


async def test_load_restores_the_permission_mode_and_remembered_rules(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    echo = {"id": "b1", "name": "bash", "arguments": {"command": "echo first"}}
    later = [
        {"id": "b2", "name": "bash", "arguments": {"command": "echo second"}},
        {"id": "w1", "name": "write", "arguments": {"file_path": "new.txt", "content": "hi\n"}},
    ]
    script = write_script(
        tmp_path / "script.json",
        [[{"tool_calls": [echo]}, {"text": "ok"}], [{"tool_calls": later}, {"text": "done"}]],
    )
    always = RecordingClient(policy=lambda *_: selected("allow_always"))
    live = await bridges("--state-dir", str(state), model=script, client=always)
    await live.initialize()
    session_id = await live.new_session(workspace)
    await asyncio.wait_for(live.conn.set_session_mode(session_id=session_id, mode_id="accept_edits"), 10)
    assert await live.prompt(session_id, "echo something") == "end_turn"
    assert len(always.permission_requests) == 1  # "always allow `echo` commands"
    await live.stop()

    asking = RecordingClient()
    again = await bridges("--state-dir", str(state), model=script, client=asking)
    await again.initialize()
    loaded = await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    assert loaded.modes is not None and loaded.modes.current_mode_id == "accept_edits"
    replayed = again.updates(session_id)
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "accept_edits"} in replayed
    note = _text(replayed, "agent_message_chunk")
    assert "Restored with this session" in note and "always allow `echo` commands" in note
    # Both hold: the rule covers the next echo, accept_edits the write inside the workspace.
    assert await again.prompt(session_id, "more") == "end_turn"
    assert asking.permission_requests == []
    cards = fold_cards(again.updates(session_id))
    assert cards["b2"]["status"] == "completed" and cards["w1"]["status"] == "completed"
    assert (workspace / "new.txt").read_text() == "hi\n"


async def test_a_session_without_a_prompt_is_never_listed_but_resumes_and_loads_after_a_restart(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    # An editor that opens a session on every window reopen must not fill the list with empty ones; a
    # client that makes a session in one process and prompts it from the next (acpx) must find it there.
    state = tmp_path / "state"
    script = write_script(tmp_path / "script.json", [[{"text": "Hi."}], [{"text": "Hi again."}]])
    bridge = await bridges("--state-dir", str(state), model=script)
    await bridge.initialize()
    unprompted = [await bridge.new_session(workspace) for _ in range(3)]
    used = await bridge.new_session(workspace)
    assert await bridge.prompt(used, "hello") == "end_turn"
    listed = await bridge.conn.list_sessions(cwd=str(workspace))
    assert [info.session_id for info in listed.sessions] == [used]
    await bridge.stop()

    later = await bridges("--state-dir", str(state), model=script)
    await later.initialize()
    resumed = await later.request("session/resume", {"sessionId": unprompted[0], "cwd": str(workspace)})
    assert "modes" in resumed
    assert await later.prompt(unprompted[0], "first words") == "end_turn"
    loaded = await later.request("session/load", {"sessionId": unprompted[1], "cwd": str(workspace),
                                                   "mcpServers": []})  # fmt: skip
    assert "modes" in loaded
    listed = await later.conn.list_sessions(cwd=str(workspace))
    assert sorted(info.session_id for info in listed.sessions) == sorted([used, unprompted[0]])


async def test_a_bridge_killed_mid_turn_leaves_a_whole_log_with_everything_it_told_and_changed(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    # The log is written in groups (one write per loop iteration, before the frames about it): a SIGKILL
    # at any moment must leave whole lines, a result for every card the client saw completed, and a
    # commit for every file changed on disk; and the log must load.
    state = tmp_path / "state"
    steps, reads = 40, 8
    for i in range(reads):
        (workspace / f"r{i}.txt").write_text(f"read me {i}\n")
    for k in range(steps):
        (workspace / f"w{k}.txt").write_text("old\n")
    turn = [
        {"tool_calls": [*({"id": f"s{k}r{i}", "name": "read", "arguments": {"file_path": f"r{i}.txt"}}
                          for i in range(reads)),
                        {"id": f"s{k}w", "name": "write",
                         "arguments": {"file_path": f"w{k}.txt", "content": f"new {k}\n"}}]}
        for k in range(steps)
    ]  # fmt: skip
    script = write_script(tmp_path / "script.json", [[*turn, {"text": "never reached"}]])
    live = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    prompt = asyncio.ensure_future(live.prompt(session_id, "Read and write", within=120))

    def completed() -> set[str]:
        return {u["toolCallId"] for u in live.updates(session_id) if u.get("status") == "completed"}

    await live.wait_for(lambda: len(completed()) >= 100 or prompt.done(), within=60)
    assert not prompt.done()
    live.proc.kill()  # SIGKILL, mid-turn: no shutdown code runs
    await live.proc.wait()
    prompt.cancel()
    with contextlib.suppress(BaseException):
        await prompt
    seen = completed()

    raw = (state / "sessions" / f"{session_id}.jsonl").read_bytes()
    *whole, last = raw.split(b"\n")
    events = [json.loads(line) for line in whole]  # every line whole...
    # ...and the log ends with a line feed, unless the kill landed inside a write() (Linux ends a write at
    # a page boundary for a fatal signal): that line is skipped on load, and held nothing the client saw.
    assert last == b"" or not any(call_id.encode() in last for call_id in seen)
    results = {e["callId"] for e in events if e["type"] == "tool/result"}
    commits = {e["callId"] for e in events if e["type"] == "tool/commit"}
    assert seen <= results, sorted(seen - results)[:5]
    changed = {f"s{k}w" for k in range(steps) if (workspace / f"w{k}.txt").read_text() != "old\n"}
    assert changed and changed <= commits, sorted(changed - commits)[:5]
    assert len(seen) < steps * (reads + 1)  # it really was killed mid-turn

    again = await bridges("--state-dir", str(state), model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = {u["toolCallId"] for u in again.updates(session_id) if u.get("status") == "completed"}
    assert seen <= replayed
