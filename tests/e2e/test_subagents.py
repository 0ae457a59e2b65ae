"""Subagents (`task`) through the whole bridge: a real bridge subprocess, the fake OpenAI-compatible server
on 127.0.0.1 (what each model request carried is read back from it), real files and real processes.

What is proved: the child's model gets its own system prompt and the task's prompt, never the parent's
conversation, and only the tools it was given; the parent gets the child's answer as the task's result;
the child's calls are cards nested under the task card (`_meta.parentToolCallId`); a child's call asks
for approval like any, and a cancel of the parent stops the child's command (psutil); the child's tokens
count in the prompt's `usage`; two tasks of one step run at the same time (both children's model
requests in flight together); `subagent_update` goes only to a client that advertises `subagents`; a
loaded session replays the task card and its nested cards as they were shown live.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, fold_cards, selected
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, Hold, chat, chat_chunks

NO_KEYS = {"ACP_BRIDGE_API_KEY": "test-key", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
PARENT_PROMPT = "Please find out what a.txt says, through a subagent."


async def _start(
    bridges: StartBridge,
    server: FakeOpenAIServer,
    workspace: Path,
    *args: str,
    client: RecordingClient | None = None,
    capabilities: dict[str, Any] | None = None,
) -> tuple[Bridge, str]:
    """A bridge on the fake server; `capabilities`: raw client capabilities (else the harness's own)."""
    bridge = await bridges("--base-url", server.base_url, *args, model="openai:fake-model", client=client,
                           env=NO_KEYS)  # fmt: skip
    if capabilities is None:
        await bridge.initialize()
    else:
        await bridge.initialize_raw(capabilities)
    return bridge, await bridge.new_session(workspace)


def _task(call_id: str, description: str, prompt: str, tools: list[str] | None = None) -> dict[str, Any]:
    arguments: dict[str, Any] = {"description": description, "prompt": prompt}
    if tools is not None:
        arguments["tools"] = tools
    return {"id": call_id, "name": "task", "arguments": arguments}


def _body(server: FakeOpenAIServer, index: int) -> dict[str, Any]:
    body: dict[str, Any] = server.requests[index].json()
    return body


def _contents(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"])


def _tool_message(body: dict[str, Any], call_id: str) -> str:
    (message,) = [m for m in body["messages"] if m["role"] == "tool" and m["tool_call_id"] == call_id]
    return str(message["content"])


async def test_a_task_runs_a_child_with_its_own_context_and_the_parent_gets_its_answer(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    child_prompt = "Read a.txt in the working directory and say in one line what it contains."
    delegate = _task("t1", "Read a.txt", child_prompt, ["read", "grep"])
    read = {"id": "c1", "name": "read", "arguments": {"file_path": "a.txt"}}
    server.enqueue(
        chat(text="I'll delegate this.", tool_calls=[delegate],
             usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}),
        chat(text="Reading it.", tool_calls=[read],
             usage={"prompt_tokens": 40, "completion_tokens": 5, "total_tokens": 45}),
        chat(text="a.txt contains one line: alpha.",
             usage={"prompt_tokens": 60, "completion_tokens": 8, "total_tokens": 68}),
        chat(text="The subagent says a.txt contains alpha.",
             usage={"prompt_tokens": 130, "completion_tokens": 12, "total_tokens": 142}),
    )  # fmt: skip
    prices = ("--context-window", "100000", "--price-in", "1", "--price-out", "2")
    bridge, session_id = await _start(bridges, server, workspace, *prices)
    response = await asyncio.wait_for(
        bridge.conn.prompt(session_id=session_id, prompt=[{"type": "text", "text": PARENT_PROMPT}]), 30
    )
    assert response.stop_reason == "end_turn"
    assert len(server.requests) == 4

    parent, child_first, child_second, parent_after = (_body(server, i) for i in range(4))
    # The child's own context: the subagent's system prompt, then the task's prompt alone.
    system, first = child_first["messages"][0], child_first["messages"][1]
    assert system["role"] == "system" and "# You are a subagent" in system["content"]
    assert "# You are a subagent" not in parent["messages"][0]["content"]
    assert (first["role"], first["content"]) == ("user", child_prompt)
    assert len(child_first["messages"]) == 2
    assert PARENT_PROMPT not in _contents(child_first) and PARENT_PROMPT not in _contents(child_second)
    assert "I'll delegate this." not in _contents(child_second)
    # Only the tools it was given; the parent has `task` and the rest.
    assert {t["function"]["name"] for t in child_first["tools"]} == {"read", "grep"}
    assert {"task", "read", "bash"} <= {t["function"]["name"] for t in parent["tools"]}
    # The child's read result reached the child, under the child model's own call id.
    assert "alpha" in _tool_message(child_second, "c1")
    # The parent got the child's final answer as the task's result, with what it took.
    result = _tool_message(parent_after, "t1")
    assert result.startswith("a.txt contains one line: alpha.")
    assert "2 steps and made 1 tool call" in result
    assert "Reading it." not in result  # only the final answer

    # Cards: the child's read is nested under the task card; the task card shows the answer.
    updates = bridge.updates(session_id)
    cards = fold_cards(updates)
    nested = cards["t1:task:1"]
    assert nested["_meta"]["parentToolCallId"] == "t1"
    assert nested["status"] == "completed"
    assert all(
        u["_meta"]["parentToolCallId"] == "t1" for u in bridge.call_updates("t1:task:1") if "_meta" in u
    )
    task = cards["t1"]
    assert task["title"] == "Read a.txt"
    assert task["status"] == "completed"
    assert task["kind"] == "think"
    shown = "\n".join(c["content"]["text"] for c in task["content"] if c["type"] == "content")
    assert child_prompt in shown and "a.txt contains one line: alpha." in shown
    assert "1 tool call:" in shown and "✓" in shown  # the nested calls listed on the task card
    # While it ran, the task card said which step the child was at (not kept once it answered).
    live = [json.dumps(u.get("content")) for u in bridge.call_updates("t1")[:-1]]
    assert any("Step 1" in text for text in live)
    assert "Step 1" not in shown
    # No child text reached the parent's messages (the child's answer is the task's result only).
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "I'll delegate this.The subagent says a.txt contains alpha."

    # The child's tokens count in the prompt's usage: every request of the turn, the child's two too.
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (330, 35)
    assert response.usage.total_tokens == 365
    # And toward the session's cost, though not its context gauge (the child's context is its own).
    gauges = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert [u["used"] for u in gauges] == [110, 110, 110, 142]
    assert gauges[-1]["cost"]["amount"] == pytest.approx((330 * 1 + 35 * 2) / 1_000_000)


async def test_unknown_or_forbidden_tools_fail_the_task_with_the_list_it_could_have(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(
        chat(tool_calls=[_task("t1", "Nest", "Start another subagent.", ["read", "task"]),
                         _task("t2", "Typo", "Read.", ["raed"])]),
        chat(text="Understood."),
    )  # fmt: skip
    bridge, session_id = await _start(bridges, server, workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    assert len(server.requests) == 2  # no child model request was made
    after = _body(server, 1)
    nesting, typo = _tool_message(after, "t1"), _tool_message(after, "t2")
    assert "cannot be given `task`" in nesting and "cannot start subagents" in nesting
    assert "`raed`" in typo and "no such tool" in typo and "read" in typo
    cards = fold_cards(bridge.updates(session_id))
    assert cards["t1"]["status"] == cards["t2"]["status"] == "failed"


async def test_a_childs_call_asks_the_user_and_a_cancel_stops_the_child_and_its_command(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    sleeper = {"id": "c1", "name": "bash", "arguments": {"command": "sleep 37"}}
    server.enqueue(
        chat(tool_calls=[_task("t1", "Wait a while", "Run sleep 37.")]),
        chat(tool_calls=[sleeper]),
        chat(text="never asked for"),
    )
    asked: list[dict[str, Any]] = []

    def allow(session: str, tool_call: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any]:
        asked.append({"session": session, "toolCall": tool_call})
        return selected("allow_once")

    # A client that advertises subagents: the child's end (cancelled) is told before the prompt answers.
    bridge, session_id = await _start(
        bridges, server, workspace, client=RecordingClient(allow), capabilities={"subagents": {}}
    )
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "wait"))
    await bridge.wait_for(lambda: bridge.running("sleep"), within=20)
    # The child's command was asked about like any: in this session, as its nested card.
    (question,) = asked
    assert question["session"] == session_id
    assert question["toolCall"]["toolCallId"] == "t1:task:1"
    assert question["toolCall"]["_meta"]["parentToolCallId"] == "t1"
    texts = [c["content"]["text"] for c in question["toolCall"].get("content", []) if c["type"] == "content"]
    assert any("Asked by the subagent of `Wait a while`" in text for text in texts)

    tree = bridge.running("sleep")
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(prompt, 10) == "cancelled"
    with contextlib.suppress(TimeoutError):
        await bridge.wait_for(lambda: not any(_running(p) for p in tree), within=5)
    assert not any(_running(p) for p in tree), "the child's command outlived the cancel"
    cards = fold_cards(bridge.updates(session_id))
    assert cards["t1"]["status"] == "failed"
    assert cards["t1:task:1"]["status"] == "failed"
    assert len(server.requests) == 2  # the child asked for no step after the cancel
    frames = [json.loads(line) for line in bridge.raw_lines]
    ended = [i for i, f in enumerate(frames) if f.get("method") == "session/update"
             and f["params"]["update"].get("state") is not None]  # fmt: skip
    answered = [i for i, f in enumerate(frames) if f.get("result", {}).get("stopReason") == "cancelled"]
    assert len(ended) == 1 and len(answered) == 1 and ended[0] < answered[0]
    terminal = frames[ended[0]]["params"]
    assert (terminal["sessionId"], terminal["update"]["sessionUpdate"]) == (session_id, "subagent_update")
    assert terminal["update"]["state"] == "cancelled"


def _running(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


async def test_two_tasks_of_one_step_run_at_the_same_time(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    prompts = ["Count the words in a.txt.", "Count the words in b.txt."]
    first, second = Hold(), Hold()
    server.enqueue(
        chat(tool_calls=[_task("t1", "Count a", prompts[0]), _task("t2", "Count b", prompts[1])]),
        # Each child's answer holds after its first chunk: both held at once means both were in flight.
        SSE(chat_chunks(text="Answer from the first held response."), hold=first, hold_after=1),
        SSE(chat_chunks(text="Answer from the second held response."), hold=second, hold_after=1),
        chat(text="Both counted."),
    )
    bridge, session_id = await _start(bridges, server, workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "count both", within=60))
    try:
        await first.wait_reached(within=30)
        await second.wait_reached(within=30)
    finally:
        first.release()
        second.release()
    assert await prompt == "end_turn"
    children = [_body(server, 1), _body(server, 2)]
    assert sorted(body["messages"][1]["content"] for body in children) == sorted(prompts)
    after = _body(server, 3)
    answers = {_tool_message(after, "t1").split("\n")[0], _tool_message(after, "t2").split("\n")[0]}
    assert answers == {"Answer from the first held response.", "Answer from the second held response."}


def _script(path: Path) -> Path:
    """A scripted parent turn with one task, whose child (keyed by the task's description) reads a file."""
    script = {
        "turns": [{"steps": [
            {"text": "Delegating.", "tool_calls": [_task("t1", "Look at a.txt", "Read a.txt and report.")]},
            {"text": "Done."},
        ]}],
        "subagents": {"Look at a.txt": {"steps": [
            {"thought": "Reading.", "text": "Let me read it.",
             "tool_calls": [{"id": "r1", "name": "read", "arguments": {"file_path": "a.txt"}}]},
            {"text": "It says alpha."},
        ]}},
    }  # fmt: skip
    path.write_text(json.dumps(script))
    return path


async def test_subagent_update_goes_only_to_a_client_that_advertises_subagents(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    script = _script(tmp_path / "script.json")
    aware = await bridges(model=script)
    await aware.initialize_raw({"subagents": {}, "_meta": {"terminal_output": True}})
    session_id = await aware.new_session(workspace)
    assert await aware.prompt(session_id, "go") == "end_turn"
    child_id = f"{session_id}/task/t1"
    frames = [json.loads(line) for line in aware.raw_lines]
    updates = [
        (f["params"]["sessionId"], f["params"]["update"])
        for f in frames
        if f.get("method") == "session/update"
    ]
    kinds = [(sid == child_id, u["sessionUpdate"], u.get("state")) for sid, u in updates
             if sid == child_id or u["sessionUpdate"] == "subagent_update"]  # fmt: skip
    # Announced on the parent's stream first, then the child's own stream, then its terminal state.
    assert kinds[0] == (False, "subagent_update", None)
    assert kinds[-1] == (False, "subagent_update", "completed")
    assert {kind for own, kind, _ in kinds[1:-1]} == {"agent_thought_chunk", "agent_message_chunk"}
    assert all(own for own, _, _ in kinds[1:-1])
    announce = next(u for _, u in updates if u["sessionUpdate"] == "subagent_update")
    assert announce["subagentSessionId"] == child_id
    assert (announce["name"], announce["task"]) == ("Look at a.txt", "Read a.txt and report.")
    assert announce["_meta"]["acpBridge"]["toolCallId"] == "t1"
    child_text = "".join(u["content"]["text"] for sid, u in updates
                         if sid == child_id and u["sessionUpdate"] == "agent_message_chunk")  # fmt: skip
    assert child_text == "Let me read it.It says alpha."
    # The child's calls stay cards nested in the parent's stream.
    assert fold_cards(aware.updates(session_id))["t1:task:1"]["_meta"]["parentToolCallId"] == "t1"

    plain = await bridges(model=script)
    await plain.initialize()
    plain_session = await plain.new_session(workspace)
    assert await plain.prompt(plain_session, "go") == "end_turn"
    sent = [json.loads(line) for line in plain.raw_lines]
    kinds_sent = {f["params"]["update"]["sessionUpdate"] for f in sent if f.get("method") == "session/update"}
    assert "subagent_update" not in kinds_sent
    assert {f["params"]["sessionId"] for f in sent if f.get("method") == "session/update"} == {plain_session}
    assert fold_cards(plain.updates(plain_session))["t1"]["status"] == "completed"


async def test_a_loaded_session_replays_the_task_and_its_nested_cards(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    script = _script(tmp_path / "script.json")
    live = await bridges("--state-dir", str(state), model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, "go") == "end_turn"
    live_cards = fold_cards(live.updates(session_id))
    await live.stop()

    again = await bridges("--state-dir", str(state), model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = fold_cards(again.updates(session_id))
    assert set(replayed) == set(live_cards) == {"t1", "t1:task:1"}
    for call_id, card in live_cards.items():
        assert replayed[call_id] == card, call_id
    assert replayed["t1:task:1"]["_meta"]["parentToolCallId"] == "t1"
    assert "It says alpha." in json.dumps(replayed["t1"]["content"])
    assert not any(u["sessionUpdate"] == "subagent_update" for u in again.updates(session_id))

    # A client that shows subagents gets the child announced and ended as live, under the same id.
    aware = await bridges("--state-dir", str(state), model=script)
    await aware.initialize_raw({"subagents": {}})
    await aware.request("session/load", {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []})
    children = [u for u in aware.updates(session_id) if u["sessionUpdate"] == "subagent_update"]
    child_id = f"{session_id}/task/t1"
    assert [(u["subagentSessionId"], u.get("name"), u.get("state")) for u in children] == [
        (child_id, "Look at a.txt", None), (child_id, None, "completed"),
    ]  # fmt: skip
