"""Code Mode through the whole bridge (a real subprocess over real pipes, a real Deno sandbox): each call a
program makes gets its own card under the program's, asks like a top-level call, raises in the program
when rejected, stops with the program on cancel, and replays after `session/load` exactly as it looked."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, fold_cards, selected, write_script
from tests.support.fake_openai_server import FakeOpenAIServer, chat

pytestmark = pytest.mark.slow

READ_TWO_EDIT_ONE = """\
const a = await read({ file_path: "a.txt" });
const b = await read({ file_path: "b.txt" });
await edit({ file_path: "b.txt", old_string: "beta", new_string: `${b.lines[0]} after ${a.lines[0]}` });
return "edited";"""


def _program(call_id: str, code: str, description: str = "Merge a into b") -> dict[str, Any]:
    return {"id": call_id, "name": "run_code", "arguments": {"code": code, "description": description}}


def _script(tmp_path: Path, *calls: dict[str, Any]) -> Path:
    return write_script(tmp_path / "script.json", [[{"tool_calls": list(calls)}, {"text": "Done."}]])


def _texts(card: dict[str, Any]) -> list[str]:
    return [block["content"]["text"] for block in card.get("content") or [] if block.get("type") == "content"]


async def test_each_call_of_a_program_gets_its_own_card_under_the_program_s(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=_script(tmp_path, _program("p1", READ_TWO_EDIT_ONE)))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "merge them") == "end_turn"
    assert (workspace / "b.txt").read_text() == "beta after alpha\n"
    updates = bridge.updates(session_id)
    started = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert [u["toolCallId"] for u in started] == ["p1", "p1:code:1", "p1:code:2", "p1:code:3"]
    assert "parentToolCallId" not in started[0]["_meta"]
    assert all(u["_meta"]["parentToolCallId"] == "p1" for u in started[1:])
    # Every update of a sub-call's card that carries `_meta` keeps naming its program.
    for update in updates:
        if str(update.get("toolCallId", "")).startswith("p1:code:") and "_meta" in update:
            assert update["_meta"]["parentToolCallId"] == "p1", update
    cards = fold_cards(updates)
    program = cards["p1"]
    assert program["status"] == "completed"
    assert program["kind"] == "execute"
    texts = _texts(program)
    assert texts[0] == f"```typescript\n{READ_TWO_EDIT_ONE}\n```"
    assert texts[1] == "3 tool calls:\n1. ✓ Read a.txt\n2. ✓ Read b.txt\n3. ✓ Edit b.txt"
    assert texts[2].startswith('The program returned:\n"edited"')
    assert {loc["path"] for loc in program["locations"]} == {
        str(workspace / "a.txt"),
        str(workspace / "b.txt"),
    }
    # A read shows its file, an edit its diff, exactly as a top-level call would.
    assert cards["p1:code:1"]["kind"] == "read" and cards["p1:code:1"]["status"] == "completed"
    assert cards["p1:code:1"]["locations"] == [{"path": str(workspace / "a.txt"), "line": 1}]
    edit = cards["p1:code:3"]
    assert edit["kind"] == "edit" and edit["status"] == "completed"
    (diff,) = [block for block in edit["content"] if block["type"] == "diff"]
    assert (diff["oldText"], diff["newText"]) == ("beta\n", "beta after alpha\n")
    # The edit asked, as an ordinary permission request for that sub-call, naming its program.
    (request,) = bridge.client.permission_requests
    tool_call = request["toolCall"]
    assert tool_call["toolCallId"] == "p1:code:3"
    assert tool_call["_meta"]["parentToolCallId"] == "p1"
    assert tool_call["content"][0]["content"]["text"] == "Asked by the program of `Merge a into b` (call p1)."
    assert any(block["type"] == "diff" for block in tool_call["content"])
    assert bridge.schema_errors == []


async def test_the_program_card_lists_its_calls_live_with_their_status(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    code = 'await bash({ command: "echo started; sleep 1", description: "Wait a second" }); return 1;'
    bridge = await bridges("--allow-tool", "bash", model=_script(tmp_path, _program("p1", code, "Wait")))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "wait"))

    def running_line() -> bool:
        return any(
            "1. ▸ echo started; sleep 1 (running)" in text
            for u in bridge.call_updates("p1", session_id)
            if "status" not in u
            for text in _texts(u)
        )

    await bridge.wait_for(running_line, within=15)
    assert not prompt.done()
    # The sub-call is a terminal card of its own, streaming its output while the program waits.
    await bridge.wait_for(
        lambda: any(
            (u.get("_meta") or {}).get("terminal_output", {}).get("data", "").startswith("started")
            for u in bridge.call_updates("p1:code:1", session_id)
        )
    )
    (sub_start,) = [
        u for u in bridge.call_updates("p1:code:1", session_id) if u["sessionUpdate"] == "tool_call"
    ]
    assert sub_start["_meta"]["terminal_info"]["terminal_id"] == "p1:code:1"
    assert sub_start["_meta"]["parentToolCallId"] == "p1"
    assert await prompt == "end_turn"
    assert (
        _texts(fold_cards(bridge.updates(session_id))["p1"])[1] == "1 tool call:\n1. ✓ echo started; sleep 1"
    )


async def test_a_rejected_sub_call_raises_in_the_program_which_decides(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    code = """\
try {
  await edit({ file_path: "a.txt", old_string: "alpha", new_string: "omega" });
  return "edited";
} catch (e) {
  return `not edited: ${e.message}`;
}"""
    client = RecordingClient(lambda s, c, o: selected("reject_once"))
    bridge = await bridges(model=_script(tmp_path, _program("p1", code, "Try an edit")), client=client)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "try") == "end_turn"
    assert (workspace / "a.txt").read_text() == "alpha\n"
    cards = fold_cards(bridge.updates(session_id))
    assert cards["p1:code:1"]["status"] == "failed"
    assert cards["p1"]["status"] == "completed"
    assert "1. ✗ Edit a.txt (failed)" in _texts(cards["p1"])[1]
    assert (
        'The program returned:\n"not edited: The user rejected this `edit` call."' in _texts(cards["p1"])[2]
    )


async def test_cancel_stops_the_program_and_every_running_sub_call(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    code = 'await bash({ command: "sleep 30" }); return "slept";'
    bridge = await bridges("--allow-tool", "bash", model=_script(tmp_path, _program("p1", code, "Sleep")))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "sleep", within=30))
    await bridge.wait_for(lambda: bridge.running("sleep"), within=15)
    assert bridge.running("deno")
    started = time.monotonic()
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 5) == "cancelled"
    assert time.monotonic() - started < 2
    cards = fold_cards(bridge.updates(session_id))
    assert cards["p1"]["status"] == "failed"
    assert cards["p1:code:1"]["status"] == "failed"
    assert "1. ✗ sleep 30 (failed)" in _texts(cards["p1"])[1]
    await bridge.wait_for(lambda: not bridge.running(), within=5)


async def test_session_load_replays_a_program_and_its_sub_calls_exactly_as_live(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    missing = 'try { await read({ file_path: "nope.txt" }) } catch (e) { console.log(e.message) }\n'
    script = _script(tmp_path, _program("p1", missing + READ_TWO_EDIT_ONE))
    live = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "merge them") == "end_turn"
    live_cards = fold_cards(live.updates(session_id))
    await live.stop()
    assert "Allowed: " in str(live_cards["p1:code:4"]["_meta"])  # the edit's card shows what allowed it

    again = await bridges("--state-dir", str(state), "--mode", "accept_edits", model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed_cards = fold_cards(again.updates(session_id))
    assert set(replayed_cards) == {"p1", "p1:code:1", "p1:code:2", "p1:code:3", "p1:code:4"}
    for call_id, card in live_cards.items():
        assert replayed_cards[call_id] == card, call_id
    assert again.schema_errors == []


async def test_code_mode_only_leaves_the_model_run_code_alone(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    read = {"id": "r1", "name": "read", "arguments": {"file_path": "a.txt"}}
    program = _program("p1", 'return (await read({ file_path: "a.txt" })).lines[0];', "Read a")
    bridge = await bridges("--code-mode", "only", model=_script(tmp_path, read, program))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "read") == "end_turn"
    cards = fold_cards(bridge.updates(session_id))
    assert cards["r1"]["status"] == "failed"
    assert "reachable only from a program" in str(cards["r1"]["rawOutput"])
    assert cards["p1"]["status"] == "completed"
    assert cards["p1:code:1"]["status"] == "completed"


@pytest.mark.parametrize(("mode", "expected"), [("only", ["run_code"]), ("off", None), ("on", None)])
async def test_the_code_mode_decides_which_tools_the_model_is_given(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path, mode: str, expected: list[str] | None
) -> None:
    server.enqueue(chat(text="ok"))
    bridge = await bridges(
        "--base-url", server.base_url, "--code-mode", mode, model="openai:fake-model",
        env={"ACP_BRIDGE_API_KEY": "test-key", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""},
    )  # fmt: skip
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    tools = {t["function"]["name"]: t["function"] for t in server.requests[0].json()["tools"]}
    if expected is not None:
        assert list(tools) == expected
    elif mode == "off":
        assert "run_code" not in tools and "read" in tools
    else:
        assert "run_code" in tools and "read" in tools
    if "run_code" in tools:
        description = tools["run_code"]["description"]
        assert "declare function read(args: {" in description
        assert "declare function run_code" not in description
