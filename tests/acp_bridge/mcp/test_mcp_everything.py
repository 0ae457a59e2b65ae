"""An unmodified public MCP server: `@modelcontextprotocol/server-everything` (pinned), the reference server
the MCP project tests clients with, run from npm with node on stdio through the session core.

The package is installed once into a cache directory (`ACP_BRIDGE_TEST_CACHE`, default
`~/.cache/acp-bridge-tests`) with `npm install --prefix`; when npm or its registry cannot be reached the
test is skipped, saying so.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.models import ToolResultMessage, UserMessage

from .conftest import TEXT, Core

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"


@pytest.fixture(scope="session")
def everything() -> Path:
    """The server's entry point (dist/index.js), installed on first use."""
    cache = Path(os.environ.get("ACP_BRIDGE_TEST_CACHE", Path.home() / ".cache" / "acp-bridge-tests"))
    prefix = cache / f"server-everything-{VERSION}"
    entry = prefix / "node_modules" / PACKAGE / "dist" / "index.js"
    if entry.exists():
        return entry
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        pytest.skip("node and npm are needed to run the public MCP reference server")
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
        pytest.skip(f"npm could not install {PACKAGE}@{VERSION} (registry unreachable?): {output[-300:]!r}")
    assert entry.exists(), f"{entry} missing after npm install"
    return entry


def call(call_id: str, tool: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": f"mcp__everything__{tool}", "arguments": arguments}


async def test_the_reference_server_works_through_the_session(
    core_factory: Any, tmp_path: Path, everything: Path
) -> None:
    node = shutil.which("node")
    assert node is not None
    step = {"tool_calls": [
        call("e1", "echo", message="hi"),
        call("i1", "get-tiny-image"),
        call("s1", "get-structured-content", location="New York"),
        call("l1", "get-resource-links", count=2),
        call("p1", "trigger-long-running-operation", duration=0.6, steps=3),
        call("r1", "get-roots-list"),
    ]}  # fmt: skip
    core: Core = core_factory([[step, {"text": "done"}], [{"text": "prompted"}]])
    server = {"name": "everything", "command": node, "args": [str(everything), "stdio"], "env": []}
    session = core.session(tmp_path, [server])
    assert await session.prompt(TEXT) == "end_turn"

    request = core.backend.requests[-1]
    told = {m.call_id: m for m in request.messages if isinstance(m, ToolResultMessage)}
    assert told["e1"].content == "Echo: hi"
    assert "Everything Server" in (request.system_prompt or "")  # its instructions
    assert core.channel.card("e1")["kind"] == "read"
    image = core.channel.card("i1")["content"]
    assert any(block["content"]["type"] == "image" for block in image)
    structured = core.channel.card("s1")["rawOutput"]["structuredContent"]
    assert set(structured) >= {"temperature", "conditions", "humidity"}
    links = [
        b["content"] for b in core.channel.card("l1")["content"] if b["content"]["type"] == "resource_link"
    ]
    assert len(links) == 2 and all(link["uri"].startswith("demo://") for link in links)
    progress = [u for u in core.channel.of("p1") if "Progress:" in str(u.get("content"))]
    assert progress and "of 3" in str(progress[-1]["content"])
    assert tmp_path.as_uri() in told["r1"].content  # it asked for our roots
    assert "everything:args-prompt" in core.channel.commands()

    assert (
        await session.prompt([{"type": "text", "text": "/everything:args-prompt city=Paris"}]) == "end_turn"
    )
    question = core.backend.requests[-1].messages[-1]
    assert isinstance(question, UserMessage) and "Paris" in question.text
