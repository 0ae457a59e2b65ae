"""`bash` stops every process a command started, not only its process group: `setsid` children, `nohup`
jobs and double-forked daemons too, found by the token in their environment (`process_tree`). What a
finished command left in the background belongs to the session's `ProcessScope` and stops with it.
Reaping never takes a child someone else forked and waits for."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Callable

import pytest

from presenters import process_tree
from presenters.process_tree import MARKER, PROCESSES_SERVICE, ProcessScope, read_proc, reap_adopted
from registry_core import CancelController
from tests.support.process_marks import assert_all_gone, escaping, new_mark, wait_started

from .conftest import Session

pytestmark = pytest.mark.slow


async def test_cancellation_stops_setsid_nohup_and_daemon_children_too(session: Session) -> None:
    mark = new_mark()
    controller = CancelController()

    async def cancel_when_started() -> None:
        await wait_started(mark)
        controller.cancel()

    canceller = asyncio.ensure_future(cancel_when_started())
    result = await session.run("bash", {"command": escaping(mark)}, signal=controller.signal)
    await canceller

    assert result.error is not None and result.error.code == "CANCELLED"
    await assert_all_gone(mark)


async def test_a_timeout_stops_setsid_nohup_and_daemon_children_too(session: Session) -> None:
    mark = new_mark()
    result = await session.run("bash", {"command": escaping(mark), "timeout": 1500})
    assert result.error is not None and result.error.code == "TIMEOUT"
    await assert_all_gone(mark)


async def test_an_escaped_child_holding_the_output_is_stopped_with_the_command(session: Session) -> None:
    mark = new_mark()
    started = time.monotonic()
    result = await session.run(
        "bash", {"command": f"setsid bash -c 'exec -a {mark} sleep 300' & echo started"}
    )
    assert time.monotonic() - started < 3
    assert result.meta["exit_code"] == 0 and "started" in result.meta["output"]
    await assert_all_gone(mark)


async def test_the_session_scope_stops_what_finished_commands_left_in_the_background(
    make_session: Callable[..., Session],
) -> None:
    scope = ProcessScope()
    session = make_session(services={PROCESSES_SERVICE: scope})
    first, second = new_mark(), new_mark()
    for mark in (first, second):
        result = await session.run("bash", {"command": escaping(mark, foreground=None)})
        assert result.meta["exit_code"] == 0 and "started" in result.meta["output"]
    await wait_started(first, foreground=False)  # redirected background jobs outlive their call
    await wait_started(second, foreground=False)

    await scope.stop()

    await assert_all_gone(first)
    await assert_all_gone(second)


async def test_every_process_of_a_command_carries_its_token(session: Session) -> None:
    result = await session.run("bash", {"command": f'echo "${MARKER}"; bash -c \'echo "${MARKER}"\''})
    own, child = result.meta["output"].split()
    assert own == child and own.startswith(f"{os.getpid()}-")
    again = await session.run("bash", {"command": f'echo "${MARKER}"'})
    assert again.meta["output"].strip() != own  # one token per command


def _zombie(pid: int) -> bool:
    proc = read_proc(pid)
    return proc is not None and proc.zombie


def test_reaping_never_takes_a_child_this_process_forked() -> None:
    # One fork in a session of its own (like a bash shell), one in ours (like ripgrep): both exited and
    # unwaited, they are zombie children of ours, exactly what an adopted orphan looks like.
    own_session = subprocess.Popen(["sh", "-c", "exit 5"], start_new_session=True)
    same_session = subprocess.Popen(["sh", "-c", "exit 6"])
    deadline = time.monotonic() + 5
    while not (_zombie(own_session.pid) and _zombie(same_session.pid)):
        assert time.monotonic() < deadline, "the children did not exit"
        time.sleep(0.01)

    assert reap_adopted({}) == 0

    # Their own waiter still gets their real exit status (a stolen one would read as 0 or 255).
    assert (own_session.wait(5), same_session.wait(5)) == (5, 6)


async def test_without_proc_a_timed_out_command_is_still_stopped_as_its_process_group(
    session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where there is no /proc (not Linux), the command's process group is all that can be found.
    monkeypatch.setattr(process_tree, "HAVE_PROC", False)
    mark = new_mark()
    result = await session.run(
        "bash", {"command": f"(exec -a {mark} sleep 300) & exec -a {mark} sleep 300", "timeout": 300}
    )
    assert result.error is not None and result.error.code == "TIMEOUT"
    await assert_all_gone(mark)
