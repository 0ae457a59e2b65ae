"""The permission decision (`SessionPermissions.decide`) for typical calls, against a bare baseline in the
same run.

A session on a real temporary workspace with a few remembered rules, as after some minutes of use. Rows:
- `read` of a file three directories deep (no rule involved: the workspace test decides);
- `write` of a file allowed by an "always" rule;
- `bash` running a command allowed by a prefix rule (`npm test` covering `npm test -- --watch`).

Baseline (per row): the least a decision about that call must do: `os.path.realpath` of the path it
touches (the command's directory for `bash`) and a dict lookup. Each repeat times a batch of baselines and
a batch of decisions back to back and keeps their ratio, so the machine's load affects both alike; a row
reports the median ratio over the repeats and the median cost per decision.

Target: the ratio stays within 5% of `REFERENCE_RATIOS`, measured by this module's method on the
implementation before the policy judged every path first (the same machine, several runs, median), whose
figures were: read 1.40× (10.4 us), write with a rule 0.94× (4.4 us), bash with a prefix rule 12.8×
(43.4 us) the baseline.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions

BATCH = 2_000
REPEATS = 31
TOLERANCE = 1.05
REFERENCE_RATIOS = {"read": 1.40, "write": 0.94, "bash": 12.8}


def _per_call(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    for _ in range(BATCH):
        fn()
    return (time.perf_counter() - start) / BATCH


def _measure(decide: Callable[[], object], baseline: Callable[[], object]) -> tuple[float, float, float]:
    """(median ratio decide/baseline, median decide seconds, median baseline seconds)."""
    decide(), baseline()  # warm: caches and the first lstat of each path
    ratios, decides, baselines = [], [], []
    for _ in range(REPEATS):
        base = _per_call(baseline)
        cost = _per_call(decide)
        ratios.append(cost / base)
        decides.append(cost)
        baselines.append(base)
    return statistics.median(ratios), statistics.median(decides), statistics.median(baselines)


def _session(workspace: str) -> SessionPermissions:
    permissions = SessionPermissions(PolicyConfig(), workspace, (workspace,))
    for command in ("make test", "git status", "ls -la", "npm test"):
        permissions.remember(permissions.scope_for("bash", {"command": command}), allow=True)
    permissions.remember(permissions.scope_for("write", {"file_path": "notes.txt"}), allow=True)
    return permissions


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as tmp:
        workspace = os.path.realpath(tmp)
        os.makedirs(os.path.join(workspace, "src", "pkg"))
        for name in ("src/pkg/app.py", "notes.txt"):
            with open(os.path.join(workspace, name), "w") as f:
                f.write("x\n")
        permissions = _session(workspace)
        table = {os.path.join(workspace, "notes.txt"): True}
        cases: dict[str, tuple[str, dict[str, Any], str]] = {
            "read": ("read", {"file_path": "src/pkg/app.py"}, "src/pkg/app.py"),
            "write": ("write", {"file_path": "notes.txt", "content": "y\n"}, "notes.txt"),
            "bash": ("bash", {"command": "npm test -- --watch"}, "."),
        }
        labels = {
            "read": "read inside the workspace",
            "write": "write allowed by a rule",
            "bash": "bash allowed by a prefix rule",
        }
        rows: list[dict[str, Any]] = []
        for key, (tool, args, touched) in cases.items():
            path = os.path.join(workspace, touched)
            expected = permissions.decide(tool, args).kind
            assert expected == "allow", (key, expected)

            def decide(tool: str = tool, args: dict[str, Any] = args) -> object:
                return permissions.decide(tool, args)

            def baseline(path: str = path) -> object:
                return table.get(os.path.realpath(path))

            ratio, cost, base = _measure(decide, baseline)
            limit = REFERENCE_RATIOS[key] * TOLERANCE
            rows.append(
                {
                    "name": f"permissions: decide, {labels[key]}",
                    "value": round(ratio, 2),
                    "unit": f"x baseline ({cost * 1e6:.2f} us)",
                    "target": f"<= {limit:.2f} (reference {REFERENCE_RATIOS[key]} + 5%)",
                    "ok": ratio <= limit,
                    "baseline": f"realpath + dict lookup {base * 1e6:.2f} us",
                }
            )
        return rows


if __name__ == "__main__":
    for row in run():
        print(row)
