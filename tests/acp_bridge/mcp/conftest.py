"""Fixtures of the MCP tests: real MCP servers (the SDK's, in `servers/`) and the session core in process.

`Core` is the session core with no transport: a `SessionManager` whose channel records every update and
answers permission questions (and, when asked to, elicitations), and whose model replays steps and keeps
every `StepRequest` it was given (to see the tools and the system prompt each step had).
`workbench_http` starts the workbench server on streamable HTTP on 127.0.0.1 (a free port it reports).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from acp_bridge.mcp.config import parse_acp
from acp_bridge.models import ScriptedBackend, StepEvent, StepRequest, parse_script
from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.manager import CoreConfig, SessionManager
from acp_bridge.session.session import Session
from tests.support.fake_channel import FakeChannel

REPO = Path(__file__).resolve().parents[3]
WORKBENCH = "tests.acp_bridge.mcp.servers.workbench"
TEXT = [{"type": "text", "text": "go"}]


def workbench_stdio(name: str = "bench", **env: str) -> dict[str, Any]:
    """An ACP `mcpServers` entry that runs the workbench server on stdio."""
    variables = {"PYTHONPATH": str(REPO), **env}
    return {
        "name": name,
        "command": sys.executable,
        "args": ["-m", WORKBENCH, "stdio"],
        "env": [{"name": k, "value": v} for k, v in variables.items()],
    }


class RecordingBackend:
    """The scripted model, keeping every request it was given."""

    name = "recording"

    def __init__(self, turns: list[list[dict[str, Any]]]) -> None:
        self.inner = ScriptedBackend(parse_script({"turns": [{"steps": steps} for steps in turns]}))
        self.requests: list[StepRequest] = []

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        self.requests.append(request)
        async for event in self.inner.stream_step(request):
            yield event

    async def aclose(self) -> None:
        return None


class Core:
    """A session manager over a `FakeChannel` and a `RecordingBackend`, stopped at teardown."""

    def __init__(
        self,
        turns: list[list[dict[str, Any]]],
        channel: FakeChannel | None = None,
        policy: PolicyConfig | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.channel = channel or FakeChannel()
        self.backend = RecordingBackend(turns)
        config = CoreConfig(policy=policy or PolicyConfig(), mcp_startup_timeout=startup_timeout)
        self.manager = SessionManager(self.channel, self.backend, [], config)

    def session(self, cwd: Path, servers: list[dict[str, Any]]) -> Session:
        return self.manager.new_session(str(cwd), mcp_servers=parse_acp(servers))

    def server_processes(self) -> list[psutil.Process]:
        """The processes of the stdio servers (children of this test process in their own groups)."""
        me = psutil.Process()
        return [p for p in me.children(recursive=True) if _runs(p, WORKBENCH)]


def _runs(process: psutil.Process, module: str) -> bool:
    with contextlib.suppress(psutil.Error):
        return module in " ".join(process.cmdline())
    return False


@pytest.fixture
async def core_factory() -> AsyncIterator[Callable[..., Core]]:
    made: list[Core] = []

    def make(*args: Any, **kwargs: Any) -> Core:
        core = Core(*args, **kwargs)
        made.append(core)
        return core

    yield make
    for core in made:
        await asyncio.wait_for(core.manager.shutdown(), 10)


@pytest.fixture
async def workbench_http() -> AsyncIterator[str]:
    """The workbench server on streamable HTTP, on 127.0.0.1; yields its MCP endpoint URL."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", WORKBENCH, "http", stdout=asyncio.subprocess.PIPE, env=env
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(proc.stdout.readline(), 30)
        assert line.startswith(b"PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        await proc.wait()
