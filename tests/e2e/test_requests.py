"""What the ACP face accepts of a request, end to end over real pipes: requests before `initialize`,
request ids (reused while in flight, absurdly long), parameter types, and how much of a request an error
answer may quote back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_bridge.acp.handshake import agent_requests
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script

MEGABYTE = "x" * (1024 * 1024)


async def _send(bridge: Bridge, message: dict[str, Any]) -> None:
    await bridge.send_raw(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")


async def _request(bridge: Bridge, method: str, params: Any, request_id: Any) -> dict[str, Any]:
    """Send a raw request and wait for its raw response (ids chosen far from the SDK's own)."""
    await _send(bridge, {"id": request_id, "method": method, "params": params})
    await bridge.wait_for(lambda: bool(bridge.responses(request_id)))
    response: dict[str, Any] = bridge.responses(request_id)[0]
    return response


def _errors_with_null_id(bridge: Bridge) -> list[dict[str, Any]]:
    return [f for f in bridge.frames if "error" in f and f.get("id", "missing") is None]


def _prompt(session_id: Any, text: str = "go") -> dict[str, Any]:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}


async def test_a_request_reusing_an_in_flight_id_is_refused_and_the_first_stays_cancellable(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    nap = {"id": "n1", "name": "nap", "arguments": {"seconds": 30, "label": "long"}}
    script = write_script(tmp_path / "s.json", [[{"tool_calls": [nap]}, {"text": "done"}]])
    bridge = await bridges(model=script)
    await bridge.initialize()
    first, second = await bridge.new_session(workspace), await bridge.new_session(workspace)
    await _send(bridge, {"id": "dup", "method": "session/prompt", "params": _prompt(first)})
    await bridge.wait_for(
        lambda: any(u.get("status") == "in_progress" for u in bridge.call_updates("n1", first))
    )
    # Another session's prompt under the same id: refused, so the id keeps naming the first prompt.
    await _send(bridge, {"id": "dup", "method": "session/prompt", "params": _prompt(second)})
    await bridge.wait_for(lambda: bool(bridge.responses("dup")))
    (refused,) = bridge.responses("dup")
    assert refused["error"]["code"] == -32600
    assert "in use" in refused["error"]["message"]
    assert not [u for u in bridge.updates(second) if "toolCallId" in u]  # the second prompt never ran
    await _send(bridge, {"method": "$/cancel_request", "params": {"requestId": "dup"}})
    await bridge.wait_for(lambda: len(bridge.responses("dup")) == 2)
    assert bridge.responses("dup")[1]["result"] == {
        "stopReason": "cancelled",
        "_meta": {"acpBridge": {"turn": 1}},
    }


async def test_requests_before_initialize_are_refused_and_notifications_ignored(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=write_script(tmp_path / "s.json", [[{"text": "hi"}]]))
    early = await _request(bridge, "session/new", {"cwd": str(workspace), "mcpServers": []}, 1001)
    assert early["error"]["code"] == -32600
    assert "initialize" in early["error"]["message"]
    await _send(bridge, {"method": "session/cancel", "params": {"sessionId": "sess_x"}})
    # Unknown methods are still unknown (-32601), initialized or not.
    unknown = await _request(bridge, "session/teleport", {}, 1002)
    assert unknown["error"]["code"] == -32601
    assert (await bridge.initialize()).protocol_version == 1
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "hello") == "end_turn"
    assert [f for f in bridge.frames if "error" in f and f.get("id") not in (1001, 1002)] == []
    assert "session/cancel received before initialize" in bridge.stderr_text()


def _bad_params(session_id: str, workspace: Path) -> list[tuple[str, Any, str]]:
    """A request of each kind with one bad field: (method, params, the field its error must name)."""
    cwd = str(workspace)
    load = {"cwd": cwd, "mcpServers": []}
    return [
        ("authenticate", {"methodId": 7}, "methodId"),
        ("logout", [1], "params"),
        ("session/new", {"cwd": cwd, "additionalDirectories": [cwd, "src"], "mcpServers": []},
         "additionalDirectories[1]"),
        ("session/new", {"mcpServers": []}, "cwd"),
        ("session/new", {"cwd": cwd, "mcpServers": [], "systemPrompt": {"mode": "replace", "content": []}},
         "systemPrompt.mode"),
        ("session/load", {"sessionId": 42, **load}, "sessionId"),
        ("session/resume", {"sessionId": session_id, "cwd": "relative/dir"}, "cwd"),
        ("session/fork", {"sessionId": session_id, "cwd": cwd, "additionalDirectories": cwd},
         "additionalDirectories"),
        ("session/list", {"cursor": 5}, "cursor"),
        ("session/delete", {}, "sessionId"),
        ("session/prompt", _prompt(["sess"]), "sessionId"),
        ("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}, "go"]},
         "prompt[1]"),
        ("session/set_mode", {"sessionId": None, "modeId": "plan"}, "sessionId"),
        ("session/set_mode", {"sessionId": session_id, "modeId": ["plan"]}, "modeId"),
        ("session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": 1}, "value"),
        ("session/close", {"sessionId": {"id": 1}}, "sessionId"),
        ("session/set_title", {"sessionId": session_id}, "title"),
        ("_acpBridge/setSessionTitle", {"sessionId": session_id, "title": " "}, "title"),
        ("_acpBridge/listRules", {"sessionId": 1}, "sessionId"),
        ("_acpBridge/forgetRules", {"sessionId": session_id, "number": -1}, "number"),
        ("_acpBridge/checkpoints", {}, "sessionId"),
        ("_acpBridge/rewind", {"sessionId": session_id, "turn": 0}, "turn"),
        ("_acpBridge/rewind", {"sessionId": session_id, "turn": 1, "force": "yes"}, "force"),
        ("_acpBridge/revertFile", {"sessionId": session_id, "toolCallId": "c1", "path": "a.txt"}, "path"),
        ("_acpBridge/killBackground", {"sessionId": session_id}, "bashId"),
        ("session/fork", {"sessionId": session_id, "cwd": cwd, "_meta": {"acpBridge": {"turn": "2"}}},
         "_meta.acpBridge.turn"),
    ]  # fmt: skip


