"""Stored sessions through a real bridge (`--state-dir`): listing many, and reopening a long one.

Rows (issue "Fast on big repositories and long sessions, true on every card"):
- `session/list` over a state directory of 1,000 stored sessions (`SESSIONS`, written with the store
  itself: a header, a prompt, an answer and a title each), median of `LISTS` requests: <= 50 ms. Baseline:
  the median round trip of the same request on an empty state directory, same run;
- `session/resume` of a session of 5,000 calls (50 turns of 100 `read` calls, made once by the scripted
  model through a real bridge): <= 2× reading and parsing its log once with orjson (the least a resume
  can do), best of `REOPENS` each;
- `session/load` of the same session, which sends every card again: <= 2× writing its frames, measured
  as a process that only writes the very frames the bridge sent (already encoded) to the same client,
  best of `REOPENS` each.

The client is `bridge_bench.RawClient` (json.loads per line) for all of them.
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

import orjson

from acp_bridge.history.session_log import AssistantStep, SessionInfoChanged, UserPrompt
from acp_bridge.history.store import SessionStore

from .bridge_bench import LINE_LIMIT, RawClient, _byte_compile, _row

SESSIONS = 1_000
LISTS = 20
TURNS, CALLS = 50, 100
REOPENS = 3
LIST_TARGET_MS = 50.0


def stored_sessions(state: Path, cwd: Path, count: int = SESSIONS) -> None:
    """`count` sessions as the bridge stores them, each with its own modification time."""
    store = SessionStore(state)
    for n in range(count):
        session_id = f"sess_{n:032x}"
        store.begin(session_id, str(cwd), (str(cwd),))
        store.append(session_id, UserPrompt(f"task number {n}: look at the parser").to_json())
        store.append(session_id, AssistantStep(f"Done with task {n}.", "", ()).to_json())
        store.append(
            session_id, SessionInfoChanged(title=f"task number {n}", title_source="prompt").to_json()
        )
        store.end(session_id)
    store.close()


async def _list_rows(work: Path) -> list[dict[str, Any]]:
    cwd = work / "project"
    cwd.mkdir()
    state, empty = work / "listed-state", work / "empty-state"
    started = time.perf_counter()
    stored_sessions(state, cwd)
    made_s = time.perf_counter() - started
    model = work / "list-model.json"
    model.write_text(json.dumps({"turns": []}))
    times: dict[Path, list[float]] = {state: [], empty: []}
    for where in (state, empty):
        client = await RawClient.spawn("--model", f"scripted:{model}", cwd=str(cwd), state_dir=where)
        await client.initialize()
        for _ in range(LISTS):
            t = time.perf_counter()
            listed = await client.request("session/list", {})
            times[where].append((time.perf_counter() - t) * 1000)
        if where == state:
            assert len(listed["sessions"]) == 50 and listed.get("nextCursor"), listed.keys()
        await client.close()
    ms, base = statistics.median(times[state]), statistics.median(times[empty])
    return [
        _row(f"history: session/list, {SESSIONS:,} stored sessions (first page)", round(ms, 1), "ms",
             f"<= {LIST_TARGET_MS:.0f} ms", ms <= LIST_TARGET_MS,
             f"median of {LISTS}; an empty state dir {base:.1f} ms; the {SESSIONS:,} logs written in "
             f"{made_s:.1f} s")
    ]  # fmt: skip


async def _long_session(work: Path) -> tuple[Path, Path, str, float]:
    """A state dir holding one session of TURNS turns of CALLS reads, made by a real bridge."""
    ws = work / "long"
    ws.mkdir()
    for i in range(CALLS):
        (ws / f"f{i}.py").write_text(
            "".join(f"def function_{i}_{k}(x):\n    return x + {k}\n" for k in range(15))
        )
    reads = [[{"id": f"t{t}r{i}", "name": "read", "arguments": {"file_path": f"f{i}.py"}}
              for i in range(CALLS)] for t in range(TURNS)]  # fmt: skip
    steps = [[{"tool_calls": calls}, {"text": f"Read {CALLS} files."}] for calls in reads]
    model = work / "long-model.json"
    model.write_text(json.dumps({"turns": [{"steps": s} for s in steps]}))
    state = work / "long-state"
    client = await RawClient.spawn("--model", f"scripted:{model}", cwd=str(ws), state_dir=state)
    await client.initialize()
    session_id = await client.new_session(str(ws))
    started = time.perf_counter()
    for _ in range(TURNS):
        assert await client.prompt(session_id, "read them all") == "end_turn"
    made_s = time.perf_counter() - started
    await client.close()
    return ws, state, session_id, made_s


def _parse_once(log: Path) -> float:
    started = time.perf_counter()
    events = [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line]
    elapsed = time.perf_counter() - started
    assert len(events) > TURNS * CALLS
    return elapsed


async def _frames_writer(frames: Path, ws: Path) -> float:
    """Seconds for a process that writes `frames` (then the answer) to reach the client: the floor of a
    `session/load` that sends them."""
    script = (
        "import sys\n"
        "out = sys.stdout.buffer\n"
        "sys.stdin.buffer.readline()\n"
        f"out.write(open({str(frames)!r}, 'rb').read())\n"
        'out.write(b\'{"jsonrpc":"2.0","id":1,"result":{}}\\n\')\n'
        "out.flush()\n"
        "sys.stdin.buffer.read()\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        cwd=str(ws), limit=LINE_LIMIT,
    )  # fmt: skip
    client = RawClient(proc)
    started = time.perf_counter()
    await client.request("session/load", {})
    elapsed = time.perf_counter() - started
    await client.close()
    return elapsed


async def _reopen_rows(work: Path) -> list[dict[str, Any]]:
    ws, state, session_id, made_s = await _long_session(work)
    log = state / "sessions" / f"{session_id}.jsonl"
    size_mb = log.stat().st_size / 1e6
    model = work / "reopen-model.json"
    model.write_text(json.dumps({"turns": []}))
    params = {"sessionId": session_id, "cwd": str(ws)}
    resume: list[float] = []
    load: list[float] = []
    parse: list[float] = []
    floor: list[float] = []
    frames_file = work / "load-frames.jsonl"
    for run in range(REOPENS):
        parse.append(_parse_once(log))
        client = await RawClient.spawn("--model", f"scripted:{model}", cwd=str(ws), state_dir=state)
        await client.initialize()
        await client.new_session(str(ws))  # the core is loaded: the reopening alone is timed
        started = time.perf_counter()
        await client.request("session/resume", params)
        resume.append(time.perf_counter() - started)
        await client.close()

        client = await RawClient.spawn("--model", f"scripted:{model}", cwd=str(ws), state_dir=state)
        await client.initialize()
        await client.new_session(str(ws))
        updates: list[dict[str, Any]] = []
        client.on_update = updates.append
        started = time.perf_counter()
        await client.request("session/load", {**params, "mcpServers": []})
        load.append(time.perf_counter() - started)
        await client.close()
        if run == 0:
            assert sum(u.get("status") == "completed" for u in updates) == TURNS * CALLS
            frames = (
                orjson.dumps({"jsonrpc": "2.0", "method": "session/update",
                              "params": {"sessionId": session_id, "update": u}}) + b"\n"
                for u in updates
            )  # fmt: skip
            frames_file.write_bytes(b"".join(frames))
        floor.append(await _frames_writer(frames_file, ws))
    frames_mb = frames_file.stat().st_size / 1e6
    resume_ratio = min(resume) / min(parse)
    load_ratio = min(load) / min(floor)
    calls = f"{TURNS * CALLS:,}-call session ({size_mb:.1f} MB log, made in {made_s:.0f} s)"
    return [
        _row(f"history: session/resume of a {calls} / parsing its log", round(resume_ratio, 2), "×", "<= 2×",
             resume_ratio <= 2, f"resume {min(resume) * 1000:.0f} ms, one orjson parse of the log "
             f"{min(parse) * 1000:.0f} ms (best of {REOPENS} each)"),
        _row("history: session/load of that session / writing its frames", round(load_ratio, 2), "×",
             "<= 2×", load_ratio <= 2, f"load {min(load) * 1000:.0f} ms, {frames_mb:.1f} MB of frames "
             f"written to the same client {min(floor) * 1000:.0f} ms (best of {REOPENS} each)"),
    ]  # fmt: skip


async def _all(work: Path) -> list[dict[str, Any]]:
    return [*await _list_rows(work), *await _reopen_rows(work)]


def run() -> list[dict[str, Any]]:
    _byte_compile()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-history-") as tmp:
        return asyncio.run(_all(Path(tmp).resolve()))


if __name__ == "__main__":
    for row in run():
        print(row)
