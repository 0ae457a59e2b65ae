"""Benchmarks of the built-in tools (issue 3), each against a baseline measured in the same run.

- `edit` with replace_all on a 100,000-line (~4.8 MB) file with 100 sites, through the registry:
  <= 50 ms median. Baseline: read + str.replace + write of the same file, no hunks.
- `write` overwriting that file with 1% of its lines changed, hunks included: <= 250 ms median.
  Baseline: a plain write of the same content. A second row checks the chosen diff against difflib.
- `read` of a 2,000-line window at the end of a 100 MB file: <= 150 ms median, memory flat (peak RSS
  growth <= 16 MB). Baseline: reading the file whole and slicing the last 2,000 lines.
- `bash` printing 100 MB: peak RSS growth of the process running the tool <= 64 MB. Baseline: the
  process's RSS before, and subprocess.run(capture_output=True) on the same command.

Memory rows run in a fresh child process (`python -m benchmarks.presenters_bench --child KIND ...`), so
the peak (`ru_maxrss`) belongs to that measurement alone. Each timing is the median of several runs; the
file is restored between runs, outside the timed part.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from presenters import build_tools
from presenters.diffs import line_diff_hunks
from registry_core import Agent, ToolExecutionInput, ToolRegistry

LINES = 100_000
SITES = 100
RUNS = 7
BIG_FILE_MB = 100
BASH_MB = 100


def make_lines(n: int = LINES, seed: int = 1) -> list[str]:
    """Code-like lines (~48 bytes on average) with the repeats real code has (blank lines, returns)."""
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        k = i % 10
        if k == 0:
            lines.append("\n")
        elif k == 1:
            lines.append(f"def function_{i}(arg_{i % 13}, value=None):\n")
        elif k == 9:
            lines.append("    return result\n")
        else:
            lines.append(
                f"    result_{i} = compute(value, {rnd.randint(0, 10**6)}, 'text-{i % 101}')  # note\n"
            )
    return lines


def change_lines(lines: list[str], fraction: float = 0.01, seed: int = 2) -> list[str]:
    rnd = random.Random(seed)
    out = list(lines)
    for i in rnd.sample(range(len(out)), int(len(out) * fraction)):
        out[i] = f"    changed_{i} = 1  # modified line\n"
    return out


def _median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _registry(cwd: str) -> tuple[ToolRegistry, Agent]:
    registry = ToolRegistry()
    for tool in build_tools():
        registry.register(tool)
    return registry, Agent(id="bench", cwd=cwd, roots=(cwd,))


def _timed(
    loop: asyncio.AbstractEventLoop, reset: Callable[[], None], call: Callable[[], Any]
) -> list[float]:
    samples = []
    for _ in range(RUNS):
        reset()
        started = time.perf_counter()
        result = loop.run_until_complete(call())
        samples.append(time.perf_counter() - started)
        if getattr(result, "is_error", False):
            raise RuntimeError(f"benchmark call failed: {result.error}")
    return samples


def _edit_and_write_rows(tmp: Path) -> list[dict[str, Any]]:
    lines = make_lines()
    for i in range(5, LINES, LINES // SITES):
        lines[i] = lines[i].replace("compute", "MARKER_FN")
    original = "".join(lines)
    assert original.count("MARKER_FN") == SITES
    changed = "".join(change_lines(lines))
    path = tmp / "big.py"
    registry, agent = _registry(str(tmp))
    loop = asyncio.new_event_loop()

    def reset() -> None:
        path.write_text(original)

    def edit() -> Any:
        args = {
            "file_path": "big.py",
            "old_string": "MARKER_FN",
            "new_string": "renamed_fn",
            "replace_all": True,
        }
        return registry.execute(ToolExecutionInput("e", "edit", args, agent=agent))

    def write() -> Any:
        return registry.execute(
            ToolExecutionInput("w", "write", {"file_path": "big.py", "content": changed}, agent=agent)
        )

    def plain_edit() -> Any:
        async def run() -> None:
            path.write_text(path.read_text().replace("MARKER_FN", "renamed_fn"))

        return run()

    def plain_write() -> Any:
        async def run() -> None:
            path.write_text(changed)

        return run()

    try:
        edit_ms, edit_base = (
            _median_ms(_timed(loop, reset, edit)),
            _median_ms(_timed(loop, reset, plain_edit)),
        )
        write_ms, write_base = (
            _median_ms(_timed(loop, reset, write)),
            _median_ms(_timed(loop, reset, plain_write)),
        )
    finally:
        loop.close()

    # The diff choice, on a 20,000-line slice (difflib on the whole file takes ~15 s).
    a, b = original.splitlines(True)[:20_000], changed.splitlines(True)[:20_000]
    started = time.perf_counter()
    line_diff_hunks("".join(a), "".join(b))
    ours = time.perf_counter() - started
    started = time.perf_counter()
    list(difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3))
    theirs = time.perf_counter() - started
    size = f"{len(original) / 1e6:.1f} MB"
    return [
        {
            "name": f"edit replace_all, {LINES:,} lines ({size}), {SITES} sites",
            "median_ms": edit_ms,
            "target": "<= 50 ms",
            "ok": edit_ms <= 50,
            "baseline": f"read+str.replace+write {edit_base} ms",
        },
        {
            "name": f"write overwrite, {LINES:,} lines, 1% changed, hunks",
            "median_ms": write_ms,
            "target": "<= 250 ms",
            "ok": write_ms <= 250,
            "baseline": f"plain write {write_base} ms",
        },
        {
            "name": "overwrite line diff, 20,000 lines (scan + patience)",
            "median_ms": round(ours * 1000, 2),
            "target": "faster than difflib",
            "ok": ours < theirs,
            "baseline": f"difflib.SequenceMatcher {round(theirs * 1000, 1)} ms",
        },
    ]


# --- memory rows, in child processes ----------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/self/status")


def _rss_kb() -> int:
    return _status_kb("VmRSS")


def _reset_peak() -> None:
    """Restart the peak-RSS mark (VmHWM) at the current RSS. (ru_maxrss cannot be used: it survives
    exec, so a child would report its parent's size at fork time.)"""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass  # older kernels: VmHWM then also counts the interpreter's start-up, a bit pessimistic


def _child(kind: str, arg: str) -> dict[str, Any]:
    """Runs in a fresh interpreter: measure one thing, report JSON on stdout."""
    cwd = os.path.dirname(arg) if kind.startswith("read") else tempfile.gettempdir()
    registry, agent = _registry(cwd)
    loop = asyncio.new_event_loop()
    if kind == "read":
        total = sum(1 for _ in open(arg, "rb"))  # noqa: SIM115 - closed by the GC; untimed warm-up
        args = {"file_path": arg, "offset": total - 1999, "limit": 2000}
        call = lambda: registry.execute(ToolExecutionInput("r", "read", args, agent=agent))  # noqa: E731
        loop.run_until_complete(call())  # warm up (imports, caches) before the baseline RSS
        _reset_peak()
        before = _rss_kb()
        samples = _timed(loop, lambda: None, call)
    elif kind == "read-baseline":
        _reset_peak()
        before = _rss_kb()
        samples = []
        for _ in range(3):
            started = time.perf_counter()
            with open(arg, encoding="utf-8") as f:
                f.read().splitlines()[-2000:]
            samples.append(time.perf_counter() - started)
    elif kind == "bash":
        received = 0

        def sink(_execution: Any, update: Any) -> None:
            nonlocal received
            received += len(update.data)  # consumed like a bridge would: counted, not kept

        command = f"yes 'a line of output from a chatty build tool' | head -c {BASH_MB * 1_000_000}"
        loop.run_until_complete(
            registry.execute(ToolExecutionInput("w", "bash", {"command": "true"}, agent=agent))
        )
        _reset_peak()
        before = _rss_kb()
        started = time.perf_counter()
        result = loop.run_until_complete(
            registry.execute(
                ToolExecutionInput("b", "bash", {"command": command}, agent=agent, on_progress=sink)
            )
        )
        samples = [time.perf_counter() - started]
        spill = result.meta["full_output_path"]
        assert received == BASH_MB * 1_000_000 and os.path.getsize(spill) == received
        os.unlink(spill)
    elif kind == "bash-baseline":
        _reset_peak()
        before = _rss_kb()
        started = time.perf_counter()
        command = f"yes 'a line of output from a chatty build tool' | head -c {BASH_MB * 1_000_000}"
        subprocess.run(["bash", "-c", command], capture_output=True, check=True)
        samples = [time.perf_counter() - started]
    else:
        raise SystemExit(f"unknown child {kind!r}")
    peak = _status_kb("VmHWM")
    return {"before_kb": before, "growth_kb": max(0, peak - before), "median_ms": _median_ms(samples)}


def _run_child(kind: str, arg: str = "") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.presenters_bench", "--child", kind, arg],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _memory_rows(tmp: Path) -> list[dict[str, Any]]:
    big = tmp / "huge.log"
    line = b"2026-01-01T00:00:00 INFO service: request handled in 12 ms\n"  # 60 bytes
    block = line * 10_000
    with open(big, "wb") as f:
        for _ in range(BIG_FILE_MB * 1_000_000 // len(block)):
            f.write(block)
    read = _run_child("read", str(big))
    read_base = _run_child("read-baseline", str(big))
    bash = _run_child("bash")
    bash_base = _run_child("bash-baseline")
    mb = lambda kb: round(kb / 1024, 1)  # noqa: E731
    return [
        {
            "name": f"read 2,000-line window at the end of a {BIG_FILE_MB} MB file",
            "median_ms": read["median_ms"],
            "target": "<= 150 ms, peak RSS growth <= 16 MB",
            "ok": read["median_ms"] <= 150 and mb(read["growth_kb"]) <= 16,
            "baseline": f"peak RSS growth {mb(read['growth_kb'])} MB; whole-file read "
            f"{read_base['median_ms']} ms, +{mb(read_base['growth_kb'])} MB",
        },
        {
            "name": f"bash printing {BASH_MB} MB (streamed, spilled to a file)",
            "value": mb(bash["growth_kb"]),
            "unit": "MB peak RSS growth",
            "target": "<= 64 MB",
            "ok": mb(bash["growth_kb"]) <= 64,
            "baseline": f"RSS before {mb(bash['before_kb'])} MB; {bash['median_ms']} ms "
            f"({round(BASH_MB / (bash['median_ms'] / 1000))} MB/s); capture_output=True "
            f"+{mb(bash_base['growth_kb'])} MB",
        },
    ]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="presenters-bench-") as tmp:
        return _edit_and_write_rows(Path(tmp)) + _memory_rows(Path(tmp))


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        print(json.dumps(_child(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")))
    else:
        for row in run():
            print(row)
