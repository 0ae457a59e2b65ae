"""Background commands: what `bash` with `run_in_background` started, owned by its session until it ends.

A host puts one `BackgroundCommands` per session in `agent.services["background"]`. `bash` starts the
command as it starts any (its own session, the token of `process_tree`, output on a pipe) and hands the
running shell over (`adopt`); its call returns at once. From then on the registry owns it:
- its processes: a `process_tree.Command` of the session's `ProcessScope`; `kill` stops every one of them
  (SIGTERM, grace, SIGKILL) wherever they went, as a cancelled foreground command's;
- its output, drained as it comes into an `output_capture.Capture` (head and tail in memory, the whole in
  a spill file in the session's scratch directory past that), reported to the host's watcher as text, and
  read back by `bash_output` from a cursor, so each read returns the output not read yet (bounded);
- its end: the shell's exit status once its output is drained (a process still holding the output after
  the shell exited is stopped, as in the foreground), or who stopped it (`stopped_by`). What it left
  running with its output redirected stays the session's scope's, as after a foreground command.

Ids are the ids of the calls that started the commands. Ended commands are kept (the last `MAX_KEPT`),
for `bash_output` and `/tasks`. At most `MAX_RUNNING` run at once. `take_end_notes` gives, once, a note
for each command that ended without the model having seen it end (through `bash_output` or `kill_bash`).
`stop_all` ends every command (the session ends); no command is admitted after it.

The watcher (the host, which keeps the command's card live) hears `on_output(bash_id, text)` as output
comes and `on_end(command)` once, when it has ended.

Must not: let a command outlive `stop_all`, block the event loop, hold more of an output than its capture
does, or let a watcher's failure stop the draining.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from collections.abc import Callable
from typing import Any, Protocol

from registry_core import Agent, TextBlock, ToolError, ToolFailureInfo, ToolResult

from .output_capture import Capture, OutputRead
from .process_tree import KILL_GRACE_S, Command, ProcessScope

log = logging.getLogger(__name__)

BACKGROUND_SERVICE = "background"  # agent.services key of the session's BackgroundCommands
MAX_RUNNING = 16
MAX_KEPT = 64  # commands kept, ended ones dropped oldest first
READ_LIMIT = 32 * 1024  # the most bytes of new output one `bash_output` returns (its start and end)
CHUNK = 64 * 1024
DRAIN_GRACE_S = 0.25  # after the shell exits, how long output may still arrive before holders are stopped
STOP_WAIT_S = 3.0  # after its processes were stopped, how long a command's draining may take to end
NOTE_COMMAND_CHARS = 80


class BackgroundWatcher(Protocol):
    """The host's side: output as it comes, and each command's end (once)."""

    def on_output(self, bash_id: str, text: str) -> None: ...

    def on_end(self, command: BackgroundCommand) -> None: ...


def short_command(command: str, limit: int = NOTE_COMMAND_CHARS) -> str:
    """The command on one line, cut to `limit` characters."""
    line = " ".join(command.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class BackgroundCommand:
    """One command running (or ended) in the background, and what is known of it."""

    def __init__(self, bash_id: str, command: str, cwd: str, process: Command, capture: Capture) -> None:
        self.bash_id = bash_id
        self.command = command
        self.cwd = cwd
        self.process = process
        self.capture = capture
        self.started_at = time.monotonic()
        self.ended_at: float | None = None
        self.exit_code: int | None = None
        self.signal: str | None = None
        self.stopped_by: str | None = None  # who stopped it ("kill_bash", "the session ended", ...)
        self.error: str | None = None  # why its output could not be read to its end
        self.cursor = 0  # the first byte `bash_output` has not returned yet
        self.told = False  # the model knows it ended
        self.task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.ended_at is None

    def runtime(self, now: float | None = None) -> float:
        """Seconds it ran (so far, while it runs)."""
        end = self.ended_at if self.ended_at is not None else (now if now is not None else time.monotonic())
        return max(0.0, end - self.started_at)

    def state(self) -> str:
        """How it stands, in a few words: running, exited with code N, killed by SIGX, stopped by who."""
        if self.running:
            return "running"
        if self.stopped_by is not None:
            return f"stopped by {self.stopped_by}"
        if self.signal is not None:
            return f"killed by signal {self.signal}"
        return f"exited with code {self.exit_code}"

    def meta(self) -> dict[str, Any]:
        """Its card's presentation meta once it ended: `bash`'s fields (`BashValue`), so `bash`'s
        `present_result` draws the final card, live and replayed."""
        capture = self.capture
        return {
            "command": self.command,
            "cwd": self.cwd,
            "exit_code": self.exit_code,
            "signal": self.signal,
            "output": capture.text(),
            "truncated": capture.truncated,
            "full_output_path": capture.spill_path,
            "timed_out": False,
            "total_bytes": capture.total,
            "spill_error": capture.spill_error,
            "background": False,
            "bash_id": self.bash_id,
            "stopped_by": self.stopped_by,
        }

    def outcome(self) -> ToolResult:
        """The durable end of its card: completed with the exit status (a non-zero one included, as for a
        foreground command), failed when it was stopped or its output could not be read."""
        summary = f"Background command {self.bash_id} {self.state()}."
        failure: ToolFailureInfo | None = None
        if self.stopped_by is not None:
            failure = ToolFailureInfo(f"Stopped by {self.stopped_by}.", "CANCELLED")
        elif self.error is not None:
            failure = ToolFailureInfo(f"Reading the command's output failed: {self.error}", "IO_ERROR")
        return ToolResult((TextBlock(summary),), failure is not None, failure, self.meta())

    def end_note(self) -> str:
        """What the model is told when it ended unseen."""
        return (
            f"Background command {self.bash_id} (`{short_command(self.command)}`) {self.state()}; use "
            "bash_output to read its output."
        )


class BackgroundCommands:
    """One session's background commands (`agent.services["background"]`)."""

    def __init__(self, *, max_running: int = MAX_RUNNING, max_kept: int = MAX_KEPT) -> None:
        self._commands: dict[str, BackgroundCommand] = {}
        self._watcher: BackgroundWatcher | None = None
        self._max_running = max_running
        self._max_kept = max_kept
        self._stopping: set[asyncio.Task[BackgroundCommand]] = set()
        self._closed = False

    # --- the host's side ---------------------------------------------------------------------------

    def watch(self, watcher: BackgroundWatcher | None) -> None:
        """Report output and ends to `watcher` from now on (a reloaded session replaces its predecessor)."""
        self._watcher = watcher

    @property
    def watcher(self) -> BackgroundWatcher | None:
        return self._watcher

    def get(self, bash_id: str) -> BackgroundCommand | None:
        return self._commands.get(bash_id)

    def commands(self) -> list[BackgroundCommand]:
        """Every command kept, oldest first."""
        return list(self._commands.values())

    def take_end_notes(self) -> list[str]:
        """A note for each command that ended since the model last heard of it (once each)."""
        notes = []
        for command in self._commands.values():
            if not command.running and not command.told:
                command.told = True
                notes.append(command.end_note())
        return notes

    async def stop_all(self, by: str = "the session ended", grace: float = KILL_GRACE_S) -> None:
        """Stop every running command and wait until each has ended (and been reported). No command is
        admitted afterwards."""
        self._closed = True
        running = [c for c in self._commands.values() if c.running]
        await asyncio.gather(*(self.kill(c.bash_id, by, grace) for c in running), *self._stopping)

    # --- the tools' side ---------------------------------------------------------------------------

    def admit(self, bash_id: str) -> None:
        """Raise the ToolError that says why a command `bash_id` cannot start now, if one does."""
        if self._closed:
            raise ToolError("The session is ending: no background command can start.", code="UNAVAILABLE")
        current = self._commands.get(bash_id)
        if current is not None and current.running:
            raise ToolError(
                f"A background command with id {bash_id} is still running; use another call id.",
                code="INVALID_ARGS",
            )
        running = sum(1 for c in self._commands.values() if c.running)
        if running >= self._max_running:
            raise ToolError(
                f"{running} background commands are running, the most a session may have. Stop one with "
                "kill_bash (bash_output says which have ended), or run this one in the foreground.",
                code="LIMIT",
            )

    def adopt(
        self,
        bash_id: str,
        command_text: str,
        cwd: str,
        process: Command,
        shell: asyncio.subprocess.Process,
        read_fd: int,
        *,
        scope: ProcessScope,
        spill_dir: Callable[[], str | None],
    ) -> BackgroundCommand:
        """Take over a started command: `shell` (its `bash -c`, `process.started` already called) writing
        to the pipe whose read end is `read_fd` (owned from now on). Call `admit` first."""
        capture = Capture(spill_dir, prefix="acp-bridge-bg-")
        command = BackgroundCommand(bash_id, command_text, cwd, process, capture)
        self._commands.pop(bash_id, None)  # an ended one under the same id: the new one replaces it
        self._commands[bash_id] = command
        self._forget_old()
        command.task = asyncio.ensure_future(self._run(command, shell, read_fd, scope))
        return command

    def read(self, bash_id: str) -> tuple[BackgroundCommand, OutputRead]:
        """The output of `bash_id` not read yet (at most `READ_LIMIT` bytes of it, its start and end),
        moving the cursor past it. Once it ended, reading says so: the model knows. Raises ToolError for
        an unknown id."""
        command = self._known(bash_id)
        ended = not command.running
        chunk = command.capture.read(command.cursor, READ_LIMIT, final=ended)
        command.cursor = chunk.next_offset
        if ended:
            command.told = True
        return command, chunk

    async def kill(
        self, bash_id: str, by: str = "kill_bash", grace: float = KILL_GRACE_S
    ) -> BackgroundCommand:
        """Stop `bash_id` (every process of it) and wait until it ended; an ended one is left as it is.
        Raises ToolError for an unknown id."""
        command = self._known(bash_id)
        task = command.task
        if not command.running or task is None:
            return command
        if command.stopped_by is None:
            command.stopped_by = by
        try:
            await command.process.stop(grace)
        finally:
            # Shielded: the killer being cancelled must not leave the draining half-done.
            done, _ = await asyncio.shield(asyncio.wait([task], timeout=STOP_WAIT_S))
            if not done:
                task.cancel()
                await asyncio.wait([task], timeout=STOP_WAIT_S)
        return command

    def kill_soon(self, bash_id: str, by: str) -> BackgroundCommand:
        """Start stopping `bash_id` and return at once (a slash command cannot wait); `stop_all` waits
        for it. Raises ToolError for an unknown id."""
        command = self._known(bash_id)
        if command.running:
            task = asyncio.ensure_future(self.kill(bash_id, by))
            self._stopping.add(task)
            task.add_done_callback(self._stopping.discard)
        return command

    def _known(self, bash_id: str) -> BackgroundCommand:
        command = self._commands.get(bash_id)
        if command is None:
            known = ", ".join(self._commands) or "none"
            raise ToolError(
                f"No background command {bash_id!r} in this session (known: {known}). Background commands "
                "end with their session.",
                code="NOT_FOUND",
            )
        return command

    def _forget_old(self) -> None:
        excess = len(self._commands) - self._max_kept
        for bash_id in [c.bash_id for c in self._commands.values() if not c.running][: max(0, excess)]:
            del self._commands[bash_id]

    # --- draining ------------------------------------------------------------------------------------

    async def _run(
        self, command: BackgroundCommand, shell: asyncio.subprocess.Process, read_fd: int, scope: ProcessScope
    ) -> None:
        """Drain the output until the command ends, then report its end. Stops its processes on any way
        out but a normal end."""
        loop = asyncio.get_running_loop()
        exited = asyncio.ensure_future(shell.wait())
        reader: asyncio.Future[None] | None = None
        transport: asyncio.BaseTransport | None = None
        normal = False
        try:
            stdout = asyncio.StreamReader(limit=2 * CHUNK)
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(read_fd, "rb", buffering=0)
            )
            reader = asyncio.ensure_future(self._pump(command, stdout))
            await asyncio.wait([reader, exited], return_when=asyncio.FIRST_COMPLETED)
            holders = False
            if not reader.done():  # the shell exited first: give late output a moment
                await asyncio.wait([reader], timeout=DRAIN_GRACE_S)
                holders = not reader.done()  # something it started keeps the output open
            if holders:
                await command.process.stop()
                await asyncio.wait([reader], timeout=1.0)
            await asyncio.wait([exited])
            normal = not holders and command.stopped_by is None
            if normal:
                scope.settle(command.process)  # what it left in the background stays the session's
            if reader.done() and not reader.cancelled() and (error := reader.exception()) is not None:
                command.error = str(error) or type(error).__name__
        except OSError as exc:  # the pipe could not be watched
            command.error = exc.strerror or str(exc)
        finally:
            try:
                if not normal:
                    await asyncio.shield(self._stop(command, exited))
            finally:
                for task in (reader, exited):
                    if task is not None and not task.done():
                        task.cancel()
                if transport is not None:
                    transport.close()
                self._ended(command, shell.returncode)

    async def _pump(self, command: BackgroundCommand, stdout: asyncio.StreamReader) -> None:
        capture = command.capture
        while chunk := await stdout.read(CHUNK):
            self._output(command.bash_id, capture.feed(chunk))
        self._output(command.bash_id, capture.flush())

    @staticmethod
    async def _stop(command: BackgroundCommand, exited: asyncio.Future[int]) -> None:
        try:
            await command.process.stop()
        finally:
            await asyncio.wait([exited], timeout=2.0)

    def _output(self, bash_id: str, text: str) -> None:
        watcher = self._watcher
        if text and watcher is not None:
            try:
                watcher.on_output(bash_id, text)
            except Exception:
                log.exception("the watcher of background command %s failed on its output", bash_id)

    def _ended(self, command: BackgroundCommand, code: int | None) -> None:
        command.capture.close()
        if code is not None and code < 0:
            try:
                command.signal = signal.Signals(-code).name
            except ValueError:
                command.signal = str(-code)
        elif code is not None:
            command.exit_code = code
        command.ended_at = time.monotonic()
        watcher = self._watcher
        if watcher is not None:
            try:
                watcher.on_end(command)
            except Exception:
                log.exception("the watcher of background command %s failed on its end", command.bash_id)


def background_of(agent: Agent | None) -> BackgroundCommands | None:
    """The host's background commands for the agent's session, when it keeps them."""
    service: Any = agent.services.get(BACKGROUND_SERVICE) if agent is not None else None
    return service if isinstance(service, BackgroundCommands) else None
