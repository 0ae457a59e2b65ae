"""Commands whose processes try every way out of their call, each recognisable by a unique mark.

`escaping(mark)` starts, in the background with its output redirected, a plain `&` job, a `nohup` job, a
`setsid` child (a new session) and a double-forked `setsid` daemon (re-parented as soon as its parent
subshell exits); each process's argv[0] starts with `mark`, so they are found by scanning every process
(`marked`), not only the bridge's descendants: an orphan the bridge failed to adopt would be PID 1's.
With `foreground`, the command then keeps running (a marked `sleep`, or marked output every 50 ms).
"""

from __future__ import annotations

import uuid

import psutil

from tests.support.eventually import eventually

ESCAPES = ("bg", "nohup", "setsid", "daemon")


def new_mark() -> str:
    return f"acpmark{uuid.uuid4().hex[:12]}"


def escaping(mark: str, foreground: str | None = "sleep") -> str:
    background = (
        f"(exec -a {mark}-bg sleep 300) >/dev/null 2>&1 & "
        f"nohup bash -c 'exec -a {mark}-nohup sleep 300' >/dev/null 2>&1 & "
        f"setsid bash -c 'exec -a {mark}-setsid sleep 300' >/dev/null 2>&1 & "
        f"(setsid bash -c 'exec -a {mark}-daemon sleep 300' >/dev/null 2>&1 &); "
    )
    if foreground == "sleep":
        return background + f"exec -a {mark}-fg sleep 300"
    if foreground == "ticks":
        return background + f"exec -a {mark}-fg bash -c 'while :; do echo tick; sleep 0.05; done'"
    return background + "echo started"


def marked(mark: str, *, named: bool = False) -> list[psutil.Process]:
    """Running (not zombie) processes whose command line carries `mark`; with `named`, only those that
    are already the marked program (argv[0], set by `exec -a`), not a shell on its way there."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            argv = proc.info["cmdline"] or []
            if proc.info["status"] == psutil.STATUS_ZOMBIE or not argv:
                continue
            if argv[0].startswith(mark) if named else any(mark in arg for arg in argv):
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def wait_started(mark: str, foreground: bool = True) -> None:
    """Every escape (and the foreground process) is running."""
    expected = len(ESCAPES) + (1 if foreground else 0)
    await eventually(
        lambda: len(marked(mark, named=True)) == expected, within=10, what=f"{expected} marked processes"
    )


async def assert_all_gone(mark: str, within: float = 1.0) -> None:
    """No marked process survives `within` s (then kills survivors, so a failure leaves none behind)."""
    try:
        await eventually(lambda: not marked(mark), within=within, what=f"every {mark} process to be gone")
    except AssertionError:
        survivors = marked(mark)
        names = sorted(" ".join(p.info["cmdline"] or ()) for p in survivors)
        for proc in survivors:
            try:
                proc.kill()
            except psutil.Error:
                pass
        raise AssertionError(f"processes survived {within} s: {names}") from None
