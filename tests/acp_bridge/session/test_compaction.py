"""Compaction end to end: a real bridge subprocess, over pipes, against the real local OpenAI-compatible
server (what the model is asked is read back from it) or a scripted model (offline). At the `--compact-at`
threshold and on `/compact [focus]` the older conversation is replaced by the model's summary, the call in
flight and its result are kept, the client sees `compaction_update` (with `session.compaction`) or an agent
message, a failed compaction is a `notice` (with `session.notices`) and the turn goes on, a cancelled one
changes nothing, and `session/load` rebuilds the compacted context and replays the compaction where it
happened. The pure parts (what is kept) are checked on synthetic histories."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.history.session_log import Compacted
from acp_bridge.models import AssistantMessage, ToolCallRequest, ToolResultMessage, UserMessage
from acp_bridge.session.compaction import SUMMARY_HEADING, apply, safe_boundaries, split_point
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import REPO, Bridge
from tests.support.fake_openai_server import SSE, FakeOpenAIServer, HTTPError, chat, chat_chunks

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}
NAP = {"id": "call_1", "name": "nap", "arguments": {"seconds": 0, "label": "rested"}}
COMPACTION_CLIENT = {"session": {"compaction": {}}, "_meta": {"terminal_output": True}}


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(models=[{"id": "fake-model", "context_length": 1_000}]) as running:
        yield running


async def _session(
    bridges: StartBridge,
    server: FakeOpenAIServer,
    workspace: Path,
    capabilities: dict[str, Any] | None = None,
    *args: str,
) -> tuple[Bridge, str]:
    env = {**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"}
    bridge = await bridges("--base-url", server.base_url, *args, model="openai:fake-model", env=env)
    await bridge.initialize_raw(capabilities if capabilities is not None else {})
    return bridge, await bridge.new_session(workspace)


def _kinds(bridge: Bridge, session_id: str) -> list[str]:
    return [u["sessionUpdate"] for u in bridge.updates(session_id)]


def _of(bridge: Bridge, session_id: str, kind: str) -> list[dict[str, Any]]:
    return [u for u in bridge.updates(session_id) if u["sessionUpdate"] == kind]


def _roles(request: Any) -> list[str]:
    return [m["role"] for m in request.json()["messages"]]


async def test_at_the_threshold_the_older_conversation_is_summarized_and_the_call_in_flight_kept(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(
        chat(tool_calls=[NAP], usage=_usage(700, 150)),  # 850 of 1,000: over 80%
        chat(text="The user asked for a nap.", usage=_usage(200, 10)),  # the summary
        chat(text="Rested.", usage=_usage(300, 20)),
    )
    bridge, session_id = await _session(bridges, server, workspace, COMPACTION_CLIENT)
    assert await bridge.prompt(session_id, "please nap") == "end_turn"

    summary_request = server.requests[1].json()
    assert "tools" not in summary_request
    assert _roles(server.requests[1]) == ["system", "user"]
    assert "## User\nplease nap" in summary_request["messages"][1]["content"]
    after = server.requests[2].json()["messages"]
    assert [m["role"] for m in after] == ["system", "user", "assistant", "tool"]
    assert after[1]["content"] == f"{SUMMARY_HEADING}\n\nThe user asked for a nap."
    assert after[2]["tool_calls"][0]["id"] == "call_1"  # the step's call and its result stay whole
    assert (after[3]["tool_call_id"], after[3]["content"]) == ("call_1", "rested")

    kinds = [k for k in _kinds(bridge, session_id) if k in ("usage_update", "compaction_update")]
    assert kinds == ["usage_update", "compaction_update", "compaction_update", "usage_update"]
    started, done = _of(bridge, session_id, "compaction_update")
    assert (started["status"], done["status"]) == ("in_progress", "completed")
    assert started["compactionId"] == done["compactionId"]
    chunks = _of(bridge, session_id, "compaction_summary_chunk")
    assert "".join(c["content"]["text"] for c in chunks) == "The user asked for a nap."
    assert done["summary"] == [{"type": "text", "text": "The user asked for a nap."}]
    assert done["_meta"]["acpBridge"] == {"trigger": "threshold", "summarizedMessages": 1, "keptMessages": 2}
    assert [u["used"] for u in _of(bridge, session_id, "usage_update")] == [850, 320]


async def test_compact_command_with_a_focus_keeps_the_last_turn_and_tells_a_plain_client_in_a_message(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(chat(text="Alpha."), chat(text="Beta."), chat(text="We did alpha."), chat(text="Gamma."))
    bridge, session_id = await _session(bridges, server, workspace)
    assert await bridge.prompt(session_id, "first") == "end_turn"
    assert await bridge.prompt(session_id, "second") == "end_turn"
    assert await bridge.prompt(session_id, "/compact the test failures") == "end_turn"
    assert await bridge.prompt(session_id, "third") == "end_turn"

    summary_prompt = server.requests[2].json()["messages"][1]["content"]
    assert "focus on: the test failures" in summary_prompt
    assert "## User\nfirst" in summary_prompt and "second" not in summary_prompt
    messages = server.requests[3].json()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == f"{SUMMARY_HEADING}\n\nWe did alpha.\n\nsecond"
    assert "compaction_update" not in _kinds(bridge, session_id)
    text = "".join(u["content"]["text"] for u in _of(bridge, session_id, "agent_message_chunk"))
    assert "Context compacted on request: 2 earlier messages replaced by a summary" in text


async def test_a_failed_threshold_compaction_is_a_notice_and_the_turn_goes_on(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(
        chat(tool_calls=[NAP], usage=_usage(800, 100)),
        HTTPError(400, "summaries are not allowed here"),
        chat(text="Rested anyway.", usage=_usage(950, 10)),
    )
    bridge, session_id = await _session(bridges, server, workspace, {"session": {"notices": {}}})
    assert await bridge.prompt(session_id, "please nap") == "end_turn"
    (notice,) = _of(bridge, session_id, "notice")
    assert notice["severity"] == "warning"
    assert "summaries are not allowed here" in notice["description"]
    # Not retried within the prompt, and the next step had the full context.
    assert len(server.requests) == 3
    assert _roles(server.requests[2]) == ["system", "user", "assistant", "tool"]
    assert "please nap" in server.requests[2].json()["messages"][1]["content"]


async def test_a_cancelled_compaction_changes_nothing(
    bridges: StartBridge, server: FakeOpenAIServer, workspace: Path
) -> None:
    server.enqueue(
        chat(text="Alpha."),
        SSE(chat_chunks(text="A summary that never ends"), stall_after=2),
        chat(text="Beta."),
    )
    bridge, session_id = await _session(bridges, server, workspace, COMPACTION_CLIENT)
    assert await bridge.prompt(session_id, "first") == "end_turn"
    compacting = asyncio.ensure_future(bridge.prompt(session_id, "/compact"))
    await bridge.wait_for(lambda: bool(_of(bridge, session_id, "compaction_summary_chunk")))
    await bridge.conn.cancel(session_id=session_id)
    assert await asyncio.wait_for(compacting, 5) == "cancelled"
    assert _of(bridge, session_id, "compaction_update")[-1]["status"] == "cancelled"
    assert await bridge.prompt(session_id, "third") == "end_turn"
    contents = [m.get("content") for m in server.requests[-1].json()["messages"]]
    assert "first" in contents[1] and not any(SUMMARY_HEADING in (c or "") for c in contents)


async def test_session_load_rebuilds_the_compacted_context_and_replays_the_compaction_where_it_happened(
    bridges: StartBridge, server: FakeOpenAIServer, tmp_path: Path, workspace: Path
) -> None:
    state = str(tmp_path / "state")
    server.enqueue(
        chat(text="Alpha."),
        chat(text="Beta."),
        chat(text="We did alpha."),
        chat(text="Gamma."),
        chat(text="Delta."),
    )
    live, session_id = await _session(bridges, server, workspace, COMPACTION_CLIENT, "--state-dir", state)
    for text in ("first", "second", "/compact", "third"):
        assert await live.prompt(session_id, text) == "end_turn"
    compacted_request = server.requests[3].json()["messages"]
    await live.stop()

    again, _ = await _session(bridges, server, workspace, COMPACTION_CLIENT, "--state-dir", state)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = [u for u in again.updates(session_id) if u["sessionUpdate"] != "available_commands_update"]
    shown = [
        u["content"]["text"] if "content" in u else f"[{u['status']}: {u['summary'][0]['text']}]"
        for u in replayed
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "compaction_update")
    ]
    assert shown == ["first", "Alpha.", "second", "Beta.", "[completed: We did alpha.]", "third", "Gamma."]
    assert await again.prompt(session_id, "fourth") == "end_turn"
    resumed = server.requests[4].json()["messages"]
    # The model gets the compacted context, not the whole history: what it got live, plus the new turn.
    assert resumed[:-2] == compacted_request
    assert [m["content"] for m in resumed[-2:]] == ["Gamma.", "fourth"]


async def test_a_scripted_session_compacts_offline_with_its_scripted_summary(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    turns = [{"steps": [{"text": "Sure.", "usage": {"input_tokens": 850, "output_tokens": 10}}]},
             {"steps": [{"text": "Done."}]}]  # fmt: skip
    script = {"turns": turns, "context_window": 1_000, "summaries": ["Scripted: the user said hello."]}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    bridge = await bridges(model=path)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hello") == "end_turn"
    assert await bridge.prompt(session_id, "more") == "end_turn"  # compacted before its step, then the script
    text = "".join(u["content"]["text"] for u in _of(bridge, session_id, "agent_message_chunk"))
    assert "Context compacted because the context was nearly full" in text
    assert text.endswith("Done.")  # the summary used no turn of the script
    assert _of(bridge, session_id, "usage_update")[0] == {
        "sessionUpdate": "usage_update",
        "used": 860,
        "size": 1_000,
    }


def test_the_demo_shows_a_compaction_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
    env.update(NO_COLOR="1", PYTHONPATH=str(REPO))
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "demo", "--compact", "--workspace", str(tmp_path / "ws")],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Context compacted on request" in done.stdout
    assert "turn ended: end_turn" in done.stdout


# --- what is kept: synthetic histories ---------------------------------------------------------------


def _call(call_id: str) -> ToolCallRequest:
    return ToolCallRequest(call_id, "read", {"file_path": f"{call_id}.txt"})


HISTORY = [
    UserMessage("fix the tests"),  # 0
    AssistantMessage("Reading both.", (_call("a"), _call("b"))),  # 1
    ToolResultMessage("a", "read", "alpha " * 200),  # 2
    ToolResultMessage("b", "read", "beta " * 200),  # 3
    UserMessage("(context a step's result deferred)"),  # 4
    AssistantMessage("Now running them.", (_call("c"),)),  # 5
    ToolResultMessage("c", "read", "gamma"),  # 6
]


def test_no_boundary_separates_a_call_from_its_result() -> None:
    assert safe_boundaries(HISTORY) == [1, 4, 5]
    for bound in safe_boundaries(HISTORY):
        kept = HISTORY[bound:]
        asked = {c.id for m in kept if isinstance(m, AssistantMessage) for c in m.tool_calls}
        answered = {m.call_id for m in kept if isinstance(m, ToolResultMessage)}
        assert asked == answered, bound


def test_the_kept_part_fits_the_budget_but_always_holds_the_latest_step() -> None:
    assert split_point(HISTORY, keep_tokens=10_000) == 1
    assert split_point(HISTORY, keep_tokens=20) == 5  # too small for anything: the latest step still stays
    assert split_point(HISTORY, keep_tokens=10_000, last_turn=True) == 4
    assert split_point([UserMessage("only a prompt")], keep_tokens=10) is None


def test_apply_joins_the_summary_to_a_kept_user_message_and_keeps_the_rest_as_is() -> None:
    history = list(HISTORY)
    apply(history, Compacted("cmp_1", "S.", kept=3, trigger="threshold"))
    assert history[0] == UserMessage(f"{SUMMARY_HEADING}\n\nS.\n\n(context a step's result deferred)")
    assert history[1:] == HISTORY[5:]
    history = list(HISTORY)
    apply(history, Compacted("cmp_1", "S.", kept=2, trigger="threshold"))
    assert history == [UserMessage(f"{SUMMARY_HEADING}\n\nS."), *HISTORY[5:]]
