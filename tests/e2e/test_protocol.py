"""The ACP face end to end: handshake, sessions, JSON-RPC errors, framing and lifecycle.

Each test runs `python -m acp_bridge serve` as a real subprocess over real pipes, driven by the ACP SDK's
client side (see conftest.py for the checks every test gets at teardown).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
from acp import schema
from acp.exceptions import RequestError

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script

NAP = {"name": "nap", "arguments": {"seconds": 0.0, "label": "x"}}


def _one_turn(tmp_path: Path, *steps: dict[str, Any]) -> Path:
    return write_script(tmp_path / "script.json", [list(steps) or [{"text": "DONE"}]])


async def _request(bridge: Any, method: str, params: Any, request_id: int) -> dict[str, Any]:
    """Send a raw request and wait for its raw response (ids chosen far from the SDK's own)."""
    await bridge.send_raw(
        json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode() + b"\n"
    )
    await bridge.wait_for(lambda: bool(bridge.responses(request_id)))
    response: dict[str, Any] = bridge.responses(request_id)[0]
    return response


async def test_initialize_answers_version_agent_info_and_truthful_capabilities(
    bridges: StartBridge, tmp_path: Path
) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    response = await bridge.initialize()
    assert response.protocol_version == 1
    assert response.agent_info is not None
    assert response.agent_info.name == "acp-bridge"
    caps = response.agent_capabilities
    assert caps is not None
    assert caps.load_session is True  # history is kept by default (in this test's XDG_STATE_HOME)
    assert caps.prompt_capabilities is not None
    prompt_caps = caps.prompt_capabilities
    assert (prompt_caps.image, prompt_caps.audio, prompt_caps.embedded_context) == (True, False, True)
    assert response.auth_methods == []


async def test_initialize_with_a_newer_version_gets_version_1(bridges: StartBridge, tmp_path: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    response = await _request(bridge, "initialize", {"protocolVersion": 7, "clientCapabilities": {}}, 900)
    assert response["result"]["protocolVersion"] == 1


async def test_authenticate_answers_an_empty_object(bridges: StartBridge, tmp_path: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    response = await _request(bridge, "authenticate", {"methodId": "none"}, 901)
    assert response["result"] == {}


async def test_session_new_rejects_a_relative_cwd_with_invalid_params(
    bridges: StartBridge, tmp_path: Path
) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    with pytest.raises(RequestError) as caught:
        await bridge.conn.new_session(cwd="relative/dir", mcp_servers=[])
    assert caught.value.code == -32602
    assert "absolute" in str(caught.value)


async def test_session_new_answers_first_then_sends_available_commands(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    started = time.perf_counter()
    session_id = await bridge.new_session(workspace)
    elapsed = time.perf_counter() - started
    await bridge.wait_for(
        lambda: any(u["sessionUpdate"] == "available_commands_update" for u in bridge.updates())
    )
    kinds = [("response" if "result" in f else f["params"]["update"]["sessionUpdate"]) for f in bridge.frames]
    new_response = next(
        i for i, f in enumerate(bridge.frames) if f.get("result", {}).get("sessionId") == session_id
    )
    commands = kinds.index("available_commands_update")
    assert new_response < commands
    names = {c["name"] for c in bridge.updates(session_id)[0]["availableCommands"]}
    assert {"permissions", "forget", "mode"} <= names
    assert elapsed < 5.0  # nothing slow is awaited first (its speed is `make bench`'s row, not a test's)


async def test_unknown_method_gets_method_not_found(bridges: StartBridge, tmp_path: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    response = await _request(bridge, "session/teleport", {}, 902)
    assert response["error"]["code"] == -32601
    assert "session/teleport" in response["error"]["message"]


async def test_malformed_line_gets_parse_error_and_the_session_keeps_working(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=_one_turn(tmp_path, {"text": "still here"}))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    await bridge.send_raw(b'{"jsonrpc": "2.0", "id": 5, "method": \n')
    await bridge.wait_for(lambda: any(f.get("error", {}).get("code") == -32700 for f in bridge.frames))
    error = next(f for f in bridge.frames if f.get("error", {}).get("code") == -32700)
    assert error["id"] is None
    # An unknown notification is ignored (never answered), and the session still works.
    await bridge.send_raw(b'{"jsonrpc": "2.0", "method": "_vendor/ping", "params": {}}\n')
    assert await bridge.prompt(session_id, "hi") == "end_turn"
    texts = [
        u["content"]["text"]
        for u in bridge.updates(session_id)
        if u["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(texts) == "still here"


INVALID_ENVELOPES = [
    (b"[]", "batch"),
    (b'[{"jsonrpc": "2.0", "id": 1, "method": "initialize"}]', "batch"),
    (b"42", "object"),
    (b'{"jsonrpc": "1.0", "id": 3, "method": "initialize"}', "jsonrpc"),
    (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "initialize"}', "id"),
    (b'{"jsonrpc": "2.0", "id": 4}', "neither"),
]


async def test_invalid_envelopes_get_invalid_request(bridges: StartBridge, tmp_path: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    for count, (line, fragment) in enumerate(INVALID_ENVELOPES, 1):
        await bridge.send_raw(line + b"\n")
        await bridge.wait_for(lambda n=count: len([f for f in bridge.frames if "error" in f]) >= n)
        error = [f for f in bridge.frames if "error" in f][-1]
        assert error["error"]["code"] == -32600, line
        assert fragment in error["error"]["message"], line
    assert (await bridge.initialize()).protocol_version == 1


UNACCEPTED_PROMPTS: list[tuple[Any, str]] = [
    ([], "empty"),
    ([{"type": "text", "text": "   "}], "empty"),
    # Images and embedded resources are accepted (tests/acp_bridge/session/test_prompt_content.py).
    ([{"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}], "audio"),
    ("not a list", "list"),
]


async def test_prompts_with_unsupported_or_empty_content_get_invalid_params(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    for request_id, (prompt, fragment) in enumerate(UNACCEPTED_PROMPTS, 950):
        response = await _request(
            bridge, "session/prompt", {"sessionId": session_id, "prompt": prompt}, request_id
        )
        assert response["error"]["code"] == -32602, prompt
        assert fragment in response["error"]["message"], prompt


async def test_invalid_params_and_unknown_session(bridges: StartBridge, tmp_path: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path))
    await bridge.initialize()
    not_object = await _request(bridge, "session/new", [1, 2], 904)
    assert not_object["error"]["code"] == -32602
    missing = await _request(bridge, "session/new", {"mcpServers": []}, 905)
    assert missing["error"]["code"] == -32602
    bad_version = await _request(bridge, "initialize", {"protocolVersion": "one"}, 906)
    assert bad_version["error"]["code"] == -32602
    unknown = await _request(
        bridge, "session/prompt", {"sessionId": "sess_nope", "prompt": [{"type": "text", "text": "hi"}]}, 907
    )
    assert unknown["error"]["code"] == -32002


async def test_a_second_prompt_while_one_runs_joins_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    """Steering (docs/sessions.md): taken, not refused; both answered when the turn ends."""
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    held = os.open(gate, os.O_RDWR | os.O_NONBLOCK)  # `head` opens it at once, and reads what is written
    try:
        read = {"id": "b1", "name": "bash", "arguments": {"command": f"head -n 1 {gate}"}}
        bridge = await bridges(
            "--allow-tool", "bash", model=_one_turn(tmp_path, {"tool_calls": [read]}, {"text": "done"})
        )
        await bridge.initialize()
        session_id = await bridge.new_session(workspace)
        first = asyncio.ensure_future(bridge.prompt(session_id, "one"))
        await bridge.wait_for(
            lambda: any(u.get("status") == "in_progress" for u in bridge.call_updates("b1"))
        )
        two = {"sessionId": session_id, "prompt": [{"type": "text", "text": "two"}]}
        second = asyncio.ensure_future(_request(bridge, "session/prompt", two, 908))
        await _request(bridge, "_acpBridge/listRules", {"sessionId": session_id}, 909)  # "two" was read
        os.write(held, b"go\n")
        assert await first == "end_turn"
        response = await second
        assert response["result"] == {
            "stopReason": "end_turn", "_meta": {"acpBridge": {"steered": True, "turn": 1}},
        }  # fmt: skip
        echoed = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["two"]
    finally:
        os.close(held)


async def test_two_sessions_run_at_once_and_stay_isolated(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 0.6, "label": "slow"}}
    bridge = await bridges(
        model=_one_turn(tmp_path, {"text": "napping", "tool_calls": [nap]}, {"text": "done"})
    )
    await bridge.initialize()
    other = tmp_path / "other"
    other.mkdir()
    first, second = await bridge.new_session(workspace), await bridge.new_session(other)
    assert first != second
    stops = await asyncio.gather(bridge.prompt(first, "go"), bridge.prompt(second, "go"))
    assert stops == ["end_turn", "end_turn"]
    # Both naps overlapped: each session's card went in_progress before the other's completed (from the
    # order of the frames, not from a wall-clock bound a loaded machine could miss).
    order = [
        (f["params"]["sessionId"], f["params"]["update"]["status"])
        for f in bridge.frames
        if f.get("method") == "session/update" and f["params"]["update"].get("status")
    ]
    for one, other in ((first, second), (second, first)):
        assert order.index((one, "in_progress")) < order.index((other, "completed"))
    for session_id in (first, second):
        updates = bridge.updates(session_id)
        # Each session replays the script from its own first turn: its own card, its own text.
        assert [u["status"] for u in updates if u.get("toolCallId") == "n1" and "status" in u] == [
            "in_progress",
            "completed",
        ]
        texts = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        assert texts == "nappingdone"


async def test_a_ten_megabyte_prompt_passes(bridges: StartBridge, tmp_path: Path, workspace: Path) -> None:
    bridge = await bridges(model=_one_turn(tmp_path, {"text": "got it"}))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    big = "x" * (10 * 1024 * 1024)
    response = await asyncio.wait_for(
        bridge.conn.prompt(session_id=session_id, prompt=[schema.TextContentBlock(type="text", text=big)]), 20
    )
    assert response.stop_reason == "end_turn"


async def test_logs_never_reach_stdout_even_at_debug(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    step = {"thought": "t", "text": "reading", "tool_calls": [{"id": "n1", **NAP}]}
    bridge = await bridges("--log-level", "debug", model=_one_turn(tmp_path, step, {"text": "done"}))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    await bridge.send_raw(b"not json\n")
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await bridge.stop()
    assert "DEBUG" in bridge.stderr_text()
    assert bridge.raw_lines
    for line in bridge.raw_lines:
        assert json.loads(line)["jsonrpc"] == "2.0"


async def test_output_while_setting_up_never_reaches_the_protocol_stream(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    # stdio is claimed before the tools are loaded: an --extra-tools module printing (or writing to fd 1)
    # at import lands on stderr, and every stdout line stays a JSON-RPC frame.
    bridge = await bridges(
        "--extra-tools", "tests.support.noisy_tools:tools", model=_one_turn(tmp_path, {"text": "quiet"})
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go") == "end_turn"
    await bridge.stop()
    stderr = bridge.stderr_text()
    for noise in ("print at import", "raw write to fd 1 at import", "print from tools()"):
        assert f"noisy_tools: {noise}" in stderr
    assert bridge.raw_lines
    for line in bridge.raw_lines:
        assert json.loads(line)["jsonrpc"] == "2.0", line


@pytest.mark.parametrize("how", ["stdin EOF", "SIGTERM", "SIGHUP"])
async def test_stdin_eof_sigterm_and_sighup_exit_zero_within_two_seconds_leaving_no_child(
    bridges: StartBridge, tmp_path: Path, workspace: Path, how: str
) -> None:
    sleeper = {"id": "s1", "name": "bash", "arguments": {"command": "sleep 30"}}
    bridge = await bridges("--allow-tool", "bash", model=_one_turn(tmp_path, {"tool_calls": [sleeper]}))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    prompt = asyncio.ensure_future(bridge.prompt(session_id, "sleep"))
    await bridge.wait_for(lambda: bridge.running("sleep"))
    tree = bridge.descendants()
    started = time.perf_counter()
    if how == "stdin EOF":
        await bridge.close_stdin()
    else:
        bridge.proc.send_signal(getattr(signal, how))
    code = await asyncio.wait_for(bridge.proc.wait(), 2.0)
    assert time.perf_counter() - started < 2.0
    assert code == 0
    assert not [p for p in tree if _alive(p)], "a tool process outlived the bridge"
    # The card was closed before the exit, not left running.
    assert bridge.call_updates("s1")[-1]["status"] == "failed"
    prompt.cancel()


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


async def test_an_unusable_model_fails_each_prompt_with_a_clear_error(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    missing = tmp_path / "missing.json"
    bridge = await bridges(model=f"scripted:{missing}")
    await bridge.initialize()  # the bridge still starts, so the editor can show the reason
    session_id = await bridge.new_session(workspace)
    with pytest.raises(RequestError) as caught:
        await bridge.prompt(session_id, "hi")
    assert caught.value.code == -32603
    assert "not found" in str(caught.value)
    assert str(missing) in str(caught.value)
