"""The processes a command started, found through /proc and stopped together wherever they went.

`bash` runs each command's shell as a new session (the shell's pid is its session and group id) with a
random token in its environment (`ACP_BRIDGE_CALL=<token>`, from `Command.environment`). A process is
the command's when
- it is in the shell's session: background jobs (`&`), `nohup`, job-control groups (`set -m`); or
- it carries the token: a `setsid` child or a double-forked daemon leaves the session but inherits the
  environment; or
- it was seen one of those ways before (its pid and start time were recorded).
The session test is trusted only while the command runs or is being stopped: once a session is empty its
id may be reused by an unrelated process, so what outlives its call is known by its token and identity.
(A process that both leaves the session and clears its environment is found by neither; with the host a
child subreaper it is still the host's descendant, and the host kills its descendants when it exits.)

A `ProcessScope` is what a host puts in `agent.services["processes"]` for one session: the commands of
the session, so that `stop()` ends what they left running (a server started in the background, with its
output redirected, outlives its call on purpose: it is stopped with the session).

Stopping: SIGTERM to every process group of those processes (a group never spans sessions, so each one
holds only the command's processes), a grace that ends once none runs, SIGKILL, then reaping.

Reaping: with the host a child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`, see
`acp_bridge.session.processes`), the command's orphans are re-parented to the host, and once they exit
only the host can reap them.
asyncio's child watchers on 3.11 (`ThreadedChildWatcher`, the default, and `PidfdChildWatcher`) and
`subprocess` wait for the pids they forked with `waitpid(pid)`, never `waitpid(-1)`, and a fork reaped by
someone else is misreported (asyncio says exit status 255, `subprocess` 0). So `reap_adopted` reaps only
zombies that cannot be forks of this process: a child in a session that is neither ours nor its own (a
fork keeps our session or leads a new one, and sessions cannot be joined), or a session leader recorded
alive carrying a command's token that is not the command's shell (a `setsid` child; one adopted and
exited before any look stays a zombie until the host exits). No SIGCHLD handler is installed for it:
asyncio's `SafeChildWatcher`/`FastChildWatcher` own that signal when a host picks them; reaping happens
when a command ends or is stopped, and when its scope stops.

Linux only (/proc). Elsewhere a command is its process group, as before.

Must not: signal a process that is not the command's (our own group, a reused pid), or reap a fork of
this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from registry_core import Agent

MARKER = "ACP_BRIDGE_CALL"  # the environment variable carrying a command's token
PROCESSES_SERVICE = "processes"  # agent.services key of the session's ProcessScope
KILL_GRACE_S = 0.5  # SIGTERM → SIGKILL
POLL_S = 0.02  # during the grace: how often the known members are checked
RESCAN_S = 0.2  # and how often all of /proc is scanned for members forked since
SETTLE_S = 0.3  # after SIGKILL: how long killed children are waited for, to be reaped
HAVE_PROC = os.path.isdir("/proc/self")


@dataclass(frozen=True, slots=True)
class Proc:
    """A process as /proc/<pid>/stat shows it (proc(5))."""

    pid: int
    ppid: int
    pgid: int
    sid: int
    zombie: bool
    start: int  # clock ticks after boot: with the pid, the identity of a process


def read_proc(pid: int | str) -> Proc | None:
    """The process `pid`, or None once it is gone (or has no /proc entry)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # After "(comm)": state (field 3), ppid, pgrp, session, ..., starttime (field 22).
        return Proc(
            int(pid), int(fields[1]), int(fields[2]), int(fields[3]), fields[0] == b"Z", int(fields[19])
        )
    except (OSError, IndexError, ValueError):
        return None


def all_processes() -> Iterator[Proc]:
    """Every process /proc lists (none without /proc)."""
    try:
        names = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return
    for name in names:
        proc = read_proc(name)
        if proc is not None:
            yield proc


_TOKEN_PREFIX = f"\0{MARKER}=".encode()


