"""Cold start of the ACP face, end to end over real pipes: `initialize` is answered before the agent core
(model, tools, session core) is loaded, exactly as it was answered when the core loaded first; what
arrives meanwhile waits for the core and is answered in the order it would have been; a core that cannot
be set up is reported to each request; and the process still ends promptly.

The core is held back by `gated_tools` (an `--extra-tools` module whose import waits until the test
opens its gate), so each check looks at the bridge while its core is provably still loading.
`fixtures/cold_start.json` holds what the bridge answered when it loaded the core before serving,
recorded from that code with these same requests: each `initialize` answer, byte for byte, and the
frames answering a batch of requests written at once right after spawn. (Edits since: the `fork`
session capability, added with `session/fork`; `systemPrompt`, added with project instructions; and
`title`, added with `session/set_title`.)
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, write_script
from tests.support.gated_tools import GATE_ENV

FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "cold_start.json").read_text())
GATED = ("--extra-tools", "tests.support.gated_tools:tools")
BROKEN = ("--extra-tools", "tests.support.broken_tools:tools")

CLIENT_CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "_meta": {"terminal_output": True},
}
# Each case: the serve arguments, and whether the client advertises `auth.terminal`.
INITIALIZE_CASES: dict[str, tuple[tuple[str, ...], bool]] = {
    "scripted": ((), False),
    "openai": (("--model", "openai:x"), False),
    "no history": (("--no-history",), False),
    "openai, a client with auth.terminal": (("--model", "openai:x"), True),
    "openai at a base URL, a client with auth.terminal": (
        ("--model", "openai:x", "--base-url", "http://127.0.0.1:9/v1/"),
        True,
    ),
}
# Ids far from the SDK client's own (the harness's SDK connection counts up from 0).
INITIALIZE_ID = 101


def frame(message: dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n"


def initialize_frame(auth_terminal: bool = False) -> bytes:
    caps = {**CLIENT_CAPABILITIES, "auth": {"terminal": True}} if auth_terminal else CLIENT_CAPABILITIES
    params = {"protocolVersion": 1, "clientCapabilities": caps, "clientInfo": {"name": "zed", "version": "0"}}
    return frame({"id": INITIALIZE_ID, "method": "initialize", "params": params})


def batch(workspace: Path) -> list[dict[str, Any]]:
    """Requests a client may write right after `initialize`, without waiting for its answer: sessions,
    requests naming no session, an unknown method, a notification, and the history's list."""
    new = {"method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}}
    return [
        {"id": 102, **new},
        {"id": 103, "method": "session/set_mode", "params": {"sessionId": "sess_nope", "modeId": "plan"}},
        {"method": "session/cancel", "params": {"sessionId": "sess_nope"}},
        {"id": 104, "method": "session/teleport", "params": {}},
        {"id": 105, **new},
        {"id": 106, "method": "session/list", "params": {}},
        {"id": 107, "method": "session/prompt", "params": {"sessionId": "sess_nope", "prompt": []}},
    ]


def describe(message: dict[str, Any]) -> str:
    """A frame as the order check sees it: a response's id and outcome, or a notification's kind."""
    if "method" in message:
        update = message.get("params", {}).get("update", {})
        return f"{message['method']} {update.get('sessionUpdate', '')}".strip()
    outcome = "result" if "result" in message else f"error {message['error']['code']}"
    return f"{message.get('id')} {outcome}"


def batch_done(bridge: Bridge, requests: list[dict[str, Any]]) -> bool:
    """Every request answered, and each new session's follow-up (`available_commands_update`) sent."""
    ids = [r["id"] for r in requests if "id" in r]
    commands = [u for u in bridge.updates() if u.get("sessionUpdate") == "available_commands_update"]
    return all(bridge.responses(i) for i in ids) and len(commands) == 2


class Gate:
    """A FIFO the bridge's `gated_tools` import waits on. The test keeps it open both ways, so what it
    writes stays readable whenever the bridge looks."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDWR)

    @property
    def env(self) -> dict[str, str]:
        return {GATE_ENV: str(self.path)}

    def open(self) -> None:
        os.write(self._fd, b"go")

    def close(self) -> None:
        os.close(self._fd)


@pytest.fixture
def gate(tmp_path: Path) -> Iterator[Gate]:
    gate = Gate(tmp_path / "gate")
    yield gate
    gate.close()


def _answer_line(bridge: Bridge, request_id: int) -> bytes:
    return next(line for line in bridge.raw_lines if json.loads(line).get("id") == request_id)


async def _parse_error_after(bridge: Bridge, count: int) -> None:
    """Send a malformed frame and wait for its -32700, the `count`-th so far: every frame written before
    it has been read by then."""
    await bridge.send_raw(b'{"jsonrpc": "2.0", "id": \n')
    await bridge.wait_for(lambda: len(_parse_errors(bridge)) == count)


def _parse_errors(bridge: Bridge) -> list[dict[str, Any]]:
    return [f for f in bridge.frames if f.get("error", {}).get("code") == -32700 and f.get("id") is None]


@pytest.mark.parametrize("case", list(INITIALIZE_CASES))
async def test_initialize_is_answered_while_the_core_loads_byte_for_byte_as_when_it_loaded_first(
    bridges: StartBridge, gate: Gate, case: str
) -> None:
    args, auth_terminal = INITIALIZE_CASES[case]
    bridge = await bridges(*GATED, *args, env=gate.env)
    await bridge.send_raw(initialize_frame(auth_terminal))
    await bridge.wait_for(lambda: bool(bridge.responses(INITIALIZE_ID)))
    assert _answer_line(bridge, INITIALIZE_ID).decode() == FIXTURES["initialize"][case]
    gate.open()


@pytest.mark.parametrize("history", [True, False], ids=["history", "no history"])
async def test_requests_written_with_initialize_wait_for_the_core_and_are_answered_in_the_same_order(
    bridges: StartBridge, gate: Gate, tmp_path: Path, workspace: Path, history: bool
) -> None:
    model = write_script(tmp_path / "script.json", [[{"text": "hi"}]])
    bridge = await bridges(*GATED, *(() if history else ("--no-history",)), model=model, env=gate.env)
    requests = batch(workspace)
    await bridge.send_raw(initialize_frame() + b"".join(frame(r) for r in requests))
    await _parse_error_after(bridge, 1)
    # Everything written so far was read; only `initialize` is answered while the core loads (the parse
    # error, answered as its line is read, may come first).
    assert sorted(describe(f) for f in bridge.frames) == ["101 result", "None error -32700"]
    gate.open()
    await bridge.wait_for(lambda: batch_done(bridge, requests))
    answered = [describe(f) for f in bridge.frames if f.get("id", "") is not None]
    assert answered == FIXTURES["batch"]["history" if history else "no history"]


async def test_a_malformed_frame_is_answered_at_once_and_a_session_made_meanwhile_serves_a_prompt(
    bridges: StartBridge, gate: Gate, tmp_path: Path, workspace: Path
) -> None:
    model = write_script(tmp_path / "script.json", [[{"text": "served"}]])
    bridge = await bridges(*GATED, model=model, env=gate.env)
    # Before initialize (nothing of the core is loading yet) and after it (the core is loading).
    await _parse_error_after(bridge, 1)
    await bridge.send_raw(initialize_frame())
    await bridge.send_raw(frame({"id": 102, "method": "session/new", "params": {
        "cwd": str(workspace), "mcpServers": []}}))  # fmt: skip
    await _parse_error_after(bridge, 2)
    assert bridge.responses(INITIALIZE_ID) and not bridge.responses(102)
    gate.open()
    await bridge.wait_for(lambda: bool(bridge.responses(102)))
    session_id = bridge.responses(102)[0]["result"]["sessionId"]
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
    await bridge.send_raw(frame({"id": 103, "method": "session/prompt", "params": prompt}))
    await bridge.wait_for(lambda: bool(bridge.responses(103)))
    assert bridge.responses(103)[0]["result"] == {
        "stopReason": "end_turn",
        "_meta": {"acpBridge": {"turn": 1}},
    }
    chunks = [u for u in bridge.updates(session_id) if u["sessionUpdate"] == "agent_message_chunk"]
    assert "".join(u["content"]["text"] for u in chunks) == "served"


async def test_a_core_that_cannot_be_set_up_answers_each_request_with_the_reason_and_exits_on_eof(
    bridges: StartBridge, workspace: Path
) -> None:
    bridge = await bridges(*BROKEN)
    requests = [
        {"id": 102, "method": "session/new", "params": {"cwd": str(workspace), "mcpServers": []}},
        {"method": "session/cancel", "params": {"sessionId": "sess_nope"}},
        {"id": 103, "method": "session/list", "params": {}},
    ]
    await bridge.send_raw(initialize_frame() + b"".join(frame(r) for r in requests))
    await bridge.wait_for(lambda: bool(bridge.responses(102) and bridge.responses(103)))
    assert bridge.responses(INITIALIZE_ID)[0]["result"]["protocolVersion"] == 1
    for request_id in (102, 103):
        error = bridge.responses(request_id)[0]["error"]
        assert error["code"] == -32603
        assert "tests.support.broken_tools" in error["message"]
        assert "RuntimeError: broken_tools: this module refuses to load" in error["message"]
    # A request made after the failure is answered the same way; an unknown one is still unknown.
    await bridge.send_raw(frame({"id": 104, "method": "session/new", "params": {"cwd": str(workspace)}}))
    await bridge.send_raw(frame({"id": 105, "method": "session/teleport", "params": {}}))
    await bridge.wait_for(lambda: bool(bridge.responses(104) and bridge.responses(105)))
    assert bridge.responses(104)[0]["error"]["code"] == -32603
    assert bridge.responses(105)[0]["error"]["code"] == -32601
    started = time.perf_counter()
    await bridge.close_stdin()
    code = await asyncio.wait_for(bridge.proc.wait(), 2.0)
    assert time.perf_counter() - started < 2.0
    assert code == 1
    assert "the agent could not start" in bridge.stderr_text()
    assert "broken_tools" in bridge.stderr_text()


async def test_stdin_closing_while_the_core_loads_ends_the_bridge_within_two_seconds(
    bridges: StartBridge, gate: Gate
) -> None:
    bridge = await bridges(*GATED, env=gate.env)
    await bridge.send_raw(initialize_frame())
    await bridge.wait_for(lambda: bool(bridge.responses(INITIALIZE_ID)))
    started = time.perf_counter()
    await bridge.close_stdin()  # the core is still loading (the gate stays shut)
    code = await asyncio.wait_for(bridge.proc.wait(), 2.0)
    assert time.perf_counter() - started < 2.0
    assert code == 0
