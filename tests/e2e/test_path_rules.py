"""The path rules end to end: the bridge as a real subprocess over real pipes, a scripted model, real files
and real symlinks. A remembered rule does not follow a file that became a link out of the workspace; a
file that makes later commands run code is asked about every time, without an "Always allow" option; a
NUL-byte path is that call's failed card while its sibling call and the turn go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script


def _answering(*option_ids: str) -> RecordingClient:
    answers = list(option_ids)

    async def policy(session_id: str, tool_call: Any, options: list[dict[str, Any]]) -> dict[str, Any]:
        return selected(answers.pop(0))

    return RecordingClient(policy)


async def _run(bridges: StartBridge, tmp_path: Path, workspace: Path, steps: list[dict[str, Any]],
               client: RecordingClient, *args: str) -> Any:  # fmt: skip
    bridge = await bridges(*args, model=write_script(tmp_path / "script.json", [steps]), client=client)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    return bridge


async def test_an_always_allowed_write_asks_again_once_the_file_is_a_symlink_out_of_the_workspace(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    secret = tmp_path / "bashrc"
    secret.write_text("export SAFE=1\n")
    write = {"name": "write", "arguments": {"file_path": "notes.txt", "content": "planted\n"}}
    relink = f"rm notes.txt && ln -s {secret} notes.txt"
    steps = [
        {"tool_calls": [{"id": "w1", **write}]},
        {"tool_calls": [{"id": "b1", "name": "bash", "arguments": {"command": relink}}]},
        {"tool_calls": [{"id": "w2", **write}]},
        {"text": "done"},
    ]
    client = _answering("allow_always", "reject_once")
    bridge = await _run(bridges, tmp_path, workspace, steps, client, "--allow-tool", "bash")
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["w1", "w2"]
    second = client.permission_requests[1]
    assert [o["kind"] for o in second["options"]] == ["allow_once", "reject_once", "reject_always"]
    assert "outside the workspace" in str(second["toolCall"])
    assert bridge.call_updates("w2")[-1]["status"] == "failed"
    assert secret.read_text() == "export SAFE=1\n"


async def test_a_write_to_git_config_asks_in_accept_edits_and_an_always_answer_it_was_not_offered_denies(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    config = workspace / ".git" / "config"
    config.write_text("[core]\n")
    planted = "[core]\n\tfsmonitor = ./payload.sh\n"
    write = {"name": "write", "arguments": {"file_path": ".git/config", "content": planted}}
    steps = [{"tool_calls": [{"id": "w1", **write}]}, {"tool_calls": [{"id": "w2", **write}]}, {"text": "ok"}]
    client = _answering("allow_always", "allow_always")
    bridge = await _run(bridges, tmp_path, workspace, steps, client, "--mode", "accept_edits")
    assert [r["toolCall"]["toolCallId"] for r in client.permission_requests] == ["w1", "w2"]
    for request in client.permission_requests:
        assert "allow_always" not in [o["kind"] for o in request["options"]]
        assert "run code" in str(request["toolCall"])
    for call_id in ("w1", "w2"):
        assert bridge.call_updates(call_id)[-1]["status"] == "failed"
    assert config.read_text() == "[core]\n"


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
    bridge = await _run(bridges, tmp_path, workspace, steps, client)
    bad = bridge.call_updates("bad")[-1]
    assert bad["status"] == "failed"
    assert "NUL" in str(bad.get("content", ""))
    good = bridge.call_updates("good")[-1]
    assert good["status"] == "completed"
    assert "beta" in str(good.get("content", ""))
    assert not client.permission_requests  # nothing to approve: an impossible path is refused outright
