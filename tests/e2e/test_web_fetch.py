"""`web_fetch` through a real bridge: a redirect to another origin goes back to the model and its next fetch
is asked about like any other (a rule is per host and port), and without `--allow-private-network` a
loopback server is refused before any connection, with a card saying why and how to allow it.

Only servers this test starts on 127.0.0.1 are ever addressed."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import RecordingClient, selected, write_script


class Server(ThreadingHTTPServer):
    """Counts accepted connections and served paths; `/to?URL` redirects to URL, anything else is text."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.connections = 0
        self.paths: list[str] = []

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.connections += 1
        return True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        if self.path.startswith("/to?"):
            self.send_response(302)
            self.send_header("Location", self.path.split("?", 1)[1])
            body = b""
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            body = f"served {self.path}".encode()
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def start_server() -> Iterator[Callable[[], Server]]:
    servers: list[Server] = []

    def start() -> Server:
        server = Server()
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _fetch(call_id: str, url: str) -> dict[str, Any]:
    return {"id": call_id, "name": "web_fetch", "arguments": {"url": url}}


def _answering(*option_ids: str) -> RecordingClient:
    answers = list(option_ids)

    async def policy(session_id: str, call: dict[str, Any], options: list[dict[str, Any]]) -> dict[str, Any]:
        return selected(answers.pop(0))

    return RecordingClient(policy)


def _text(update: dict[str, Any]) -> str:
    return "\n".join(b["content"]["text"] for b in update.get("content") or [] if b.get("type") == "content")


async def test_a_redirect_to_another_port_is_asked_about_as_its_own_fetch(
    bridges: StartBridge, tmp_path: Path, workspace: Path, start_server: Callable[[], Server]
) -> None:
    first, other = start_server(), start_server()
    steps = [
        {"tool_calls": [_fetch("w1", f"{first.url}/to?{other.url}/secret")]},
        {"tool_calls": [_fetch("w2", f"{other.url}/secret")]},  # the model follows the redirect itself
        {"tool_calls": [_fetch("w3", f"{first.url}/again")]},  # covered by the rule for w1's host and port
        {"text": "done"},
    ]
    client = _answering("allow_always", "allow_once")
    bridge = await bridges(
        "--allow-private-network", model=write_script(tmp_path / "script.json", [steps]), client=client
    )
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)

    assert await bridge.prompt(session_id, "go") == "end_turn"

    asked = [r["toolCall"]["toolCallId"] for r in client.permission_requests]
    assert asked == ["w1", "w2"]
    always = next(o for o in client.permission_requests[0]["options"] if o["kind"] == "allow_always")
    assert (
        always["name"] == f"Always allow `web_fetch` from 127.0.0.1:{first.server_address[1]} (this session)"
    )
    redirected = bridge.call_updates("w1")[-1]
    assert redirected["status"] == "completed"
    assert "(another origin, not followed)" in redirected["title"]
    assert f"{other.url}/secret" in _text(redirected)
    assert other.paths == ["/secret"]  # fetched once: by w2, after its own approval
    assert first.paths == [f"/to?{other.url}/secret", "/again"]
    assert bridge.call_updates("w3")[-1]["status"] == "completed"


async def test_without_the_switch_a_loopback_server_is_refused_before_connecting(
    bridges: StartBridge, tmp_path: Path, workspace: Path, start_server: Callable[[], Server]
) -> None:
    server = start_server()
    steps = [{"tool_calls": [_fetch("w1", f"{server.url}/page")]}, {"text": "done"}]
    bridge = await bridges("--allow-tool", "web_fetch", model=write_script(tmp_path / "script.json", [steps]))
    await bridge.initialize()
    session_id = await bridge.new_session(workspace)

    assert await bridge.prompt(session_id, "go") == "end_turn"

    final = bridge.call_updates("w1")[-1]
    assert final["status"] == "failed"
    text = _text(final)
    assert "127.0.0.1 is a loopback address" in text and "--allow-private-network" in text
    assert server.connections == 0
