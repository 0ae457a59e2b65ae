"""Run every benchmark and print one table: `python -m benchmarks` (or `make bench`).

Each module exposes `run() -> list[dict]`; a row has name, value, unit, target, ok and a baseline measured
in the same run. Exit status 1 when any row misses its target, so the command can gate a release.
`python -m benchmarks registry presenters` runs a subset.
"""

from __future__ import annotations

import importlib
import sys
import time
from typing import Any

MODULES = {
    "registry": "benchmarks.registry_bench",
    "presenters": "benchmarks.presenters_bench",
    "bridge": "benchmarks.bridge_bench",
    "floor": "benchmarks.floor_bench",
    "permissions": "benchmarks.permissions_bench",
    "mcp": "benchmarks.mcp_bench",
    "controls": "benchmarks.model_controls_bench",
    "code_mode": "benchmarks.code_mode_bench",
    "prompt": "benchmarks.prompt_bench",
    "background": "benchmarks.background_bench",
    "steering": "benchmarks.steering_bench",
    "search": "benchmarks.search_bench",
    "history": "benchmarks.history_bench",
    "vscode": "benchmarks.vscode_bench",
    "checkpoints": "benchmarks.checkpoints_bench",
}


def _cell(row: dict[str, Any]) -> str:
    if "value" in row:
        return f"{row['value']} {row.get('unit', '')}".strip()
    if "median_ms" in row:
        return f"{row['median_ms']} ms (median)"
    return "?"


def main(argv: list[str]) -> int:
    chosen = argv or list(MODULES)
    rows: list[dict[str, Any]] = []
    for key in chosen:
        module_name = MODULES.get(key)
        if module_name is None:
            print(f"unknown benchmark group {key!r}; choose from {', '.join(MODULES)}", file=sys.stderr)
            return 2
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            rows.append({"name": f"{key}: not available ({exc})", "ok": False})
            continue
        started = time.perf_counter()
        print(f"running {key} benchmarks…", file=sys.stderr, flush=True)
        rows.extend(module.run())
        print(f"  {key} took {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)

    headers = ("benchmark", "measured", "target", "ok", "baseline (same run)")
    table = [
        (
            str(r["name"]),
            _cell(r),
            str(r.get("target", "")),
            "yes" if r.get("ok") else "NO",
            str(r.get("baseline", "")),
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))
    print(line)
    print("  ".join("-" * w for w in widths))
    for t in table:
        print("  ".join(c.ljust(w) for c, w in zip(t, widths, strict=True)))
    return 0 if all(r.get("ok") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
