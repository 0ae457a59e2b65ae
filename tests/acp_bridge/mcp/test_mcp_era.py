"""MCP servers of the 2026-07-28 era, through the session core: a server on the current TypeScript SDK
(`@modelcontextprotocol/server`, pinned) that serves only the modern protocol over HTTP
(`createMcpHandler(factory, {legacy: 'reject'})`: a 2025 `initialize` is refused) works, as does the same
server with its 2025 fallback and over stdio; a server that fails to start is reported with its real
cause (the HTTP status and what the server said), never as the task group the failure surfaced through.

The package is installed once into a cache directory (`ACP_BRIDGE_TEST_CACHE`, default
`~/.cache/acp-bridge-tests`) with `npm install --prefix`, and the server script (`servers/era_server.mjs`)
is copied beside it (node resolves its imports from the script's folder); when npm or its registry cannot
be reached the tests that need it are skipped, saying so.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from acp import schema

from acp_bridge.mapping import fold_cards
from acp_bridge.models import ToolResultMessage
from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import write_script

from .conftest import TEXT, Core

PACKAGE = "@modelcontextprotocol/server"
VERSION = "2.4.0"
SCRIPT = Path(__file__).parent / "servers" / "era_server.mjs"


@pytest.fixture(scope="session")
def era_script() -> Path:
    """The era server's script, beside the installed package (installed on first use)."""
    cache = Path(os.environ.get("ACP_BRIDGE_TEST_CACHE", Path.home() / ".cache" / "acp-bridge-tests"))
    prefix = cache / f"mcp-server-{VERSION}"
    if not (prefix / "node_modules" / PACKAGE / "package.json").exists():
        npm, node = shutil.which("npm"), shutil.which("node")
        if npm is None or node is None:
            pytest.skip("node and npm are needed to run a server on the TypeScript MCP SDK")
        prefix.mkdir(parents=True, exist_ok=True)
        try:
            subprocess.run(
                [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", f"{PACKAGE}@{VERSION}"],
                check=True,
                capture_output=True,
                timeout=300,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            output = getattr(exc, "stderr", b"") or b""
            pytest.skip(
                f"npm could not install {PACKAGE}@{VERSION} (registry unreachable?): {output[-300:]!r}"
            )
    script = prefix / SCRIPT.name
    shutil.copyfile(SCRIPT, script)
    return script


@contextlib.asynccontextmanager
async def _era_http(script: Path, mode: str) -> AsyncIterator[str]:
    node = shutil.which("node")
    assert node is not None
    proc = await asyncio.create_subprocess_exec(node, str(script), mode, stdout=asyncio.subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line.startswith(b"PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()


def _echo_turn() -> list[list[dict[str, Any]]]:
    step = {"tool_calls": [{"id": "e1", "name": "mcp__era__echo", "arguments": {"text": "hi"}}]}
    return [[step, {"text": "done"}]]


def _told(core: Core) -> dict[str, ToolResultMessage]:
    request = core.backend.requests[-1]
    return {m.call_id: m for m in request.messages if isinstance(m, ToolResultMessage)}


@pytest.mark.parametrize("mode", ["http-reject", "http-stateless"])
async def test_a_server_of_the_2026_era_over_http_works_modern_only_or_with_its_fallback(
    core_factory: Any, tmp_path: Path, era_script: Path, mode: str
) -> None:
    async with _era_http(era_script, mode) as url:
        core: Core = core_factory(_echo_turn())
        session = core.session(tmp_path, [{"type": "http", "name": "era", "url": url, "headers": []}])
        assert await session.prompt(TEXT) == "end_turn"
    said = core.channel.messages()
    assert "failed to start" not in said, said
    assert _told(core)["e1"].content == "era: hi"
    assert "The era server echoes." in (core.backend.requests[0].system_prompt or "")  # its instructions
    assert core.channel.card("e1")["status"] == "completed"


async def test_the_bridge_over_pipes_calls_a_modern_only_server_s_tool(
    bridges: StartBridge, tmp_path: Path, workspace: Path, era_script: Path
) -> None:
    script = write_script(tmp_path / "s.json", _echo_turn())
    async with _era_http(era_script, "http-reject") as url:
        bridge = await bridges("--allow-tool", "mcp__era__echo", model=script)
        await bridge.initialize()
        server = schema.HttpMcpServer(type="http", name="era", url=url, headers=[])
        response = await asyncio.wait_for(
            bridge.conn.new_session(cwd=str(workspace), mcp_servers=[server]), 10
        )
        session_id = str(response.session_id)
        assert await bridge.prompt(session_id, "echo", within=60) == "end_turn"
    card = fold_cards(bridge.updates(session_id))["e1"]
    assert card.status == "completed" and "era: hi" in "".join(card.texts)
    assert not bridge.schema_errors


async def test_a_server_of_the_2026_era_over_stdio_works(
    core_factory: Any, tmp_path: Path, era_script: Path
) -> None:
    node = shutil.which("node")
    assert node is not None
    core: Core = core_factory(_echo_turn())
    server = {"name": "era", "command": node, "args": [str(era_script), "stdio"], "env": []}
    session = core.session(tmp_path, [server])
    assert await session.prompt(TEXT) == "end_turn"
    assert _told(core)["e1"].content == "era: hi"


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    """An HTTP endpoint that answers every request `500 Internal Server Error` with a line of text."""

    class Failing(http.server.BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            body = b"upstream database is down"
            self.send_response(500)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_GET = do_DELETE = _fail

        def log_message(self, *args: Any) -> None:
            return None

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


async def test_a_server_that_fails_to_start_is_reported_with_its_real_cause(
    core_factory: Any, tmp_path: Path, failing_endpoint: str
) -> None:
    core: Core = core_factory([[{"text": "fine"}]])
    session = core.session(
        tmp_path, [{"type": "http", "name": "down", "url": failing_endpoint, "headers": []}]
    )
    assert await session.prompt(TEXT) == "end_turn"
    said = core.channel.messages()
    assert (
        f"MCP server `down` failed to start: {failing_endpoint} answered HTTP 500 Internal Server Error: "
        "upstream database is down" in said
    ), said
    assert "TaskGroup" not in said and "sub-exception" not in said
