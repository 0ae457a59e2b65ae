"""Code Mode (`run_code`): what the sandbox costs, each figure against a baseline measured in the same run.

Rows:
- sandbox start for one program, cold (a fresh Deno cache: a session's first program) and warm (the
  session's cache: every later one), from `run_program` called to its outcome (spawn, prelude, the
  program's import and run, the kill), median of several runs, against spawning `python3 -c pass` to its
  exit. Targets: warm <= 2x and cold <= 3x `python3 -c pass` (the boundary costs about as much as starting
  an interpreter, so a fresh process per program is affordable).
- one turn of a program making 200 `read` sub-calls (`Promise.all`), end to end through the bridge (each
  sub-call a full dispatch with its own card), against one turn of 200 top-level `read` calls in the same
  session: >= 0.5x the top-level rate. Best of 3 turns each.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.bridge_bench import RawClient, _byte_compile

READS = 200
RUNS = 9
TURNS = 3

PROGRAM = f"""\
const names = Array.from({{ length: {READS} }}, (_, i) => `f${{i}}.txt`);
const reads = await Promise.all(names.map((file_path) => read({{ file_path }})));
return reads.length;"""


def _row(name: str, value: float, unit: str, target: str, ok: bool, baseline: str) -> dict[str, Any]:
    return {"name": name, "value": value, "unit": unit, "target": target, "ok": ok, "baseline": baseline}


async def _python_pass_ms() -> float:
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec("python3", "-c", "pass")
    await proc.wait()
    return (time.perf_counter() - started) * 1000


async def _program_ms(work: Path, cache: Path | None) -> float:
    from presenters.deno_sandbox import CallReply, run_program

    async def no_calls(_tool: str, _args: Any) -> CallReply:
        return CallReply(False, error="no tools here")

    started = time.perf_counter()
    outcome = await run_program(
        "export default async function (tools: any) { return 1; }\n",
        [],
        no_calls,
        stop_calls=lambda: None,
        parent_dir=str(work),
        cache_dir=str(cache) if cache is not None else None,
    )
    elapsed = (time.perf_counter() - started) * 1000
    assert outcome.ending == "returned" and outcome.value == 1, outcome
    return elapsed


async def _startup(work: Path) -> list[dict[str, Any]]:
    cold, warm, python = [], [], []
    cache = work / "deno-cache"
    await _program_ms(work, cache)  # the session's cache, warmed once
    for _ in range(RUNS):
        # Interleaved, so a busy machine weighs on all three alike.
        python.append(await _python_pass_ms())
        cold.append(await _program_ms(work, None))
        warm.append(await _program_ms(work, cache))
    py, c, w = statistics.median(python), statistics.median(cold), statistics.median(warm)
    base = f"python3 -c pass {py:.0f} ms (median of {RUNS})"
    return [
        _row("code mode: sandbox start, warm", round(w, 1), "ms", "<= 2x python3 -c pass", w <= 2 * py,
             f"{base}; {w / py:.2f}x"),
        _row("code mode: sandbox start, cold", round(c, 1), "ms", "<= 3x python3 -c pass", c <= 3 * py,
             f"{base}; {c / py:.2f}x"),
    ]  # fmt: skip


async def _reads(work: Path) -> list[dict[str, Any]]:
    ws = work / "reads"
    ws.mkdir()
    for i in range(READS):
        (ws / f"f{i}.txt").write_text(f"line one of file {i}\nline two\n")
    top = [{"id": f"t{t}r{i}", "name": "read", "arguments": {"file_path": f"f{i}.txt"}} for t in range(TURNS)
           for i in range(READS)]  # fmt: skip
    turns = [[{"tool_calls": top[t * READS : (t + 1) * READS]}, {"text": "done"}] for t in range(TURNS)]
    programs = [{"id": f"p{t}", "name": "run_code", "arguments": {"code": PROGRAM}} for t in range(TURNS)]
    turns += [[{"tool_calls": [program]}, {"text": "done"}] for program in programs]
    path = work / "reads.json"
    path.write_text(json.dumps({"turns": [{"steps": steps} for steps in turns]}))
    client = await RawClient.spawn("--model", f"scripted:{path}", cwd=str(ws))
    await client.initialize()
    session_id = await client.new_session(str(ws))
    completed: dict[str, str] = {}

    def count(update: dict[str, Any]) -> None:
        if update.get("status") in ("completed", "failed"):
            completed[str(update.get("toolCallId"))] = str(update["status"])

    client.on_update = count
    times: dict[str, list[float]] = {"top": [], "code": []}
    for kind in ("top", "code"):
        for _ in range(TURNS):
            started = time.perf_counter()
            stop = await client.prompt(session_id, "read them all")
            times[kind].append(time.perf_counter() - started)
            assert stop == "end_turn", stop
    await client.close()
    subcalls = [call_id for call_id in completed if ":code:" in call_id]
    assert len(subcalls) == READS * TURNS, len(subcalls)
    assert all(status == "completed" for status in completed.values())
    top_rate, code_rate = READS / min(times["top"]), READS / min(times["code"])
    ratio = code_rate / top_rate
    return [
        _row(f"code mode: one program making {READS} read sub-calls, end to end", round(code_rate), "calls/s",
             ">= 0.5x top-level reads", ratio >= 0.5,
             f"{READS} top-level reads in one turn: {top_rate:.0f} calls/s (same session); {ratio:.2f}x; "
             f"best of {TURNS} turns each"),
    ]  # fmt: skip


async def _all(work: Path) -> list[dict[str, Any]]:
    return [*await _startup(work), *await _reads(work)]


def run() -> list[dict[str, Any]]:
    _byte_compile()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as tmp:
        return asyncio.run(_all(Path(tmp).resolve()))


if __name__ == "__main__":
    for row in run():
        print(row, file=sys.stdout)
