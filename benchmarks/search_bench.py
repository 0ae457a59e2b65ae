"""`grep` and `glob` on big trees, end to end through a real bridge, against raw ripgrep in the same run.

Rows (issue "Fast on big repositories and long sessions, true on every card"), each a ratio to ripgrep
run by hand on the same tree:
- a Python library tree (a copy of this interpreter's stdlib folder, made a git repository):
  `grep` content mode ("def __init__") <= 1.3× `rg -n`; `grep` files mode <= 1.3× `rg -l`;
  `glob` "**/*.py" <= 1.5× `rg --files -g '*.py'`;
- the same three on a synthetic tree of 300,000 files (`SYNTHETIC_FILES`): a few hundred small files,
  each linked under many names (hard links), so it builds in seconds and takes almost no disk.

Each row checks the tool's totals against ripgrep's (matching lines, files, paths) before it counts.

What is timed: the bridge (`python -m acp_bridge serve`, the scripted model) runs turns of one call, each
right after a trivial turn (one text step) in the same session; a call costs its turn minus that trivial
turn: the search, its cards, the mapping and the frame on the pipe. ripgrep runs with its output read
through a pipe, as the bridge reads it (ripgrep stops at a file's first match when it writes to /dev/null,
which would flatter it). Runs of the bridge and of ripgrep alternate, and each side's best of `RUNS`
counts, so a busy machine slows both alike.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .bridge_bench import RawClient, _byte_compile, _row

RUNS = 5
SYNTHETIC_FILES = 300_000
PATTERN = "def __init__"
_FILES_FOUND = re.compile(r" in ([0-9,]+) files?")


def library_tree(where: Path) -> Path:
    """A copy of the running interpreter's stdlib folder, made a git repository."""
    root = where / "python-library"
    shutil.copytree(sysconfig.get_paths()["stdlib"], root, symlinks=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _module(variant: int) -> str:
    """A small Python module; one in three defines classes with `__init__` methods."""
    lines = [f'"""Module variant {variant}."""', "", "import os", ""]
    for k in range(3 if variant % 3 == 1 else 0):
        lines += [f"class Thing{k}:", f"    def __init__(self, value={k}):", "        self.value = value", ""]
    lines += [f"def helper_{variant}(x):", "    return os.path.join(str(x), 'y')", ""]
    return "\n".join(lines)


def synthetic_tree(where: Path, files: int = SYNTHETIC_FILES) -> Path:
    """`files` files in directories of 100 (30 `.py`, 50 `.txt`, 20 `.md`), a git repository with a
    .gitignore; each file a hard link to one of a few hundred small originals with their own mtimes."""
    root = where / "synthetic"
    originals = root / "originals"
    originals.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    kinds = {"py": 30, "txt": 50, "md": 20}
    made: dict[str, list[Path]] = {}
    for kind in kinds:
        made[kind] = []
        for variant in range(100):
            path = originals / f"{kind}{variant:03d}.{kind}"
            body = _module(variant) if kind == "py" else f"notes {variant}\n" * (1 + variant % 7)
            path.write_text(body)
            os.utime(path, (1_600_000_000 + variant * 97, 1_600_000_000 + variant * 97))
            made[kind].append(path)
    count = sum(len(paths) for paths in made.values())
    directory = 0
    while count < files:
        folder = root / f"pkg{directory // 100:03d}" / f"sub{directory % 100:02d}"
        folder.mkdir(parents=True)
        for kind, per_folder in kinds.items():
            for i in range(per_folder):
                if count == files:
                    break
                os.link(made[kind][(directory * 7 + i) % 100], folder / f"m{i:02d}.{kind}")
                count += 1
        directory += 1
    return root


# --- the two sides ------------------------------------------------------------------------------------


def _raw(argv: list[str], cwd: Path) -> tuple[float, bytes]:
    started = time.perf_counter()
    out = subprocess.run(argv, cwd=cwd, capture_output=True, check=True).stdout
    return time.perf_counter() - started, out


class _Bridge:
    """A bridge whose scripted model answers each prompt with its next turn: trivial, call, trivial, ..."""

    def __init__(self, client: RawClient, session_id: str) -> None:
        self.client = client
        self.session_id = session_id
        self.last: dict[str, Any] = {}
        client.on_update = self._on_update

    def _on_update(self, update: dict[str, Any]) -> None:
        if update.get("status") == "completed":
            self.last = update

    async def turn(self) -> float:
        started = time.perf_counter()
        stop = await self.client.prompt(self.session_id, "go")
        assert stop == "end_turn", stop
        return time.perf_counter() - started


def _script(path: Path, calls: list[tuple[str, dict[str, Any]]]) -> str:
    turns = []
    for n, (name, arguments) in enumerate(calls):
        turns.append({"steps": [{"text": "ok"}]})
        call = {"id": f"c{n}", "name": name, "arguments": arguments}
        turns.append({"steps": [{"tool_calls": [call]}, {"text": "done"}]})
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


Case = tuple[str, str, dict[str, Any], list[str], Callable[[bytes], int], str]


def _cases(root: Path) -> list[Case]:
    """(row name, tool, arguments, ripgrep's argv, count of ripgrep's output, target) per row."""
    r = str(root)
    return [
        ("grep content", "grep", {"pattern": PATTERN, "output_mode": "content"}, ["rg", "-n", PATTERN, r],
         lambda out: out.count(b"\n"), "1.3"),
        ("grep files", "grep", {"pattern": PATTERN}, ["rg", "-l", PATTERN, r],
         lambda out: out.count(b"\n"), "1.3"),
        ("glob **/*.py", "glob", {"pattern": "**/*.py"}, ["rg", "--files", "-g", "*.py", r],
         lambda out: out.count(b"\n"), "1.5"),
    ]  # fmt: skip


async def _measure(tree: str, root: Path, work: Path) -> list[dict[str, Any]]:
    cases = _cases(root)
    calls = [(tool, arguments) for _, tool, arguments, _, _, _ in cases for _ in range(RUNS)]
    model = _script(work / f"{tree}.json", calls)
    client = await RawClient.spawn("--model", model, cwd=str(root))
    await client.initialize()
    bridge = _Bridge(client, await client.new_session(str(root)))
    rows = []
    try:
        for name, tool, _arguments, argv, count, target in cases:
            ours: list[float] = []
            raw: list[float] = []
            expected = 0
            for _ in range(RUNS):
                raw_s, out = _raw(argv, root)
                raw.append(raw_s)
                expected = count(out)
                trivial = await bridge.turn()
                ours.append(await bridge.turn() - trivial)
            found = bridge.last.get("rawOutput", {}).get("total")
            assert found == expected, (name, found, expected)
            if tool == "grep" and "content" in name:
                files = len(set(_raw(["rg", "-l", PATTERN, str(root)], root)[1].split(b"\n")) - {b""})
                text = bridge.last["content"][0]["content"]["text"]
                shown = _FILES_FOUND.search(text)
                assert shown is not None and int(shown.group(1).replace(",", "")) == files, (
                    text[:200],
                    files,
                )
            ratio = min(ours) / min(raw)
            rows.append(
                _row(f"search: {tree}, {name}, bridge / ripgrep", round(ratio, 2), "×", f"<= {target}×",
                     ratio <= float(target), f"{min(ours) * 1000:.0f} ms vs {' '.join(argv[:-1])} "
                     f"{min(raw) * 1000:.0f} ms ({expected:,} found; best of {RUNS} each, a call's turn "
                     f"minus a trivial turn)")
            )  # fmt: skip
    finally:
        await client.close()
    return rows


async def _all(work: Path) -> list[dict[str, Any]]:
    if shutil.which("rg") is None:
        return [{"name": "search: ripgrep is not on PATH", "ok": False}]
    started = time.perf_counter()
    library = library_tree(work)
    files = sum(len(names) for _, _, names in os.walk(library))
    print(f"  library tree: {files:,} files in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    rows = await _measure(f"Python library tree ({files:,} files)", library, work)
    shutil.rmtree(library)
    started = time.perf_counter()
    synthetic = synthetic_tree(work)
    print(
        f"  synthetic tree: {SYNTHETIC_FILES:,} files in {time.perf_counter() - started:.1f} s",
        file=sys.stderr,
    )
    rows += await _measure(f"synthetic tree ({SYNTHETIC_FILES:,} files)", synthetic, work)
    return rows


def run() -> list[dict[str, Any]]:
    _byte_compile()
    with tempfile.TemporaryDirectory(prefix="acp-bridge-search-") as tmp:
        return asyncio.run(_all(Path(tmp).resolve()))


if __name__ == "__main__":
    for row in run():
        print(row)
