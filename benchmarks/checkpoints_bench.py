"""Checkpoints on a big tree: a 30,000-file git repository (300 folders of 100 small files), one file
changed before each run.

Rows:
- a checkpoint (`ShadowStore.snapshot`: `ls-files` of the paths the kernel's watch named, `update-index`
  of what changed, `write-tree`; the store's first snapshot, which walks the tree, is not timed), median
  of the runs: <= 1.5x `git status --porcelain` on the same tree, measured in the same run (each with one
  file changed since its last run, so both see the same amount of work);
- how long after a `bash` command ends its card's diff is ready: from the moment the tool's body returned
  (an innermost execute wrapper notes it) to the moment the call's result, with its `fileChanges`, leaves
  the registry's pipeline (where the session's result observer completes the card): <= 100 ms. Baseline,
  in the same run: the same command without checkpoints (the pipeline's own time after the body), and
  `git status` on the tree (the floor: a snapshot walks the tree's stats as it does).
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from acp_bridge.checkpoints.service import CHECKPOINTS_SERVICE, SessionCheckpoints
from acp_bridge.checkpoints.store import _ENV, ShadowStore
from acp_bridge.checkpoints.wrapper import checkpoint_wrapper
from presenters import build_tools
from presenters.process_tree import PROCESSES_SERVICE, ProcessScope
from presenters.runtime import SCRATCH_SERVICE, ScratchDir
from registry_core import Agent, ToolExecution, ToolExecutionInput, ToolExecutionResult, ToolRegistry
from registry_core.policy import ExecuteNext

FOLDERS, FILES = 300, 100
RUNS = 7
RATIO_TARGET = 1.5
DIFF_TARGET_MS = 100.0


def _make_tree(root: Path) -> None:
    body = "".join(f"value_{i} = {i}\n" for i in range(20))
    for d in range(FOLDERS):
        folder = root / f"pkg{d}" / "sub"
        folder.mkdir(parents=True)
        for f in range(FILES):
            target = folder / f"f{f}.py" if f % 2 else folder.parent / f"m{f}.py"
            target.write_text(f"# {d}/{f}\n{body}")
    (root / ".gitignore").write_text("build/\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree", "--no-gpg-sign"]):
        env = {**_ENV, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
               "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
        subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)


def _touch(root: Path, k: int) -> None:
    with open(root / "pkg7" / f"m{2 * (k % 50)}.py", "a", encoding="utf-8") as handle:
        handle.write(f"# run {k}\n")


def _snapshot_vs_status(root: Path, state: Path, *, watch: bool = True) -> tuple[float, float]:
    store = ShadowStore(str(root), state / "roots" / ("bench" if watch else "walk"))
    store._watching = watch
    store.snapshot()  # the first one hashes every file, once
    subprocess.run(["git", "status", "--porcelain"], cwd=root, env=_ENV, check=True, capture_output=True)
    ours: list[float] = []
    status: list[float] = []
    for k in range(RUNS):
        _touch(root, 2 * k)
        started = time.perf_counter()
        subprocess.run(["git", "status", "--porcelain"], cwd=root, env=_ENV, check=True, capture_output=True)
        status.append(time.perf_counter() - started)
        _touch(root, 2 * k + 1)
        started = time.perf_counter()
        store.snapshot()
        ours.append(time.perf_counter() - started)
    return statistics.median(ours) * 1000, statistics.median(status) * 1000


async def _diff_latency(root: Path, state: Path, *, checkpoints: bool) -> float:
    registry = ToolRegistry()
    for tool in build_tools():
        registry.register(tool)
    body_ended: dict[str, float] = {}

    async def note_body_end(execution: ToolExecution, proceed: ExecuteNext) -> ToolExecutionResult:
        result = await proceed(execution)
        body_ended[execution.call_id] = time.perf_counter()
        return result

    registry.add_execute_wrapper(note_body_end)
    if checkpoints:
        registry.add_execute_wrapper(checkpoint_wrapper, outermost=True)
    scope, scratch = ProcessScope(), ScratchDir(parent=lambda: str(state))
    services: dict[str, Any] = {PROCESSES_SERVICE: scope, SCRATCH_SERVICE: scratch}
    if checkpoints:
        services[CHECKPOINTS_SERVICE] = SessionCheckpoints(state, "bench", (str(root),), str(root))
    agent = Agent(id="bench", cwd=str(root), roots=(str(root),), services=services)
    delays: list[float] = []
    try:
        for k in range(RUNS):
            command = f"sed -i 's/value_3 = 3/value_3 = {k + 100}/' pkg9/m{2 * k}.py"
            call = ToolExecutionInput(
                call_id=f"c{k}", name="bash", arguments={"command": command}, agent=agent
            )
            result = await registry.execute(call)
            done = time.perf_counter()
            assert not result.is_error, result
            if checkpoints:
                assert isinstance(result.meta, Mapping) and "fileChanges" in result.meta, result.meta
            delays.append(done - body_ended[call.call_id])
    finally:
        await scope.stop()
        scratch.remove()
    return statistics.median(delays) * 1000


def run() -> list[dict[str, Any]]:
    base = Path(tempfile.mkdtemp(prefix="acp-bridge-bench-checkpoints-"))
    try:
        root, state = base / "tree", base / "state"
        root.mkdir()
        _make_tree(root)
        ours, status = _snapshot_vs_status(root, state)
        walked, _ = _snapshot_vs_status(root, state, watch=False)
        with_diffs = asyncio.run(_diff_latency(root, state, checkpoints=True))
        without = asyncio.run(_diff_latency(root, state, checkpoints=False))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    ratio = ours / status
    files = FOLDERS * FILES
    return [
        {
            "name": f"checkpoints: a checkpoint of a {files:,}-file tree, one file changed (x git status)",
            "value": round(ratio, 2),
            "unit": f"x ({ours:.1f} ms)",
            "target": f"<= {RATIO_TARGET:g}x git status",
            "ok": ratio <= RATIO_TARGET,
            "baseline": f"git status --porcelain {status:.1f} ms; without a watch (a walk) {walked:.1f} ms",
        },
        {
            "name": f"checkpoints: a bash card's diff ready after the command ends ({files:,}-file tree)",
            "value": round(with_diffs, 1),
            "unit": "ms (median)",
            "target": f"<= {DIFF_TARGET_MS:g} ms",
            "ok": with_diffs <= DIFF_TARGET_MS,
            # The floor of a snapshot is one stat walk of the tree: what `git status` takes on it.
            "baseline": f"without checkpoints {without:.1f} ms; git status {status:.1f} ms",
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
