"""The system prompt (`acp_bridge.session.system_prompt`): its size, and what taking the environment costs.

Rows:
- the size of the built-in prompt in tokens, for a session with every built-in tool, Code Mode on and MCP
  servers, in a git repository with uncommitted changes, without project instructions (no AGENTS.md):
  at most 3,000 tokens, estimated at four characters a token (`system_prompt.TOKEN_CHARS`: no tokenizer
  is loaded; real tokenizers give about that for English text and code). Baseline: the smallest prompt,
  a session with `read` alone in a folder that is no repository;
- the environment probe of that repository (`environment.probe_environment`: one bounded `git status`),
  median of `PROBES`: at most 150 ms, since a first prompt sent at once after `session/new` waits for it.
  Baseline: the median of spawning `git --version`, the least any git probe costs.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from datetime import date
from typing import Any

from acp_bridge.session.environment import probe_environment
from acp_bridge.session.system_prompt import CODE_MODE_ONLY, MCP, TOKEN_CHARS, build, compose, estimate_tokens

PROBES = 15
TOKEN_TARGET = 3_000
PROBE_TARGET_MS = 150.0
EVERY_TOOL = (
    "read",
    "write",
    "edit",
    "bash",
    "grep",
    "glob",
    "web_fetch",
    "todo_write",
    "ask_user",
    "run_code",
    "task",
)


def _git(cwd: str, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


def _repository(root: str) -> None:
    _git(root, "init", "-q", "-b", "main")
    for i in range(30):
        with open(os.path.join(root, f"module_{i}.py"), "w") as f:
            f.write(f"x = {i}\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "start")
    for i in range(5):
        with open(os.path.join(root, f"module_{i}.py"), "a") as f:
            f.write("y = 1\n")
    for i in range(4):
        with open(os.path.join(root, f"new_{i}.py"), "w") as f:
            f.write("")


def _median_ms(fn: Any) -> float:
    times = []
    for _ in range(PROBES):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="acp-bridge-bench-") as tmp:
        repo, plain = os.path.join(tmp, "repo"), os.path.join(tmp, "plain")
        os.makedirs(repo)
        os.makedirs(plain)
        _repository(repo)
        today = date(2030, 1, 2)
        full = compose(build(probe_environment([repo], today=today), {*EVERY_TOOL, MCP}), None)
        least = compose(build(probe_environment([plain], today=today), {"read"}), None)
        only = compose(
            build(probe_environment([repo], today=today), {*EVERY_TOOL, MCP, CODE_MODE_ONLY}), None
        )
        tokens = max(estimate_tokens(full), estimate_tokens(only))
        probe = _median_ms(lambda: probe_environment([repo]))
        spawn = _median_ms(lambda: subprocess.run(["git", "--version"], capture_output=True, check=True))
    return [
        {
            "name": "system prompt, every tool, no project instructions",
            "value": tokens,
            "unit": f"tokens (~{TOKEN_CHARS} chars/token)",
            "target": f"<= {TOKEN_TARGET:,} tokens",
            "ok": tokens <= TOKEN_TARGET,
            "baseline": f"{estimate_tokens(least)} tokens (read alone, no repository)",
        },
        {
            "name": "environment probe of a git root (git status)",
            "value": round(probe, 1),
            "unit": "ms (median)",
            "target": f"<= {PROBE_TARGET_MS:g} ms",
            "ok": probe <= PROBE_TARGET_MS,
            "baseline": f"{spawn:.1f} ms (git --version)",
        },
    ]
