"""The 200-read turn in process: the bridge's core (SessionManager, turn loop, registry, presenters, mapping)
with a channel that only encodes each update as the ACP face does (`stdio.encode_frame`), so a profiler
sees the core's own cost per call without pipes, a second process or the interpreter's start-up.

    python -m benchmarks.turn_profile                 # calls/s of the core alone
    python -m benchmarks.turn_profile --profile 15    # plus cProfile's top 15 (cumulative and tottime)
    python -m benchmarks.turn_profile --history       # with the session log and checkpoints (the default
                                                      # of the bridge, and of floor_bench's row)

Each turn's CPU time is printed beside its wall-clock time: on a busy machine the CPU time per call is
the steadier figure to compare two commits by.

Not a row of `python -m benchmarks`: the end-to-end rows (bridge_bench, floor_bench) are the figures that
count; this is the magnifying glass for them.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from acp_bridge.client.channel import ClientCapabilities, PermissionOutcome
from acp_bridge.models import load_backend
from acp_bridge.runtime.boot import load_tools
from acp_bridge.runtime.stdio import encode_frame
from acp_bridge.session.manager import CoreConfig, SessionManager

READS = 200


class EncodingChannel:
    """A client that reads everything at once: each update is encoded as a frame and dropped."""

    def __init__(self) -> None:
        self.capabilities = ClientCapabilities(terminal_meta=True)
        self.completed = 0
        self.bytes = 0

    def send_update(self, session_id: str, update: dict[str, Any]) -> None:
        frame = {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": update},
        }
        self.bytes += len(encode_frame(frame))
        if update.get("status") == "completed":
            self.completed += 1

    async def drain(self) -> None:
        return None

    def backlog(self) -> int:
        return 0

    async def request_permission(
        self, session_id: str, tool_call: dict[str, Any], options: list[dict[str, Any]]
    ) -> PermissionOutcome:
        return PermissionOutcome("selected", "allow_once")

    async def read_text_file(self, session_id: str, path: str) -> str:
        raise NotImplementedError

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise NotImplementedError


async def turns(
    work: Path, count: int, history: bool = False, profiler: cProfile.Profile | None = None
) -> list[tuple[float, float]]:
    """Seconds (wall clock, and this process's CPU time) of each of `count` turns, each one step of READS
    reads; `history`: as the bridge runs by default, with its session log and checkpoints in a state
    directory under `work`. `profiler` sees the warm turns only (not the set-up, nor the first turn's
    imports and caches)."""
    ws = work / "ws"
    ws.mkdir(exist_ok=True)
    for i in range(READS):
        (ws / f"f{i}.txt").write_text(f"line one of file {i}\nline two\n")
    steps = [[{"tool_calls": [{"id": f"t{t}r{i}", "name": "read", "arguments": {"file_path": f"f{i}.txt"}}
                               for i in range(READS)]}, {"text": "done"}] for t in range(count)]  # fmt: skip
    script = work / "reads.json"
    script.write_text(json.dumps({"turns": [{"steps": s} for s in steps]}))
    channel = EncodingChannel()
    store = None
    config = CoreConfig()
    if history:
        from acp_bridge.history.store import SessionStore
        from acp_bridge.runtime.stdio import set_output_barrier

        store = SessionStore(work / "state")
        set_output_barrier(store.flush)  # as `runtime.boot` does: the log flushed before each frame
        config = CoreConfig(checkpoints_dir=str(work / "state" / "checkpoints"))
    manager = SessionManager(
        channel, load_backend(f"scripted:{script}"), load_tools([]), config, recorder=store
    )
    session = manager.new_session(str(ws))
    times = []
    for index in range(count):
        if profiler is not None and index == 1:
            profiler.enable()
        started, cpu = time.perf_counter(), time.process_time()
        stop = await session.prompt([{"type": "text", "text": "read them all"}])
        times.append((time.perf_counter() - started, time.process_time() - cpu))
        assert stop == "end_turn", stop
    if profiler is not None:
        profiler.disable()
    assert channel.completed == READS * count, channel.completed
    await manager.shutdown()
    return times


# The asyncio machinery every callback passes through: it tops the cumulative list and says nothing.
_PLUMBING = ("asyncio/runners.py", "asyncio/base_events.py", "asyncio/events.py", "'_contextvars.Context'")
_PACKAGES = ("registry_core", "presenters", "acp_bridge")


def _short(file: str) -> str:
    parts = file.split("/")
    for i, part in enumerate(parts):
        if part in _PACKAGES:
            return "/".join(parts[i:])
    return "/".join(parts[-2:])


def _top(stats: pstats.Stats, key: str, count: int) -> str:
    rows = []
    index = 0 if key == "cumulative" else 1
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for (file, line, name), (_, calls, tottime, cumtime, _) in raw.items():
        where = f"{_short(file)}:{line}({name})" if line else name
        if not any(p in where for p in _PLUMBING):
            rows.append((cumtime, tottime, calls, where))
    rows.sort(key=lambda r: r[index], reverse=True)
    lines = [f"{'cumtime':>8} {'tottime':>8} {'calls':>7}  function"]
    lines += [f"{c:8.3f} {t:8.3f} {n:7d}  {w}" for c, t, n, w in rows[:count]]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.turn_profile")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--history", action="store_true", help="keep the session log and checkpoints")
    parser.add_argument("--profile", type=int, metavar="TOP", default=0, help="print cProfile's top lines")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="acp-bridge-turn-") as tmp:
        profiler = cProfile.Profile() if args.profile else None
        times = asyncio.run(turns(Path(tmp).resolve(), args.turns, args.history, profiler))
    warm = times[1:] or times  # the first turn warms caches
    best, best_cpu = min(t for t, _ in warm), min(c for _, c in warm)
    print(f"core alone: {READS / best:,.0f} calls/s, {best / READS * 1e6:.1f} us/call, "
          f"{best_cpu / READS * 1e6:.1f} us CPU/call (best of {len(warm)} warm turns)")  # fmt: skip
    if profiler is not None:
        stats = pstats.Stats(profiler)
        for key in ("cumulative", "tottime"):
            print(f"\ntop {args.profile} by {key} (event-loop plumbing left out):")
            print(_top(stats, key, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
