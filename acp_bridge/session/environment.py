"""Where a session works, as its system prompt describes it: the operating system, the shell commands run
in, today's date, and each root with its git state (branch, ahead/behind, a short status).

`probe_environment(roots)` takes that snapshot once, when the session starts (`prompt_context` runs it in a
worker thread): the system prompt stays the same for every step of the session, so a provider that caches
a repeated prompt prefix can reuse it, and the date and the git status are those of the session's start.

The git probe is one `git status --porcelain=v1 --branch` per root, bounded: `GIT_TIMEOUT_S` per root and
`PROBE_DEADLINE_S` for all of them, at most `GIT_OUTPUT_LIMIT` bytes of output read (the process is killed
once it has said that much, or at its deadline), `GIT_STATUS_LINES` entries shown. It writes nothing
(`GIT_OPTIONAL_LOCKS=0`: no index refresh written) and starts no fsmonitor program; submodules are not
walked and no terminal prompt can appear (a clean filter the user's git configuration defines may run, as
it would for any `git status`). Without git on PATH, or outside a repository, the snapshot says so.

Must not: run on the event loop (it waits for a process), raise (every failure is described in the
snapshot instead), or write anything.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date

GIT_TIMEOUT_S = 2.0
PROBE_DEADLINE_S = 3.0
GIT_OUTPUT_LIMIT = 64 * 1024
GIT_STATUS_LINES = 10

# What keeps `git status` from writing to the repository or running its configured programs.
_GIT_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
_GIT_ARGS = (
    "-c", "core.fsmonitor=false",
    "-c", "core.untrackedCache=false",
    "status", "--porcelain=v1", "--branch", "--ignore-submodules=all", "--untracked-files=normal",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class GitState:
    """A root's git state. `repository` False with `note` saying why (not a repository, no git, timed
    out); otherwise `branch` (None when detached), `tracking` ("ahead 1, behind 2" or ""), the first
    `GIT_STATUS_LINES` porcelain entries and how many there were in all."""

    repository: bool
    branch: str | None = None
    tracking: str = ""
    entries: tuple[str, ...] = ()
    total: int = 0
    note: str = ""


@dataclass(frozen=True, slots=True)
class Environment:
    os: str
    shell: str
    today: str
    roots: tuple[str, ...]
    git: tuple[GitState, ...] = field(default=())


def probe_environment(roots: Sequence[str], *, today: date | None = None) -> Environment:
    """The snapshot of the module's docstring. Blocking: call it off the event loop."""
    deadline = time.monotonic() + PROBE_DEADLINE_S
    git = shutil.which("git")
    states: list[GitState] = []
    for root in roots:
        left = deadline - time.monotonic()
        if git is None:
            states.append(GitState(False, note="git is not installed, so its state is unknown"))
        elif left <= 0:
            states.append(GitState(False, note="its git state was not taken (the probe ran out of time)"))
        else:
            states.append(git_state(git, root, min(GIT_TIMEOUT_S, left)))
    return Environment(
        os=_os_name(),
        shell=os.environ.get("SHELL", "") or "unknown",
        today=(today or date.today()).isoformat(),
        roots=tuple(roots),
        git=tuple(states),
    )


def _os_name() -> str:
    system = platform.system() or "unknown"
    if system == "Darwin":
        system = f"macOS {platform.mac_ver()[0]}".strip()
    else:
        system = f"{system} {platform.release()}".strip()
    return f"{system} ({platform.machine()})" if platform.machine() else system


def git_state(git: str, root: str, timeout: float) -> GitState:
    """One root's `GitState` (see the module's docstring)."""
    if not os.path.isdir(root):
        return GitState(False, note="the folder does not exist")
    try:
        proc = subprocess.Popen(
            [git, *_GIT_ARGS],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **_GIT_ENV},
        )
    except OSError as exc:
        return GitState(False, note=f"git could not run ({exc.strerror or exc})")
    timed_out = threading.Event()

    def stop() -> None:
        timed_out.set()
        proc.kill()

    # The read below returns at EOF or once the limit is read; the timer ends a git that hangs (a slow
    # network file system) by killing it, which closes the pipe.
    timer = threading.Timer(timeout, stop)
    timer.start()
    try:
        assert proc.stdout is not None
        out = proc.stdout.read(GIT_OUTPUT_LIMIT)
        cut = len(out) >= GIT_OUTPUT_LIMIT
        if cut:
            proc.kill()  # it has said enough: the rest would only be counted
        status = proc.wait()
    finally:
        timer.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    if timed_out.is_set():
        return GitState(False, note=f"git status did not answer within {timeout:g} s")
    if status != 0 and not cut:
        return GitState(False, note="not a git repository")
    return parse_status(out.decode("utf-8", "replace"), cut=cut)


def parse_status(text: str, *, cut: bool = False) -> GitState:
    """`git status --porcelain=v1 --branch` output → `GitState`. `cut`: the output was cut at the limit
    (its last line may be partial, and the count is a lower bound)."""
    lines = text.splitlines()
    if cut and lines:
        lines = lines[:-1]
    branch: str | None = None
    tracking = ""
    if lines and lines[0].startswith("## "):
        branch, tracking = _branch_line(lines[0][3:])
        lines = lines[1:]
    entries = [line for line in lines if line.strip()]
    total = len(entries)
    return GitState(
        True,
        branch=branch,
        tracking=tracking + (" (the status was cut short)" if cut else ""),
        entries=tuple(entries[:GIT_STATUS_LINES]),
        total=total,
    )


def _branch_line(line: str) -> tuple[str | None, str]:
    """`main...origin/main [ahead 1]`, `No commits yet on main`, `HEAD (no branch)` → (branch, tracking)."""
    for prefix in ("No commits yet on ", "Initial commit on "):
        if line.startswith(prefix):
            return line[len(prefix) :].strip(), "no commits yet"
    if line.startswith("HEAD (no branch)"):
        return None, "detached HEAD"
    head, _, rest = line.partition(" [")
    tracking = rest.rstrip("]") if rest else ""
    name, _, upstream = head.partition("...")
    if upstream:
        tracking = f"{tracking}, upstream {upstream}" if tracking else f"upstream {upstream}"
    return name.strip() or None, tracking
