"""MCP servers through the bridge as an editor sees it: `acp-bridge serve` as a real subprocess over real
pipes, driven by the ACP SDK's client (tests/support/bridge_harness.py), with the workbench MCP server
(servers/workbench.py) passed in `session/new` or configured with `--mcp-config`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
from acp import schema
from pydantic import TypeAdapter

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient, fold_cards, selected, write_script

from .conftest import REPO, WORKBENCH, workbench_stdio


def stdio_server(name: str = "bench") -> schema.McpServerStdio:
    entry = workbench_stdio(name)
    return schema.McpServerStdio(
        name=entry["name"],
        command=entry["command"],
        args=entry["args"],
        env=[schema.EnvVariable(name=e["name"], value=e["value"]) for e in entry["env"]],
    )


def workbench_processes(bridge: Bridge) -> list[psutil.Process]:
    found = []
    for process in bridge.descendants():
        try:
            if WORKBENCH in " ".join(process.cmdline()) and process.status() != psutil.STATUS_ZOMBIE:
                found.append(process)
        except psutil.Error:
            continue
    return found


async def test_an_mcp_call_renders_asks_and_replays_as_it_looked_live(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    calls = [
        {"id": "m1", "name": "mcp__bench__echo", "arguments": {"message": "hello from the editor"}},
        {"id": "m2", "name": "mcp__bench__refs", "arguments": {}},
    ]
    script = write_script(
        tmp_path / "script.json", [[{"text": "Asking the server.", "tool_calls": calls}, {"text": "Done."}]]
    )
    answers = iter(["allow_always_server"])

    async def policy(session_id: str, call: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any]:
        return selected(next(answers))

    live = await bridges("--state-dir", str(state), model=script, client=RecordingClient(policy))
    init = await live.initialize()
    assert init.agent_capabilities is not None and init.agent_capabilities.mcp_capabilities is not None
    assert (init.agent_capabilities.mcp_capabilities.http, init.agent_capabilities.mcp_capabilities.sse) == (
        True,
        True,
    )
    response = await asyncio.wait_for(
        live.conn.new_session(cwd=str(workspace), mcp_servers=[stdio_server()]), 10
    )
    session_id = str(response.session_id)
    assert await live.prompt(session_id, "use the server", within=60) == "end_turn"

    (question,) = live.client.permission_requests  # the server's option covered the second call
    assert question["toolCall"]["title"] == 'bench: echo (message="hello from the editor")'
    assert '"message": "hello from the editor"' in question["toolCall"]["content"][0]["content"]["text"]
    assert "allow_always_server" in [o["optionId"] for o in question["options"]]
    live_cards = fold_cards(live.updates(session_id))
    echo, refs = live_cards["m1"], live_cards["m2"]
    assert (echo["status"], echo["kind"]) == ("completed", "read")
    # The note says what allowed the call; then the server's content.
    assert [b["content"].get("text") for b in echo["content"]] == [
        "You chose: always allow every tool of MCP server `bench`.",
        "Echo: hello from the editor",
    ]
    assert [b["content"]["type"] for b in refs["content"]] == ["text", "resource_link", "resource"]
    assert refs["content"][0]["content"]["text"].startswith("Allowed by your session rule")
    commands = [u for u in live.updates(session_id) if u["sessionUpdate"] == "available_commands_update"]
    assert "bench:review" in [c["name"] for c in commands[-1]["availableCommands"]]
    await live.stop()

    again = await bridges("--state-dir", str(state), model=script)
    await again.initialize()
    # Replayed without the server: the cards come from the stored results alone.
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    replayed = fold_cards(again.updates(session_id))
    assert replayed["m1"] == echo
    assert replayed["m2"] == refs


async def test_servers_from_mcp_config_start_in_every_session_and_stop_with_it(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    config = tmp_path / "mcp.json"
    server = workbench_stdio("cfg")
    settings = {"command": server["command"], "args": server["args"], "env": {"PYTHONPATH": str(REPO)}}
    config.write_text(json.dumps({"mcpServers": {"cfg": settings}}))
    call = {"id": "c1", "name": "mcp__cfg__echo", "arguments": {"message": "configured"}}
    script = write_script(tmp_path / "s.json", [[{"tool_calls": [call]}, {"text": "ok"}]])
    bridge = await bridges("--mcp-config", str(config), "--allow-tool", "mcp__cfg__echo", model=script)
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)
    assert await bridge.prompt(session_id, "go", within=60) == "end_turn"
    card = fold_cards(bridge.updates(session_id))["c1"]
    assert card["status"] == "completed" and card["content"][0]["content"]["text"] == "Echo: configured"
    assert not bridge.client.permission_requests  # --allow-tool names an MCP tool like any other
    (process,) = workbench_processes(bridge)
    await asyncio.wait_for(bridge.conn.close_session(session_id=session_id), 10)
    await asyncio.to_thread(psutil.wait_procs, [process], 5)
    assert not workbench_processes(bridge)


class ElicitingClient(RecordingClient):
    """A client that supports ACP elicitation (forms): it answers with a name."""

    def __init__(self) -> None:
        super().__init__()
        self.elicited: list[dict[str, Any]] = []

    async def create_elicitation(self, message: str, mode: Any, **kwargs: Any) -> Any:
        self.elicited.append({"message": message, "mode": mode.model_dump(by_alias=True, exclude_none=True)})
        return schema.AcceptElicitationResponse(action="accept", content={"name": "Grace"})


async def test_a_servers_question_reaches_the_editor_as_acp_elicitation(
    bridges: StartBridge, tmp_path: Path, workspace: Path
) -> None:
    call = {"id": "q1", "name": "mcp__bench__ask", "arguments": {}}
    script = write_script(tmp_path / "s.json", [[{"tool_calls": [call]}, {"text": "ok"}]])
    client = ElicitingClient()
    bridge = await bridges("--allow-tool", "mcp__bench__ask", model=script, client=client)
    caps = schema.ClientCapabilities(
        elicitation=schema.ElicitationCapabilities(form=schema.ElicitationFormCapabilities())
    )
    await asyncio.wait_for(bridge.conn.initialize(protocol_version=1, client_capabilities=caps), 10)
    response = await asyncio.wait_for(
        bridge.conn.new_session(cwd=str(workspace), mcp_servers=[stdio_server()]), 10
    )
    session_id = str(response.session_id)
    assert await bridge.prompt(session_id, "ask me", within=60) == "end_turn"
    (asked,) = client.elicited
    assert asked["message"] == "Your name?"
    assert (asked["mode"]["sessionId"], asked["mode"]["toolCallId"]) == (session_id, "q1")
    (frame,) = [f for f in bridge.frames if f.get("method") == "elicitation/create"]
    TypeAdapter(schema.CreateElicitationRequest).validate_python(frame["params"])  # ACP's own shape
    card = fold_cards(bridge.updates(session_id))["q1"]
    assert card["status"] == "completed"
    assert "elicited: accept {'name': 'Grace'}" in str(card["content"])


async def test_a_bad_mcp_config_file_stops_the_bridge_with_a_message(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text("{not json")
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "acp_bridge", "serve", "--mcp-config", str(config)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "--mcp-config" in done.stderr and "not valid JSON" in done.stderr


def test_a_bridge_without_mcp_servers_never_loads_the_sdk() -> None:
    """Cold start does not move: the faces, the core and a session without servers import no MCP SDK."""
    code = (
        "import asyncio, sys\n"
        "import acp_bridge.cli, acp_bridge.runtime.boot, acp_bridge.acp.serve, acp_bridge.acp.connection\n"
        "import acp_bridge.lsp.server, acp_bridge.session.replay\n"
        "from acp_bridge.session.manager import SessionManager\n"
        "from tests.acp_bridge.mcp.conftest import RecordingBackend\n"
        "from tests.support.fake_channel import FakeChannel\n"
        "async def main():\n"
        "    manager = SessionManager(FakeChannel(), RecordingBackend([]), [])\n"
        "    manager.new_session('/tmp', mcp_servers=[])\n"
        "    await manager.shutdown()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types', 'httpx2')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