async def test_a_bad_param_of_each_request_gets_invalid_params_naming_the_field_and_serving_goes_on(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    bridge = await bridges(
        "--state-dir", str(state), model=write_script(tmp_path / "s.json", [[{"text": "still here"}]])
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    await bridge.wait_for(lambda: bool(bridge.updates(session_id)))  # its commands
    before = len(bridge.updates(session_id))
    bad = _bad_params(session_id, workspace)
    assert {method for method, _, _ in bad} == set(agent_requests(history=True))
    for request_id, (method, params, field) in enumerate(bad, 1100):
        response = await _request(bridge, method, params, request_id)
        assert response["error"]["code"] == -32602, (method, response)
        assert response["error"]["message"].startswith(f"{field} "), (method, response)
    # A bad notification is dropped (never answered), as an unknown one is.
    await _send(bridge, {"method": "session/cancel", "params": {"sessionId": 1}})
    await _send(bridge, {"method": "$/cancel_request", "params": {"requestId": [1]}})
    # Nothing was done: no session was made, changed or closed, and the bridge goes on serving.
    assert len(bridge.updates(session_id)) == before
    assert await bridge.prompt(session_id, "hello") == "end_turn"
    assert "still here" in str(bridge.updates(session_id))
    listed = (await bridge.request("session/list", {}))["sessions"]
    assert [(s["sessionId"], s["title"]) for s in listed] == [(session_id, "hello")]


async def test_an_oversized_request_id_is_refused_with_a_null_id(
    bridges: StartBridge, tmp_path: Path
) -> None:
    bridge = await bridges(model=write_script(tmp_path / "s.json", [[{"text": "x"}]]))
    params = {"protocolVersion": 1, "clientCapabilities": {}}
    for count, huge in enumerate((MEGABYTE, int("9" * 300)), 1):
        await _send(bridge, {"id": huge, "method": "initialize", "params": params})
        await bridge.wait_for(lambda n=count: len(_errors_with_null_id(bridge)) >= n)
        error = _errors_with_null_id(bridge)[-1]
        assert error["error"]["code"] == -32600
        assert "id is longer than 256 characters" in error["error"]["message"]
    assert max(len(line) for line in bridge.raw_lines) < 1000
    # An id of the largest size accepted is echoed as is.
    long_id = "i" * 256
    assert (await _request(bridge, "initialize", params, long_id))["result"]["protocolVersion"] == 1


async def test_error_answers_quote_only_a_bounded_part_of_the_request(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    bridge = await bridges(model=write_script(tmp_path / "s.json", [[{"text": "x"}]]))
    await bridge.initialize()
    unknown_session = await _request(bridge, "session/prompt", _prompt(MEGABYTE), 1200)
    assert unknown_session["error"]["code"] == -32002
    unknown_method = await _request(bridge, "_vendor/" + MEGABYTE, {}, 1201)
    assert unknown_method["error"]["code"] == -32601
    relative_cwd = await _request(bridge, "session/new", {"cwd": MEGABYTE, "mcpServers": []}, 1202)
    assert relative_cwd["error"]["code"] == -32602
    session_id = await bridge.new_session(workspace)
    bad_mode = await _request(bridge, "session/set_mode", {"sessionId": session_id, "modeId": MEGABYTE}, 1203)
    assert bad_mode["error"]["code"] == -32602
    for request_id in range(1200, 1204):
        (line,) = [line for line in bridge.raw_lines if json.loads(line).get("id") == request_id]
        assert len(line) < 4096, line[:300]
        assert "characters" in json.loads(line)["error"]["message"]  # says how much was left out
