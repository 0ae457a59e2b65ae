"""Model controls end to end: a real `python -m acp_bridge serve` subprocess over pipes, scripted model.

Rows:
- `session/set_config_option` round trip (median of 60, alternating the mode): <= 20 ms, the budget of
  `session/new`; the baseline is `session/set_mode` in the same session (the same change without the
  config option's update);
- `/compact` of a 200-turn scripted session: <= 1,000 ms from the prompt to its answer (summary request,
  history rewrite, log), against the median ordinary turn of the same session;
- the context before and after that compaction, in tokens as the scripted model reports them (its
  estimate: four characters a token), from the `usage_update`s: the one after must be at most half.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bridge_bench import RawClient

TURNS = 200
ROUND_TRIPS = 60
WINDOW = 1_000_000


def _row(name: str, value: float, unit: str, target: str, ok: bool, baseline: str) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok, "baseline": baseline}


def _script(path: Path) -> str:
    answer = "I looked at the module and the tests; the change is in place and the suite passes. " * 2
    turns = [{"steps": [{"text": f"Turn {t}: {answer}"}]} for t in range(TURNS + 1)]
    summary = "The user asked for a series of small changes; each was made and tested. " * 5
    path.write_text(json.dumps({"turns": turns, "context_window": WINDOW, "usage": "estimate",
                                "summaries": [summary]}))  # fmt: skip
    return f"scripted:{path}"


async def _round_trips(client: RawClient, session_id: str) -> tuple[float, float]:
    """Median ms of `session/set_config_option` and of `session/set_mode`, interleaved."""
    option_ms: list[float] = []
    mode_ms: list[float] = []
    for i in range(ROUND_TRIPS):
        mode = "plan" if i % 2 else "default"
        started = time.perf_counter()
        await client.request(
            "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": mode}
        )
        option_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        await client.request("session/set_mode", {"sessionId": session_id, "modeId": mode})
        mode_ms.append((time.perf_counter() - started) * 1000)
    return statistics.median(option_ms), statistics.median(mode_ms)


async def _run(work: Path) -> list[dict[str, Any]]:
    model = _script(work / "long.json")
    # Logged (the compaction's record included), as an editor runs it; no threshold compaction on the way.
    client = await RawClient.spawn(
        "--model", model, "--compact-at", "off", "--state-dir", str(work / "state"), cwd=str(work)
    )
    used: list[int] = []
    client.on_update = lambda update: (
        used.append(int(update["used"])) if update.get("sessionUpdate") == "usage_update" else None
    )
    try:
        await client.initialize()
        session_id = await client.new_session(str(work))
        option, mode = await _round_trips(client, session_id)
        turn_ms: list[float] = []
        prompt = "Please make the next small change in the module, then run the tests again. " * 2
        for t in range(TURNS):
            started = time.perf_counter()
            await client.prompt(session_id, f"{t}: {prompt}")
            turn_ms.append((time.perf_counter() - started) * 1000)
        before = used[-1]
        started = time.perf_counter()
        await client.prompt(session_id, "/compact")
        compact_ms = (time.perf_counter() - started) * 1000
        await client.prompt(session_id, f"{TURNS}: {prompt}")
        after = used[-1]
    finally:
        await client.close()
    turn = statistics.median(turn_ms)
    return [
        _row("model controls: session/set_config_option round trip", round(option, 2), "ms", "<= 20 ms",
             option <= 20, f"session/set_mode {mode:.2f} ms"),
        _row(f"model controls: /compact of a {TURNS}-turn session", round(compact_ms, 1), "ms", "<= 1000 ms",
             compact_ms <= 1000, f"one ordinary turn {turn:.1f} ms (median)"),
        _row("model controls: context after that compaction", after, "tokens", "<= 50% of before",
             after <= before / 2, f"before {before} tokens ({after / before:.0%} kept)"),
    ]  # fmt: skip


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-controls-bench-") as tmp:
        return asyncio.run(_run(Path(tmp)))


if __name__ == "__main__":
    for row in run():
        print(row)
