"""The agent loop end to end: streamed chunks, cards in order, parallel calls, failures as data, step limits,
live terminal output and the session's slash commands."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script


def _nap(call_id: str, seconds: float = 0.0) -> dict[str, Any]:
    return {"id": call_id, "name": "nap", "arguments": {"seconds": seconds, "label": call_id}}


def _kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def _text(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == kind)


async def _run(bridges: StartBridge, tmp_path: Path, workspace: Path, turns: list[list[dict[str, Any]]],
               *args: str, terminal_meta: bool = True) -> tuple[Any, str]:  # fmt: skip
    bridge = await bridges(*args, model=write_script(tmp_path / "script.json", turns))
    await bridge.initialize(terminal_meta=terminal_meta)
    return bridge, await bridge.new_session(workspace)


async def test_a_turn_streams_thought_then_text_then_cards_and_ends_the_turn(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    step = {
        "thought": "Let me think about this.",
        "text": "Napping twice now.",
        "tool_calls": [_nap("a"), _nap("b")],
    }
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[step, {"text": "All done."}]])
    assert await bridge.prompt(session_id, "go") == "end_turn"
    updates = [u for u in bridge.updates(session_id) if u["sessionUpdate"] != "available_commands_update"]
    kinds = _kinds(updates)
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk") < kinds.index("tool_call")
    assert _text(updates, "agent_thought_chunk") == "Let me think about this."
    assert _text(updates) == "Napping twice now.All done."
    starts = [i for i, u in enumerate(updates) if u["sessionUpdate"] == "tool_call"]
    ends = [i for i, u in enumerate(updates) if u.get("status") in ("completed", "failed")]
    assert [updates[i]["toolCallId"] for i in starts] == ["a", "b"]  # announced in the model's order
    assert max(starts) < min(ends)  # the whole batch is visible before any call completes
    assert [updates[i]["status"] for i in ends] == ["completed", "completed"]
    assert updates[starts[0]]["title"] == "Nap a"
    assert updates[starts[0]]["rawInput"] == {"seconds": 0.0, "label": "a"}


async def test_parallel_safe_calls_run_at_once(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    calls = [_nap(f"n{i}", 0.4) for i in range(4)]
    for call in calls:
        call["arguments"]["overlap"] = True
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"tool_calls": calls}, {"text": "ok"}]])
    assert await bridge.prompt(session_id, "go") == "end_turn"
    done = {
        u["toolCallId"]: str(u["content"])
        for u in bridge.updates(session_id)
        if u.get("status") == "completed"
    }
    assert sorted(done) == ["n0", "n1", "n2", "n3"]
    # The naps' bodies count themselves: all four were asleep at once (in a row, the peak would be 1).
    assert any("peak=4" in text for text in done.values()), done


async def test_invalid_arguments_and_unknown_tools_fail_their_cards_and_the_turn_goes_on(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bad_json = {"id": "bad", "name": "nap", "arguments": "{not json"}
    unknown = {"id": "ghost", "name": "teleport", "arguments": {}}
    bridge, session_id = await _run(
        bridges, tmp_path, workspace, [[{"tool_calls": [bad_json, unknown]}, {"text": "recovered"}]]
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    final = {u["toolCallId"]: u for u in bridge.updates(session_id) if u.get("status") == "failed"}
    assert set(final) == {"bad", "ghost"}
    assert "Invalid arguments" in str(final["bad"]["content"])
    assert "Unknown tool" in str(final["ghost"]["content"])
    assert _text(bridge.updates(session_id)).endswith("recovered")


async def test_a_failing_presenter_falls_back_to_a_generic_card(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "e1", "name": "explode", "arguments": {"x": 1}}
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"tool_calls": [call]}, {"text": "ok"}]])
    assert await bridge.prompt(session_id, "go") == "end_turn"
    updates = bridge.call_updates("e1", session_id)
    assert updates[0]["sessionUpdate"] == "tool_call"
    assert "explode" in updates[0]["title"]
    assert updates[-1]["status"] == "completed"


async def test_the_step_limit_ends_the_turn_with_max_turn_requests(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    steps = [{"tool_calls": [_nap(f"s{i}")]} for i in range(3)] + [{"text": "never reached"}]
    bridge, session_id = await _run(bridges, tmp_path, workspace, [steps], "--max-steps", "2")
    assert await bridge.prompt(session_id, "go") == "max_turn_requests"
    announced = [u["toolCallId"] for u in bridge.updates(session_id) if u["sessionUpdate"] == "tool_call"]
    assert announced == ["s0", "s1"]


async def test_an_exhausted_script_says_so_and_ends_the_turn(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"text": "first"}]])
    assert await bridge.prompt(session_id, "one") == "end_turn"
    assert await bridge.prompt(session_id, "two") == "end_turn"
    assert "no more turns" in _text(bridge.updates(session_id))


async def test_live_terminal_output_streams_as_coalesced_deltas(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "t1", "name": "chatter", "arguments": {"chunks": 400, "size": 100}}
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"tool_calls": [call]}, {"text": "ok"}]])
    assert await bridge.prompt(session_id, "go") == "end_turn"
    updates = bridge.call_updates("t1", session_id)
    assert updates[0]["_meta"]["terminal_info"]["terminal_id"] == "t1"
    deltas = [
        u["_meta"]["terminal_output"]["data"]
        for u in updates[1:-1]
        if "terminal_output" in u.get("_meta", {})
    ]
    expected = "".join(str(i % 10) * 100 for i in range(400))
    assert "".join(deltas) == expected  # every byte once, in order: never re-sent
    assert len(deltas) <= 40_000 // 8192 + 2  # 400 chunks coalesced into 8 KiB frames
    assert updates[-1]["status"] == "completed"
    assert "terminal_output" not in updates[-1].get("_meta", {})  # the live deltas already carried it
    assert updates[-1]["_meta"]["terminal_exit"]["terminal_id"] == "t1"


async def test_slow_terminal_output_arrives_within_fifty_milliseconds_per_frame(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "t2", "name": "chatter", "arguments": {"chunks": 20, "size": 10, "pause": 0.01}}
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"tool_calls": [call]}, {"text": "ok"}]])
    assert await bridge.prompt(session_id, "go") == "end_turn"
    deltas = [u for u in bridge.call_updates("t2", session_id) if "terminal_output" in u.get("_meta", {})]
    # 20 chunks over ~0.2 s: coalesced to at most one frame per 50 ms, yet more than one frame (live).
    assert 2 <= len(deltas) <= 8
    assert "".join(d["_meta"]["terminal_output"]["data"] for d in deltas) == "".join(
        str(i % 10) * 10 for i in range(20)
    )


async def test_without_the_terminal_opt_in_output_is_a_bounded_console_block(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "t3", "name": "chatter", "arguments": {"chunks": 30, "size": 1000, "pause": 0.01}}
    bridge, session_id = await _run(
        bridges, tmp_path, workspace, [[{"tool_calls": [call]}, {"text": "ok"}]], terminal_meta=False
    )
    assert await bridge.prompt(session_id, "go") == "end_turn"
    updates = bridge.call_updates("t3", session_id)
    assert "_meta" not in updates[0] or "terminal_info" not in updates[0]["_meta"]
    live = [u for u in updates[1:-1] if "content" in u]
    assert 1 <= len(live) <= 6  # one frame per 100 ms at most
    for update in live:
        text = update["content"][-1]["content"]["text"]
        assert text.startswith("```console")
        assert len(text) < 20_000  # a bounded tail, not the whole output again


async def test_slash_commands_answer_without_the_model(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"text": "model turn"}]])
    assert await bridge.prompt(session_id, "/permissions") == "end_turn"
    assert "Ask before changes" in _text(bridge.updates(session_id))
    assert await bridge.prompt(session_id, "/mode plan") == "end_turn"
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "plan"} in bridge.updates(session_id)
    # The slash commands did not consume the script's turn.
    assert await bridge.prompt(session_id, "hello") == "end_turn"
    assert _text(bridge.updates(session_id)).endswith("model turn")


async def test_set_mode_and_the_mode_config_option_switch_the_mode(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge, session_id = await _run(bridges, tmp_path, workspace, [[{"text": "x"}]])
    await asyncio.wait_for(bridge.conn.set_session_mode(session_id=session_id, mode_id="accept_edits"), 10)
    response = await asyncio.wait_for(
        bridge.conn.set_config_option(config_id="mode", session_id=session_id, value="full_access"), 10
    )
    modes = [
        u["currentModeId"] for u in bridge.updates(session_id) if u["sessionUpdate"] == "current_mode_update"
    ]
    assert modes == ["accept_edits", "full_access"]
    dumped = response.model_dump(mode="json", by_alias=True)
    assert dumped["configOptions"][0]["currentValue"] == "full_access"
