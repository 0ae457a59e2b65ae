"""MCP servers through the bridge, against the official SDK's client alone, in the same run.

Rows:
- an MCP tool call through the bridge, end to end, per call: prompts whose model asks for `CALLS` calls
  of `echo` on the workbench server (tests/acp_bridge/mcp/servers/workbench.py, stdio), one per step, or
  all in one step (run `PARALLEL` at a time by the registry's scheduler), timed from `session/prompt` to
  its answer; the baseline is the same `CALLS` calls made with the SDK's `ClientSession` over its own
  `stdio_client`, against the same server in the same environment, one at a time or `PARALLEL` at a time,
  in rounds that alternate with the bridge's. Target: <= 1.5x the baseline (what the bridge adds: the model
  steps, the policy, the cards and the ACP frames);
- `session/new` with three stdio MCP servers, answered: <= 20 ms (they start in the background; the
  baseline is `session/new` without servers in the same bridge);
- spawn → `initialize` with `--mcp-config` naming three servers: no slower than without (the SDK is not
  imported before a session has servers; 20% allowed for the noise of a busy machine).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .bridge_bench import RawClient, _byte_compile, _row

REPO = Path(__file__).resolve().parents[1]
WORKBENCH = ["-m", "tests.acp_bridge.mcp.servers.workbench", "stdio"]
CALLS = 100
ROUNDS = 7
PARALLEL = 8  # the registry scheduler's pool (registry_core.scheduler.DEFAULT_MAX_PARALLEL)


def _server(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "command": sys.executable,
        "args": WORKBENCH,
        "env": [{"name": "PYTHONPATH", "value": str(REPO)}],
    }


async def _calls(work: Path, parallel: bool) -> tuple[float, float, float]:
    """Seconds per `echo` call (through the bridge, with the SDK alone), each the best of `ROUNDS` rounds
    of `CALLS` calls, and the median ratio of neighbouring rounds: the rounds alternate (SDK, bridge, SDK,
    …) so each pair meets the machine's load alike.

    Through the bridge a round is one prompt whose model asks for the calls one per step, or all in one
    step (`parallel`: the scheduler runs `PARALLEL` at a time), timed from `session/prompt` to its answer.
    With the SDK alone a round is the same calls, one at a time or `PARALLEL` at a time."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    def turn(index: int, calls: int) -> list[dict[str, Any]]:
        asked = [{"id": f"t{index}c{i}", "name": "mcp__bench__echo", "arguments": {"message": f"m{i}"}}
                 for i in range(calls)]  # fmt: skip
        steps = [{"tool_calls": asked}] if parallel else [{"tool_calls": [call]} for call in asked]
        return [*steps, {"text": "done"}]

    script = work / f"calls-{parallel}.json"
    turns = [turn(0, PARALLEL)] + [turn(t + 1, CALLS) for t in range(ROUNDS)]
    script.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    # The environment the bridge gives its stdio servers (the user's), so the server runs alike for both.
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    params = StdioServerParameters(command=sys.executable, args=WORKBENCH, env=env)
    width = PARALLEL if parallel else 1
    direct: list[float] = []
    bridged: list[float] = []
    client = await RawClient.spawn(
        "--model", f"scripted:{script}", "--allow-tool", "mcp__bench__echo", "--max-steps", str(CALLS + 1),
        cwd=str(work),
    )  # fmt: skip
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as sdk:
            await sdk.initialize()
            await sdk.list_tools()
            pool = asyncio.Semaphore(width)

            async def one(i: int) -> None:
                async with pool:
                    result = await sdk.call_tool("echo", {"message": f"m{i}"})
                    assert not result.is_error

            await client.initialize()
            session = await client.request(
                "session/new", {"cwd": str(work), "mcpServers": [_server("bench")]}
            )
            session_id = str(session["sessionId"])
            completed: list[str] = []
            client.on_update = lambda u: (
                completed.append(u["status"]) if u.get("status") in ("completed", "failed") else None
            )
            await asyncio.gather(*(one(i) for i in range(PARALLEL)))
            assert await client.prompt(session_id, "warm up") == "end_turn"
            for _ in range(ROUNDS):
                started = time.perf_counter()
                await asyncio.gather(*(one(i) for i in range(CALLS)))
                direct.append((time.perf_counter() - started) / CALLS)
                started = time.perf_counter()
                assert await client.prompt(session_id, "call it") == "end_turn"
                bridged.append((time.perf_counter() - started) / CALLS)
            assert completed == ["completed"] * (PARALLEL + ROUNDS * CALLS), completed[:3]
    finally:
        await client.close()
    # Each pair of neighbouring rounds met about the same load: the median of their ratios.
    ratio = statistics.median(b / d for b, d in zip(bridged, direct, strict=True))
    return min(bridged), min(direct), ratio