def token_of(pid: int) -> str | None:
    """The command token in the process's environment (as it was exec'ed), if any."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = b"\0" + f.read()
    except OSError:
        return None
    at = data.find(_TOKEN_PREFIX)
    if at < 0:
        return None
    start = at + len(_TOKEN_PREFIX)
    end = data.find(b"\0", start)
    return data[start : end if end >= 0 else len(data)].decode("ascii", "replace")


def children_of_self() -> list[Proc]:
    """This process's children: through /proc/self/task/*/children (cheap: no scan of all of /proc),
    else by scanning /proc for our pid as parent."""
    me = os.getpid()
    if os.path.exists(f"/proc/self/task/{me}/children"):
        pids: set[str] = set()
        with contextlib.suppress(OSError):
            for task in os.listdir("/proc/self/task"):
                with contextlib.suppress(OSError), open(f"/proc/self/task/{task}/children", "rb") as f:
                    pids.update(f.read().decode().split())
        return [p for p in map(read_proc, pids) if p is not None and p.ppid == me]
    return [p for p in all_processes() if p.ppid == me]


def reap_adopted(known: Mapping[int, int]) -> int:
    """Reap the zombie children that are surely orphans re-parented to us, never our own forks (see the
    module docstring); `known`: pid → start time of processes recorded as adopted. Returns how many."""
    own_session = os.getsid(0)
    reaped = 0
    for child in children_of_self():
        if not child.zombie:
            continue
        adopted = child.sid not in (own_session, child.pid) or known.get(child.pid) == child.start
        if adopted:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(child.pid, os.WNOHANG)[0] == child.pid:
                    reaped += 1
    return reaped


class Command:
    """One command's processes: the token its shell carries, the shell once started, and the identities
    (pid → start time) of the processes seen belonging to it that are not the shell."""

    def __init__(self) -> None:
        self.token = f"{os.getpid()}-{os.urandom(8).hex()}"  # not `secrets`: 2 ms of imports
        self.shell: int | None = None
        self.seen: dict[int, int] = {}

    def environment(self) -> dict[str, str]:
        """The environment to start the shell with: ours (a host has already taken its secrets out of
        it, see `acp_bridge.common.credentials`) plus the token."""
        return {**os.environ, MARKER: self.token}

    def started(self, shell_pid: int) -> None:
        self.shell = shell_pid

    def note(self, proc: Proc) -> None:
        """Record `proc` as one of ours (its identity), unless it is the shell (asyncio reaps that)."""
        if self.shell is not None and proc.pid != self.shell:
            self.seen[proc.pid] = proc.start

    def running_members(self) -> dict[int, Proc]:
        """The command's processes while it runs or is being stopped (the shell's session counts)."""
        return find_members([self], sessions=(self.shell,) if self.shell is not None else ())

    async def stop(self, grace: float = KILL_GRACE_S) -> None:
        """Stop every process of the command (SIGTERM, grace, SIGKILL) and reap those we adopted."""
        if not HAVE_PROC:
            if self.shell is not None:
                await _stop_group(self.shell, grace)
            return
        try:
            await stop_processes(self.running_members, grace)
        finally:
            await _reap_killed(self.seen)


def find_members(commands: Collection[Command], sessions: Collection[int]) -> dict[int, Proc]:
    """The processes (zombies included) of `commands`: in one of `sessions` (the shells' sessions),
    recorded by them, or carrying one of their tokens; never this process. Each member found is
    recorded in its command (`Command.note`)."""
    by_token = {c.token: c for c in commands}
    by_session = {c.shell: c for c in commands if c.shell is not None and c.shell in sessions}
    known = {pid: start for c in commands for pid, start in c.seen.items()}
    me = os.getpid()
    found: dict[int, Proc] = {}
    for proc in all_processes():
        if proc.pid == me:
            continue
        if proc.sid in by_session:
            found[proc.pid] = proc
            if not proc.zombie:
                by_session[proc.sid].note(proc)
        elif known.get(proc.pid) == proc.start:
            found[proc.pid] = proc
        elif not proc.zombie and (token := token_of(proc.pid)) is not None and token in by_token:
            found[proc.pid] = proc
            by_token[token].note(proc)
    return found


async def _stop_group(pgid: int, grace: float) -> None:
    """Without /proc: the command is its process group (SIGTERM, grace, SIGKILL)."""

    def send(sig: int) -> bool:
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    try:
        deadline = time.monotonic() + grace
        if send(signal.SIGTERM):
            while time.monotonic() < deadline and send(0):  # noqa: ASYNC110 - no event for "group empty"
                await asyncio.sleep(POLL_S)
    finally:
        send(signal.SIGKILL)


def _running(pid: int, start: int) -> bool:
    proc = read_proc(pid)
    return proc is not None and proc.start == start and not proc.zombie


class ProcessWatch:
    """Whether any of a set of processes still runs, cheaply enough to ask every few ms on the event
    loop: `find` (a scan of all of /proc, 1-10 ms with hundreds of processes) runs once, then only the
    members found are checked (one small read each), with a new scan every `RESCAN_S` for members forked
    since and before ever saying none runs. Zombies do not count: where PID 1 does not reap orphans (some
    containers) they would look alive forever."""

    def __init__(
        self, find: Callable[[], Mapping[int, Proc]], found: Mapping[int, Proc] | None = None
    ) -> None:
        self._find = find
        self.members: dict[int, int] = {}  # pid → start time of the running members
        self._scanned_at = -RESCAN_S
        if found is not None:
            self._take(found)

    def _take(self, found: Mapping[int, Proc]) -> None:
        self.members = {p.pid: p.start for p in found.values() if not p.zombie}
        self._scanned_at = time.monotonic()

    def alive(self) -> bool:
        self.members = {pid: start for pid, start in self.members.items() if _running(pid, start)}
        if self.members and time.monotonic() - self._scanned_at < RESCAN_S:
            return True
        self._take(self._find())
        return bool(self.members)


def signal_members(members: Mapping[int, Proc], sig: int) -> None:
    """Send `sig` to every process group of the running `members` (a member forked since is caught with
    its group); never to this process or its group (a member there is signalled alone)."""
    me, own_group = os.getpid(), os.getpgid(0)
    running = [p for p in members.values() if not p.zombie and p.pid != me]
    for pgid in {p.pgid for p in running} - {own_group}:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
    for proc in running:
        if proc.pgid == own_group and _running(proc.pid, proc.start):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, sig)


async def stop_processes(find: Callable[[], Mapping[int, Proc]], grace: float = KILL_GRACE_S) -> None:
    """SIGTERM what `find` finds, wait until none runs (at most `grace` s), SIGKILL whatever is left.
    The SIGKILL is in a `finally`: a second cancellation during the grace still kills."""
    found = find()
    if not any(not p.zombie for p in found.values()):
        return  # nothing runs, so nothing can fork either
    try:
        signal_members(found, signal.SIGTERM)
        watch = ProcessWatch(find, found)
        deadline = time.monotonic() + grace
        # Polling: there is no event for "these processes are gone" (most are not our children).
        while time.monotonic() < deadline and watch.alive():  # noqa: ASYNC110
            await asyncio.sleep(POLL_S)
    finally:
        signal_members(find(), signal.SIGKILL)


async def _reap_killed(known: Mapping[int, int]) -> None:
    """After SIGKILL: reap the killed processes we adopted, waiting briefly (`SETTLE_S`) for them to
    finish exiting; a killed process whose parent was killed too is re-parented to us only once that
    parent is reaped. Reads only the known processes, not all of /proc."""
    deadline = time.monotonic() + SETTLE_S
    me = os.getpid()
    while True:
        reap_adopted(known)
        pending = [
            proc
            for pid, start in known.items()
            if (proc := read_proc(pid)) is not None
            and proc.start == start
            and (not proc.zombie or proc.ppid == me)
        ]
        if not pending or time.monotonic() >= deadline:
            return
        await asyncio.sleep(POLL_S)


class ProcessScope:
    """The commands of one owner (a session): `command()` makes each one; `settle()` after one ended
    normally; `stop()` ends what they left running and reaps it. A host creates one per session and
    stops it when the session ends; `bash` makes a throwaway one when there is none."""

    def __init__(self) -> None:
        self._commands: list[Command] = []

    def command(self) -> Command:
        command = Command()
        self._commands.append(command)
        return command

    def settle(self, command: Command) -> None:
        """`command`'s shell exited normally (and was reaped): record the children we adopted from it
        (alive, carrying its token) so their zombies can be reaped later, forget identities that are
        gone, and reap what exited. Cheap: reads our children only."""
        for child in children_of_self():
            if not child.zombie and child.pid != command.shell and token_of(child.pid) == command.token:
                command.note(child)
        for each in self._commands:
            each.seen = {
                pid: start
                for pid, start in each.seen.items()
                if (proc := read_proc(pid)) is not None and proc.start == start
            }
        reap_adopted(self._known())

    def _known(self) -> dict[int, int]:
        return {pid: start for c in self._commands for pid, start in c.seen.items()}

    def _members(self) -> dict[int, Proc]:
        return find_members(self._commands, sessions=())

    async def stop(self, grace: float = KILL_GRACE_S) -> None:
        """Stop every process the scope's commands left running (found by token and identity)."""
        if not self._commands:
            return
        try:
            await stop_processes(self._members, grace)
        finally:
            await _reap_killed(self._known())
            self._commands.clear()


def scope_of(agent: Agent | None) -> ProcessScope | None:
    """The host's process scope for the agent's session, when it provides one."""
    service: Any = agent.services.get(PROCESSES_SERVICE) if agent is not None else None
    return service if isinstance(service, ProcessScope) else None
