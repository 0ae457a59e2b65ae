"""The subagents RFD's `subagent_update` as the bridge builds it (checked against the RFD's shape,
`tests/support/acp_unstable_schema.py`), and the status line heading a running program's list of calls."""

from __future__ import annotations

from acp_bridge import mapping
from acp_bridge.mapping.nested import nested_lines_block
from acp_bridge.mapping.subagents import MAX_TASK_CHARS
from tests.support.acp_unstable_schema import validate_update


def test_the_announcing_and_terminal_updates_follow_the_rfd() -> None:
    child = mapping.child_session_id("sess_1", "call_7")
    assert child == "sess_1/task/call_7"
    announced = mapping.subagent_announced(child, "call_7", "  Find the bug ", "x" * 5_000)
    assert validate_update(dict(announced)) == []
    assert (announced["name"], announced["_meta"]) == (
        "Find the bug",
        {"acpBridge": {"toolCallId": "call_7"}},
    )
    assert (
        "state" not in announced and "capabilities" not in announced
    )  # running; the client may not cancel it
    assert len(announced["task"]) <= MAX_TASK_CHARS + 100
    for state in ("completed", "failed", "cancelled"):
        ended = mapping.subagent_ended(child, state)
        assert validate_update(dict(ended)) == []
        assert ended == {"sessionUpdate": "subagent_update", "subagentSessionId": child, "state": state}
    assert validate_update({"sessionUpdate": "subagent_update", "subagentSessionId": child, "state": "done"})


def test_a_status_line_heads_a_running_programs_list_and_the_final_list_has_none() -> None:
    lines = [mapping.NestedLine("Read a.txt", "completed"), mapping.NestedLine("Run tests", "in_progress")]
    block = nested_lines_block(lines, "Step 2")
    assert block["content"]["text"].startswith("Step 2 · 2 tool calls:\n1. ✓ Read a.txt\n2. ▸ Run tests")
    assert nested_lines_block(lines)["content"]["text"].startswith("2 tool calls:\n")
    ctx = mapping.WireContext(cwd="/ws")
    update = mapping.program_calls_update(ctx, "t1", "task", {}, None, lines, [], "Step 2")
    assert any("Step 2 · 2 tool calls" in item["content"]["text"] for item in update["content"])