async def _session_new(work: Path) -> tuple[float, float, float]:
    """Median ms of `session/new` with three servers, the largest, and the median without servers."""
    client = await RawClient.spawn("--model", "scripted", cwd=str(work))
    with_servers: list[float] = []
    without: list[float] = []
    try:
        await client.initialize()
        for _ in range(10):
            started = time.perf_counter()
            await client.new_session(str(work))
            without.append((time.perf_counter() - started) * 1000)
        servers = [_server(f"s{i}") for i in range(3)]
        for _ in range(8):
            started = time.perf_counter()
            session = await client.request("session/new", {"cwd": str(work), "mcpServers": servers})
            with_servers.append((time.perf_counter() - started) * 1000)
            # Untimed: the servers stop with their session, so the next sample meets an idle bridge.
            await client.request("session/close", {"sessionId": session["sessionId"]})
    finally:
        await client.close()
    return statistics.median(with_servers), max(with_servers), statistics.median(without)


async def _spawn_once(work: Path, *args: str) -> float:
    started = time.perf_counter()
    client = await RawClient.spawn("--model", "scripted", *args, cwd=str(work))
    await client.initialize()
    elapsed = (time.perf_counter() - started) * 1000
    await client.close()
    return elapsed


async def _spawns(work: Path, config: Path) -> tuple[float, float, float]:
    """Median ms from spawn to `initialize` answered, with `--mcp-config` and without (5 of each,
    alternating), and the median ratio of neighbouring pairs."""
    with_config, without = [], []
    for _ in range(5):
        without.append(await _spawn_once(work))
        with_config.append(await _spawn_once(work, "--mcp-config", str(config)))
    ratio = statistics.median(a / b for a, b in zip(with_config, without, strict=True))
    return statistics.median(with_config), statistics.median(without), ratio


async def _all(work: Path) -> list[dict[str, Any]]:
    rows = []
    for parallel in (False, True):
        bridged, direct, ratio = await _calls(work, parallel)
        shape, width = ("a step of 100", PARALLEL) if parallel else ("one per step", 1)
        rows.append(
            _row(f"mcp: echo call through the bridge ({shape})", round(bridged * 1000, 2), "ms/call",
                 "<= 1.5x the SDK alone", ratio <= 1.5,
                 f"SDK client alone, {width} at a time: {direct * 1000:.2f} ms/call (best of {ROUNDS} rounds "
                 f"of {CALLS}); {ratio:.2f}x (median of neighbouring rounds)")
        )  # fmt: skip
    new_ms, new_max, plain_ms = await _session_new(work)
    config = work / "mcp.json"
    servers = {f"s{i}": {"command": sys.executable, "args": WORKBENCH, "env": {"PYTHONPATH": str(REPO)}}
               for i in range(3)}  # fmt: skip
    config.write_text(json.dumps({"mcpServers": servers}))
    mcp_spawn, plain_spawn, spawn_ratio = await _spawns(work, config)
    return [
        *rows,
        _row("mcp: session/new with 3 stdio servers", round(new_ms, 2), "ms", "<= 20 ms", new_ms <= 20,
             f"max {new_max:.1f} ms; without servers {plain_ms:.2f} ms (median)"),
        _row("mcp: spawn → initialize with --mcp-config (3 servers)", round(mcp_spawn), "ms",
             "<= 1.2x without", spawn_ratio <= 1.2,
             f"without {plain_spawn:.0f} ms (median of 5, alternating); {spawn_ratio:.2f}x"),
    ]  # fmt: skip


def run() -> list[dict[str, Any]]:
    _byte_compile()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-mcp-bench-") as tmp:
        return asyncio.run(_all(Path(tmp).resolve()))


if __name__ == "__main__":
    for row in run():
        print(row)
