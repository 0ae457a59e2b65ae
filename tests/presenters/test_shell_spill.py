"""`bash` when the full output cannot be saved: the output is still drained, the command runs to its end
promptly, and the call fails with the reason, the head and tail it kept, and no partial file left behind.
And the session's scratch directory: the spill file goes there, and goes away with it.

The failures are real: a spill directory that does not exist (the open fails), and a file size limit
(RLIMIT_FSIZE, in a child process running the tool) that makes the kernel refuse a write half-way.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from presenters.runtime import SCRATCH_SERVICE, ScratchDir

from .conftest import Session

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
LINES = 200_000
LONG = f"seq -f '%09g' 1 {LINES}"  # 2 MB, numbered lines: far beyond the 32 KiB kept for the model


async def test_an_unwritable_spill_directory_fails_the_call_promptly_with_the_reason(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    unusable = ScratchDir(parent=lambda: str(tmp_path / "missing"))  # mkdtemp fails: ENOENT
    session = make_session(services={SCRATCH_SERVICE: unusable})
    started = time.monotonic()

    result = await session.run("bash", {"command": LONG, "timeout": 30_000})

    assert time.monotonic() - started < 5  # not the timeout: the pipe kept being drained
    assert result.error is not None and result.error.code == "IO_ERROR"
    assert "full output could not be saved (No such file or directory)" in result.error.message
    meta = result.meta
    assert meta["exit_code"] == 0 and meta["timed_out"] is False  # the command ran to its end
    assert meta["total_bytes"] == LINES * 10 and meta["full_output_path"] is None
    assert meta["output"].startswith("000000001\n") and meta["output"].endswith(f"{LINES:09d}\n")
    assert "the full output could not be saved: No such file or directory" in meta["output"]
    card = session.result_card("bash", {"command": LONG}, result)
    assert card.output == result.error.message and card.full_output_path is None


_FULL_DISK = textwrap.dedent(
    """
    import asyncio, json, os, resource, signal, sys, time
    from presenters import build_tools
    from registry_core import Agent, ToolExecutionInput, ToolRegistry

    spill, work, limit, command = sys.argv[1:5]
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), resource.RLIM_INFINITY))
    registry = ToolRegistry()
    for tool in build_tools(bash_spill_dir=spill):
        registry.register(tool)
    agent = Agent(id="s", cwd=work, roots=(work,))
    started = time.monotonic()
    result = asyncio.run(registry.execute(ToolExecutionInput(
        "b1", "bash", {"command": command, "timeout": 30000}, agent=agent)))
    print(json.dumps({
        "seconds": time.monotonic() - started,
        "code": result.error.code if result.error else None,
        "message": result.error.message if result.error else None,
        "meta": dict(result.meta or {}),
        "left": os.listdir(spill),
    }))
    """
)


def test_a_write_refused_half_way_drops_the_file_and_fails_promptly(tmp_path: Path) -> None:
    spill, work = tmp_path / "spill", tmp_path / "work"
    spill.mkdir()
    work.mkdir()
    limit = 256 * 1024  # the file holds 256 KiB of the 2 MB, then every write fails
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(spill), str(work), str(limit), LONG],
        capture_output=True,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    outcome = json.loads(done.stdout)
    assert outcome["seconds"] < 5
    assert outcome["code"] == "IO_ERROR"
    assert "full output could not be saved (File too large)" in outcome["message"]
    assert outcome["meta"]["exit_code"] == 0 and outcome["meta"]["total_bytes"] == LINES * 10
    assert outcome["meta"]["output"].endswith(f"{LINES:09d}\n")  # drained to the very end
    assert outcome["left"] == []  # the partial file is gone


async def test_the_spill_file_lives_in_the_session_scratch_directory_until_it_is_removed(
    make_session: Callable[..., Session], tmp_path: Path
) -> None:
    scratch = ScratchDir(parent=lambda: str(tmp_path), prefix="s1-")
    session = make_session(services={SCRATCH_SERVICE: scratch})

    result = await session.run("bash", {"command": LONG})

    path = Path(result.meta["full_output_path"])
    assert path.parent == Path(scratch.path()) and path.parent.parent == tmp_path
    assert f"the full output is in {path}" in result.meta["output"]  # the model is told where
    assert path.stat().st_size == LINES * 10  # noqa: ASYNC240 - a test's own check
    scratch.remove()
    assert not path.parent.exists()

    # A command that outlives its session (nothing may be left behind): no file, and it says why.
    late = await session.run("bash", {"command": LONG})
    assert late.error is not None and late.error.code == "IO_ERROR"
    assert "scratch directory was removed" in late.error.message
    assert list(tmp_path.glob("s1-*")) == []  # noqa: ASYNC240
