"""A call naming an impossible path (a NUL byte) is that call's failed card, end to end: the bridge as a
real subprocess, a scripted model asking for a NUL-path `read` beside a valid `read` in the same step."""

from __future__ import annotations

from pathlib import Path

from .bridge_harness import RecordingClient, write_script
from .conftest import StartBridge


async def test_a_nul_byte_path_fails_its_own_card_and_the_sibling_call_and_the_turn_go_on(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    steps = [
        {
            "tool_calls": [
                {"id": "bad", "name": "read", "arguments": {"file_path": "a.txt\u0000.md"}},
                {"id": "good", "name": "read", "arguments": {"file_path": "b.txt"}},
            ]
        },
        {"text": "done"},
    ]
    client = RecordingClient()
    bridge = await bridges(model=write_script(tmp_path / "script.json", [steps]), client=client)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "read both") == "end_turn"
    bad = bridge.call_updates("bad")[-1]
    assert bad["status"] == "failed"
    assert "NUL" in str(bad.get("content", ""))
    good = bridge.call_updates("good")[-1]
    assert good["status"] == "completed"
    assert "beta" in str(good.get("content", ""))
    assert not client.permission_requests  # nothing to approve: an impossible path is refused outright
