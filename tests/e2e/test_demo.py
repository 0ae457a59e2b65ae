"""`acp-bridge demo` as a user runs it (not a TTY here, so approvals are allowed and it says so): a real
bridge subprocess, cards as they arrive, the edit's diff, live terminal output, the plan, a summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

from tests.support.bridge_harness import REPO


def test_the_demo_runs_offline_end_to_end_and_exits_zero(tmp_path: Path) -> None:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(REPO)}
    for key in ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    done = subprocess.run(
        [sys.executable, "-m", "acp_bridge", "demo", "--workspace", str(tmp_path / "ws")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=tmp_path,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr
    assert "\x1b[" not in out  # NO_COLOR
    assert "Read notes.md" in out
    assert "permission needed: Edit app.py" in out
    assert "not a terminal" in out
    assert '+GREETING = "hello, editor"' in out
    assert '-GREETING = "hello"' in out
    assert "│ [1/3] hello, editor" in out  # live terminal output of `python3 app.py`
    assert "[x] Make the greeting in app.py friendlier" in out
    assert "turn ended: end_turn" in out
    assert "app.py: changed (+1 -1)" in out
    # The second turn: one Code Mode program, its calls nested under its card.
    assert "✔ Check app.py, then tidy notes.md [execute, done]" in out
    assert "    └ ✔ Read notes.md [read, done]" in out
    assert "permission needed: Edit notes.md" in out
    assert "    └ ✔ Edit notes.md [edit, done]" in out
    assert "3. ✓ Edit notes.md" in out
    assert "notes.md: changed (+1 -1)" in out
    assert (tmp_path / "ws" / "app.py").read_text().count('"hello, editor"') == 1
    assert not [p for p in psutil.Process().children(recursive=True) if p.is_running()]
