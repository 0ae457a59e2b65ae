"""Fixtures for the tests that start the bridge as a real subprocess (see bridge_harness.py): `bridges`,
`workspace`, and the packages' bytecode compiled once. The conftest.py of each folder whose tests use
them imports them from here (tests/acp_bridge/, tests/e2e/)."""

from __future__ import annotations

import compileall
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from .bridge_harness import REPO, Bridge, RecordingClient, fold_cards

StartBridge = Callable[..., Awaitable[Bridge]]

# The test tools, allowed without asking (the built-in tools keep the default policy).
EXTRA_TOOLS = (
    "--extra-tools",
    "tests.support.bridge_tools:tools",
    *(
        "--allow-tool",
        "nap",
        "--allow-tool",
        "chatter",
        "--allow-tool",
        "explode",
        "--allow-tool",
        "stubborn",
    ),
)


@pytest.fixture(scope="session", autouse=True)
def compiled_packages() -> None:
    """Compile the packages' bytecode once: with PYTHONDONTWRITEBYTECODE set (as in CI) every bridge
    subprocess would otherwise recompile every module from source, several hundred ms of CPU per spawn."""
    for package in ("registry_core", "presenters", "acp_bridge"):
        compileall.compile_dir(str(REPO / package), quiet=1)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    return ws


@pytest.fixture
async def bridges(tmp_path: Path) -> AsyncIterator[StartBridge]:
    """Start bridges with `await bridges(*serve_args, model=script, client=...)`. At teardown each is stopped
    and checked: every stdout line was a JSON-RPC 2.0 object, every frame matched the ACP schema, and no
    child process outlived it."""
    started: list[Bridge] = []

    async def start(*args: str, model: Path | str | None = None, client: RecordingClient | None = None,
                    **kwargs: Any) -> Bridge:  # fmt: skip
        bridge = await Bridge.start(
            *EXTRA_TOOLS,
            *args,
            model=model,
            client=client,
            pythonpath=[REPO],
            stderr_path=tmp_path / f"bridge{len(started)}.stderr",
            **kwargs,
        )
        started.append(bridge)
        return bridge

    yield start
    for bridge in started:
        await bridge.stop()
        assert not bridge.hung, "the bridge did not exit within 5 s of stdin closing"
        assert not bridge.survivors, f"child processes outlived the bridge: {bridge.survivors}"
        for line in bridge.raw_lines:
            frame = json.loads(line)
            assert isinstance(frame, dict), line
            assert frame.get("jsonrpc") == "2.0", line
        assert not bridge.schema_errors, "\n\n".join(bridge.schema_errors)


async def live_and_replayed(
    bridges: StartBridge, state: Path, workspace: Path, script: Path, text: str
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """The folded cards of one prompt (`text`) run live by a bridge keeping its log in `state`, and those of
    the same session loaded by a second bridge after the first stopped: what a reload must reproduce."""
    live = await bridges("--state-dir", str(state), model=script)
    await live.initialize()
    session_id = await live.new_session(workspace)
    assert await live.prompt(session_id, text) == "end_turn"
    live_cards = fold_cards(live.updates(session_id))
    await live.stop()
    again = await bridges("--state-dir", str(state), model=script)
    await again.initialize()
    await again.conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
    return live_cards, fold_cards(again.updates(session_id))
