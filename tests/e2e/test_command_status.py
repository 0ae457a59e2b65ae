"""A command's card says how it ended, the bridge a real subprocess over real pipes, with real bash: a
non-zero exit ends the card `failed` (its output and exit code on it, and the model given them as a
value, not as an error of the tool), exit 0 ends it `completed`, and `session/load` replays the same
status from the logged result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge.mapping import fold_cards
from tests.support.bridge_fixtures import StartBridge
from tests.support.fake_openai_server import FakeOpenAIServer, chat

pytestmark = pytest.mark.slow

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": "test-key"}


def _bash(call_id: str, command: str) -> dict[str, Any]:
    return {"id": call_id, "name": "bash", "arguments": {"command": command}}


@pytest.mark.parametrize("terminal_meta", [True, False])
async def test_a_non_zero_exit_ends_the_card_failed_live_and_replayed(
    bridges: StartBridge, tmp_path: Path, workspace: Path, terminal_meta: bool
) -> None:
    state = tmp_path / "state"
    with FakeOpenAIServer() as server:
        server.enqueue(
            chat(tool_calls=[_bash("bad", "echo out; exit 3"), _bash("good", "echo fine")]),
            chat(text="Done."),
        )
        bridge = await bridges(
            "--base-url", server.base_url, "--allow-tool", "bash", "--state-dir", str(state),
            model="openai:fake-model", env=NO_KEYS,
        )  # fmt: skip
        await bridge.initialize(terminal_meta=terminal_meta)
        session_id = await bridge.new_session(workspace)
        assert await bridge.prompt(session_id, "go") == "end_turn"
        told = {
            m["tool_call_id"]: m["content"]
            for m in server.requests[1].json()["messages"]
            if m["role"] == "tool"
        }

    live = fold_cards(bridge.updates(session_id))
    bad, good = live["bad"], live["good"]
    assert (bad.status, bad.outcome.exit_code, bad.outcome.error) == ("failed", 3, None)
    assert "out" in (bad.output if terminal_meta else "\n".join(bad.texts))
    assert bridge.call_updates("bad", session_id)[-1]["rawOutput"]["isError"] is False  # no tool error
    assert (good.status, good.outcome.exit_code) == ("completed", 0)
    # The model gets the output and the code, as any command's result.
    assert "out" in told["bad"] and "Exit code: 3" in told["bad"]
    await bridge.stop()

    again = await bridges("--state-dir", str(state), model="openai:fake-model", env=NO_KEYS)
    await again.initialize(terminal_meta=terminal_meta)
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = fold_cards(again.updates(session_id))
    for call_id in ("bad", "good"):
        card, was = replayed[call_id], live[call_id]
        assert (card.status, card.outcome) == (was.status, was.outcome)
    assert replayed["bad"].status == "failed"
