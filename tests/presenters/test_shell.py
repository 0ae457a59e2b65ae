"""`bash` end to end with real processes: output and exit status, live progress, bounded output with a
spill file, timeouts and cancellation that leave no process of the group alive, and its cards."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest

from presenters import shell
from presenters.process_tree import KILL_GRACE_S, ProcessWatch, all_processes
from presenters.process_tree import RESCAN_S as GROUP_RESCAN_S
from presenters.shell import HEAD_BYTES, TAIL_BYTES
from registry_core import CancelController, TerminalCallView, TerminalOutputProgress, TerminalResultView

from .conftest import Session, text_of

pytestmark = pytest.mark.slow


def live_members(pgid: int) -> list[psutil.Process]:
    """Processes of the group that are still running (zombies are dead; PID 1 may not reap them)."""
    out = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def streamed(session: Session) -> str:
    return "".join(p.data for p in session.progress if isinstance(p, TerminalOutputProgress))


async def test_output_exit_code_and_cards(session: Session) -> None:
    args = {"command": "echo out; echo err >&2; exit 3", "description": "Print twice"}

    result = await session.run("bash", args)

    assert not result.is_error  # the command ran; it failed: the value says so
    assert text_of(result) == "out\nerr\nExit code: 3"
    assert result.meta["exit_code"] == 3 and result.meta["signal"] is None
    assert streamed(session) == "out\nerr\n"
    call = session.call_card("bash", args)
    assert call == TerminalCallView(title=args["command"], description="Print twice", cwd=None)
    card = session.result_card("bash", args, result)
    assert card == TerminalResultView(output="out\nerr\n", exit_code=3)


async def test_runs_in_the_session_cwd_or_a_relative_workdir(session: Session) -> None:
    (session.cwd / "sub").mkdir()

    here = await session.run("bash", {"command": "pwd"})
    sub = await session.run("bash", {"command": "pwd", "workdir": "sub"})
    missing = await session.run("bash", {"command": "pwd", "workdir": "nope"})

    assert here.meta["output"] == f"{session.cwd}\n"
    assert sub.meta["output"] == f"{session.cwd / 'sub'}\n"
    assert missing.error is not None and missing.error.code == "NOT_FOUND"
    assert session.call_card("bash", {"command": "ls", "workdir": "sub"}).cwd == "sub"


async def test_stdin_is_empty_and_no_output_is_said(session: Session) -> None:
    result = await session.run("bash", {"command": "cat"})
    assert text_of(result) == "(no output)\nExit code: 0"


async def test_a_signal_death_is_reported(session: Session) -> None:
    result = await session.run("bash", {"command": "kill -TERM $$"})
    assert result.meta["signal"] == "SIGTERM" and result.meta["exit_code"] is None
    assert text_of(result).endswith("Killed by signal SIGTERM.")


async def test_timeout_fails_with_the_partial_output_and_kills_the_group(session: Session) -> None:
    args = {"command": "echo $$; echo started; sleep 30 & sleep 30", "timeout": 400}
    started = time.monotonic()

    result = await session.run("bash", args)

    assert time.monotonic() - started < 3
    assert result.is_error and result.error is not None and result.error.code == "TIMEOUT"
    assert "started" in result.error.message and "timed out after 0.4 s" in result.error.message
    assert result.meta["timed_out"] is True and result.meta["output"].endswith("started\n")
    pgid = int(result.meta["output"].split()[0])
    assert live_members(pgid) == []
    card = session.result_card("bash", args, result)
    assert isinstance(card, TerminalResultView) and card.output is not None and "timed out" in card.output


async def test_the_kill_grace_does_not_scan_all_processes_on_every_poll(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The whole group ignores SIGTERM, so the grace runs to its end before the SIGKILL.
    scans = 0
    scandir = os.scandir

    def counting(path: Any = ".") -> Any:
        nonlocal scans
        scans += path == "/proc"
        return scandir(path)

    monkeypatch.setattr(shell.os, "scandir", counting)
    started = time.monotonic()
    result = await session.run("bash", {"command": "trap '' TERM; echo $$; sleep 30", "timeout": 200})
    monkeypatch.undo()

    assert time.monotonic() - started >= 0.2 + KILL_GRACE_S  # the grace ran its course
    assert result.error is not None and result.error.code == "TIMEOUT"
    # Polled every 20 ms, but /proc is read whole only every GROUP_RESCAN_S (once, then 0.2 s, 0.4 s).
    assert 1 <= scans <= KILL_GRACE_S / GROUP_RESCAN_S + 2
    assert live_members(int(result.meta["output"].split()[0])) == []


def test_the_group_watch_finds_members_forked_after_its_first_scan() -> None:
    # A shell that, once told to, starts a background member, prints its pid, and exits.
    leader = subprocess.Popen(
        ["bash", "-c", "read _; sleep 30 & echo $!"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert leader.stdin is not None and leader.stdout is not None
    late = None
    try:
        watch = ProcessWatch(lambda: {p.pid: p for p in all_processes() if p.pgid == leader.pid})
        assert watch.alive() and list(watch.members) == [leader.pid]
        leader.stdin.write(b"go\n")
        leader.stdin.close()
        late = int(leader.stdout.readline())
        leader.wait()
        assert watch.alive()  # its only known member is gone: a rescan finds the late one
        assert list(watch.members) == [late]
        os.kill(late, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while watch.alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not watch.alive()
    finally:
        if leader.poll() is None:
            leader.kill()
            leader.wait()
        if late is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(late, signal.SIGKILL)
        leader.stdout.close()


async def test_timeout_above_the_maximum_is_rejected(session: Session) -> None:
    result = await session.run("bash", {"command": "true", "timeout": 600_001})
    assert result.error is not None and result.error.code == "INVALID_ARGS"


async def test_cancellation_kills_the_whole_group(session: Session) -> None:
    controller = CancelController()
    first_output = asyncio.Event()
    session.progress = ProgressList(first_output)

    async def cancel_when_running() -> None:
        await first_output.wait()
        controller.cancel()

    canceller = asyncio.ensure_future(cancel_when_running())
    started = time.monotonic()
    result = await session.run(
        "bash", {"command": "echo $$; (sleep 30; echo late) & sleep 30"}, signal=controller.signal
    )
    await canceller

    assert time.monotonic() - started < 2
    assert result.error is not None and result.error.code == "CANCELLED"
    pgid = int(streamed(session).split()[0])
    assert live_members(pgid) == []  # the shell, both sleeps and the subshell: the whole group


async def test_a_cancelled_command_keeps_its_output_and_how_it_ended_for_the_card(session: Session) -> None:
    controller = CancelController()
    first_output = asyncio.Event()
    session.progress = ProgressList(first_output)

    async def cancel_when_running() -> None:
        await first_output.wait()  # "started" was read: the cancel cuts a command that has output
        controller.cancel()

    canceller = asyncio.ensure_future(cancel_when_running())
    result = await session.run("bash", {"command": "echo started; sleep 30"}, signal=controller.signal)
    await canceller

    assert result.error is not None and result.error.code == "CANCELLED"
    # The durable result (what replay reads) carries the partial output and the signal that ended it.
    assert result.meta is not None
    assert result.meta["output"].startswith("started")
    assert result.meta["signal"] == "SIGTERM"
    assert result.meta["exit_code"] is None
    view = session.result_card("bash", {"command": "echo started; sleep 30"}, result)
    assert isinstance(view, TerminalResultView)
    assert view.output is not None and view.output.startswith("started")
    assert view.signal == "SIGTERM"


class ProgressList(list[object]):
    def __init__(self, event: asyncio.Event) -> None:
        super().__init__()
        self.event = event

    def append(self, item: object) -> None:
        super().append(item)
        self.event.set()


async def test_large_output_keeps_head_and_tail_and_spills_the_rest(session: Session, tmp_path: Path) -> None:
    # 2,000,000 bytes of numbered lines: far above the 32 KiB kept for the model.
    command = "seq -f '%09g' 1 200000"

    result = await session.run("bash", {"command": command})

    meta = result.meta
    assert meta["truncated"] is True and meta["total_bytes"] == 2_000_000
    spill = Path(meta["full_output_path"])
    assert spill.parent == tmp_path / "spill"
    expected = "".join(f"{i:09d}\n" for i in range(1, 200_001))
    assert spill.read_text() == expected  # noqa: ASYNC240 - a test's own check
    assert streamed(session) == expected
    output = meta["output"]
    assert output.startswith("000000001\n") and output.endswith("000200000\n")
    assert f"bytes omitted; the full output is in {spill}" in output
    assert len(output) < HEAD_BYTES + TAIL_BYTES + 200
    card = session.result_card("bash", {"command": command}, result)
    assert isinstance(card, TerminalResultView) and card.full_output_path == str(spill)


async def test_multibyte_characters_survive_chunk_boundaries(session: Session) -> None:
    # 200,000 "é" (2 bytes each): chunk edges fall inside characters.
    result = await session.run("bash", {"command": "python3 -c \"print('é' * 200000, end='')\""})

    assert streamed(session) == "é" * 200_000
    output = result.meta["output"]
    assert "\ufffd" not in output
    head, _, tail = output.partition("\n\n[...")
    assert set(head) == {"é"} and tail.endswith("é" * 100)


async def test_a_background_process_holding_the_output_does_not_hang_the_call(session: Session) -> None:
    started = time.monotonic()
    held = await session.run("bash", {"command": "echo $$; sleep 30 & echo started"})
    assert time.monotonic() - started < 2
    assert held.meta["exit_code"] == 0 and "started" in held.meta["output"]
    assert live_members(int(held.meta["output"].split()[0])) == []


async def test_a_detached_background_process_is_left_running(session: Session) -> None:
    result = await session.run("bash", {"command": "nohup sleep 30 >/dev/null 2>&1 & echo $!"})
    pid = int(result.meta["output"])
    try:
        assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    finally:
        os.kill(pid, signal.SIGKILL)
