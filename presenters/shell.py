"""`bash`: run a shell command in the session cwd, streaming its output, and its `terminal` cards.

- `bash -c COMMAND` in a new session (its own process group), stdin /dev/null, stdout and stderr merged,
  with a token in its environment that marks every process the command starts (`process_tree`).
- Output streams to `ctx.progress(TerminalOutputProgress)` as it arrives (UTF-8 decoded incrementally).
- Memory stays bounded whatever the command prints: the model gets the first and last 16 KiB (32 KiB in
  all, the output cap claude-agent-acp gives its terminals, well under a Python client's 64 KiB line
  limit); beyond that, the whole output is streamed to a file whose path the result names, in the
  session's scratch directory when the host provides one (`agent.services["scratch"]`, deleted when the
  session ends), else in `spill_dir` or the temp directory. When that file cannot be written (disk
  full, I/O error), the output is still drained (what it would have held is dropped), the command runs
  to its end, and the call fails with the reason and the head and tail it kept.
- Timeout (`timeout` ms, default 120 s, at most 600 s) and cancellation stop every process of the
  command, wherever it went (its session, `setsid` and `nohup` children, daemons: `process_tree`):
  SIGTERM, then SIGKILL after a short grace that ends early once none runs, and the shell is reaped. A
  timeout is a failed result that still carries the partial output. When the shell exits but a
  background process keeps the output open, the output is drained briefly and then the command's
  processes are stopped too (otherwise the call would hang until the timeout). Background processes that
  redirected their output are left running: the session's process scope
  (`agent.services["processes"]`) stops them when the session ends.
- A non-zero exit is a successful call whose value says so (the command ran; it failed): the card shows
  the exit code.
- `run_in_background`: the command starts as any does, then the session's background commands
  (`agent.services["background"]`, `background.py`) take it over and the call returns at once, its value
  saying so (`background`, `bash_id`: this call's id). No timeout applies. Its result card is a
  `TerminalResultView(background=True)`: the host keeps the card live until the command ends, and
  completes it with the command's end (`BackgroundCommand.outcome`, drawn by this `present_result`).

presentation_meta: {"command", "cwd", "exit_code", "signal", "output", "truncated", "full_output_path",
"timed_out", "total_bytes", "spill_error", "background", "bash_id", "stopped_by"} (also on the TIMEOUT and
IO_ERROR failures).

Must not: hold more than the capped head/tail in memory, leave a process of the command running after a
cancellation or timeout, stop draining the output while the command runs, or block the event loop.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from registry_core import (
    Output,
    TerminalCallView,
    TerminalOutputProgress,
    TerminalResultView,
    ToolDefinition,
    ToolError,
    ToolResult,
    ToolRunContext,
    content_text,
    define_tool,
)

from .background import background_of
from .cards import meta_field
from .file_errors import os_error
from .output_capture import HEAD_BYTES, Capture
from .output_capture import TAIL_BYTES as TAIL_BYTES
from .paths import display_path, resolve, session_cwd
from .process_tree import Command, ProcessScope, scope_of
from .runtime import scratch_of

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
CHUNK = 64 * 1024
DRAIN_GRACE_S = 0.25  # after the shell exits, how long output may still arrive before we stop reading


class BashArgs(BaseModel):
    command: str = Field(min_length=1, description="The command to run with bash -c.")
    description: str | None = Field(
        default=None, description="What the command does, in 5-10 words (shown to the user)."
    )
    timeout: int | None = Field(
        default=None, ge=1, le=MAX_TIMEOUT_MS, description="Timeout in milliseconds (default 120000)."
    )
    workdir: str | None = Field(
        default=None, description="Directory to run in (default: the working directory; relative to it)."
    )
    run_in_background: bool = Field(
        default=False,
        description=(
            "Start the command and return at once (no timeout applies); its id is this call's id. Read its "
            "new output with bash_output, stop it with kill_bash; you are told when it ends."
        ),
    )


class BashValue(BaseModel):
    command: str
    cwd: str
    exit_code: int | None
    signal: str | None
    output: str
    truncated: bool
    full_output_path: str | None
    timed_out: bool
    total_bytes: int
    spill_error: str | None = None
    # A background command (`run_in_background`): started, with this id; its end is reported later.
    background: bool = False
    bash_id: str | None = None
    stopped_by: str | None = None


async def _stop(command: Command, exited: asyncio.Future[int]) -> None:
    """Stop every process of the command, then wait for the shell's exit (asyncio reaps the shell)."""
    try:
        await command.stop()
    finally:
        await asyncio.wait([exited], timeout=2.0)


async def _stop_unwatched(command: Command, spawn: asyncio.Future[asyncio.subprocess.Process]) -> None:
    """Cancelled before the command's output was being read: stop whatever the spawn started (its
    processes are the command's, whether or not the shell's pid was known yet) and reap the shell."""
    try:
        proc = await asyncio.shield(spawn)
    except (OSError, asyncio.CancelledError):
        return  # nothing started, or the spawn itself was cancelled: no process to stop
    command.started(proc.pid)
    exited = asyncio.ensure_future(proc.wait())
    await asyncio.shield(_stop(command, exited))


async def _spawn(
    command_text: str, workdir: str, command: Command
) -> tuple[asyncio.subprocess.Process, int, asyncio.Future[asyncio.subprocess.Process]]:
    """Start `bash -c COMMAND` in its own session, output on a pipe of ours: the shell (`command.started`
    told), the pipe's read end (the caller's to close) and the spawn (for `_stop_unwatched`)."""
    read_fd, write_fd = os.pipe()
    try:
        # Our own pipe, not asyncio's: asyncio's `wait()` would also wait for the pipe to close,
        # which a background process can keep open forever; here exit and EOF are separate events.
        spawn = asyncio.ensure_future(
            asyncio.create_subprocess_exec(
                "bash",
                "-c",
                command_text,
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=write_fd,
                env=command.environment(),
                start_new_session=True,  # its own session and process group
            )
        )
        # Shielded: a cancel that lands while the process is being started must still find (and
        # stop) it; an unshielded await would drop the process object and leave the command running.
        proc = await asyncio.shield(spawn)
    except OSError as exc:
        os.close(read_fd)
        raise os_error(exc, "bash", "run") from None
    except asyncio.CancelledError:
        os.close(read_fd)
        await _stop_unwatched(command, spawn)
        raise
    finally:
        os.close(write_fd)  # the children hold the only write ends: EOF comes when they are gone
    command.started(proc.pid)
    return proc, read_fd, spawn


async def _start_in_background(
    args: BashArgs, ctx: ToolRunContext, workdir: str, scope: ProcessScope, spill: Callable[[], str | None]
) -> BashValue:
    """`run_in_background`: start the command and hand it to the session's background commands, which
    own it from then on (`background.py`); the call returns at once."""
    background = background_of(ctx.agent)
    if background is None:
        raise ToolError(
            "run_in_background is not available here (the host keeps no background commands). Run the "
            "command in the foreground, or in the background with its output redirected to a file.",
            code="UNAVAILABLE",
        )
    bash_id = ctx.call_id
    background.admit(bash_id)
    command = scope.command()
    proc, read_fd, _spawned = await _spawn(args.command, workdir, command)
    # No await from here on: once started, the command is the registry's, whatever happens to this call.
    background.adopt(bash_id, args.command, workdir, command, proc, read_fd, scope=scope, spill_dir=spill)
    return BashValue(
        command=args.command,
        cwd=workdir,
        exit_code=None,
        signal=None,
        output="",
        truncated=False,
        full_output_path=None,
        timed_out=False,
        total_bytes=0,
        background=True,
        bash_id=bash_id,
    )


def _being_cancelled() -> bool:
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def _pump(stdout: asyncio.StreamReader, capture: Capture, ctx: ToolRunContext) -> None:
    while chunk := await stdout.read(CHUNK):
        text = capture.feed(chunk)
        if text:
            ctx.progress(TerminalOutputProgress(data=text))
    rest = capture.flush()
    if rest:
        ctx.progress(TerminalOutputProgress(data=rest))


def _summary(value: BashValue) -> str:
    if value.timed_out:
        return "The command timed out; its processes were stopped."
    if value.signal is not None:
        return f"Killed by signal {value.signal}."
    return f"Exit code: {value.exit_code}"


def _render(_args: BashArgs, value: BashValue) -> str:
    if value.background:
        return (
            f"The command is running in the background with bash_id {value.bash_id!r}. Read its output "
            "with bash_output, stop it with kill_bash; you will be told when it ends."
        )
    output = value.output or "(no output)"
    return f"{output}{'' if output.endswith(chr(10)) else chr(10)}{_summary(value)}"


def _meta(_args: BashArgs, value: BashValue) -> dict[str, Any]:
    return value.model_dump()


def bash_tool(*, spill_dir: str | None = None) -> ToolDefinition:
    """The `bash` tool. `spill_dir`: where full outputs of long runs go when the session has no scratch
    directory (default: the temp directory)."""

    async def execute(args: BashArgs, ctx: ToolRunContext) -> BashValue:
        cwd = session_cwd(ctx.agent)
        workdir = resolve(args.workdir, cwd) if args.workdir else cwd
        if not os.path.isdir(workdir):  # noqa: ASYNC240 - one stat before spawning, not worth a thread
            raise ToolError(
                f"workdir {display_path(workdir, cwd)} is not an existing directory. Omit workdir to run in "
                f"the working directory ({cwd}).",
                code="NOT_FOUND",
            )
        timeout_ms = args.timeout or DEFAULT_TIMEOUT_MS
        loop = asyncio.get_running_loop()
        # Without a host scope the command's leftovers are nobody's (as a plain shell would leave them).
        scope = scope_of(ctx.agent) or ProcessScope()
        scratch = scratch_of(ctx.agent)
        spill = scratch.path if scratch is not None else lambda: spill_dir
        if args.run_in_background:
            return await _start_in_background(args, ctx, workdir, scope, spill)
        command = scope.command()
        proc, read_fd, spawn = await _spawn(args.command, workdir, command)
        capture = Capture(spill)
        stdout = asyncio.StreamReader(limit=2 * CHUNK)
        try:
            transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(stdout), os.fdopen(read_fd, "rb", buffering=0)
            )
        except asyncio.CancelledError:
            capture.close()
            await _stop_unwatched(command, spawn)
            raise
        exited = asyncio.ensure_future(proc.wait())
        reader = asyncio.ensure_future(_pump(stdout, capture, ctx))
        timed_out = holders = False

        def value_now() -> BashValue:
            code = proc.returncode
            return BashValue(
                command=args.command,
                cwd=workdir,
                exit_code=code if code is not None and code >= 0 else None,
                signal=signal.Signals(-code).name if code is not None and code < 0 else None,
                output=capture.text(),
                truncated=capture.truncated,
                full_output_path=capture.spill_path,
                timed_out=timed_out,
                total_bytes=capture.total,
                spill_error=capture.spill_error,
            )

        try:
            async with asyncio.timeout(timeout_ms / 1000):
                await asyncio.wait([reader, exited], return_when=asyncio.FIRST_COMPLETED)
                if not reader.done():  # the shell exited first: give late output a moment
                    await asyncio.wait([reader], timeout=DRAIN_GRACE_S)
                    holders = not reader.done()  # a background process keeps the output open
                if not holders:
                    await asyncio.wait([exited])  # EOF first: the shell may still be running
        except TimeoutError:
            timed_out = True
        finally:
            try:
                cut_short = not (reader.done() and exited.done())  # cancelled (or timed out) mid-run
                if timed_out or holders or cut_short:
                    await _stop(command, exited)
                    await asyncio.wait([reader], timeout=1.0)  # the last chunks, up to the kill
                else:
                    scope.settle(command)  # what it left running in the background stays the session's
            finally:
                for task in (reader, exited):
                    if not task.done():
                        task.cancel()
                transport.close()
                capture.close()
                if cut_short and not timed_out and _being_cancelled():
                    # Stopped part-way: the card (live and replayed) keeps the output and how it ended.
                    ctx.set_partial_meta(value_now().model_dump())
        if not reader.cancelled() and reader.done() and (error := reader.exception()) is not None:
            raise ToolError(f"Reading the command's output failed: {error}", code="IO_ERROR")
        value = value_now()
        if timed_out:
            raise ToolError(
                f"{value.output}\nThe command timed out after {timeout_ms / 1000:g} s; its processes were "
                "stopped. Run long jobs in the background (with output redirected to a file), or pass a "
                f"larger timeout (at most {MAX_TIMEOUT_MS} ms).",
                code="TIMEOUT",
                meta=value.model_dump(),
            )
        if capture.spill_error is not None:
            raise ToolError(
                f"{value.output}\n{_summary(value)}\nThe command's full output could not be saved "
                f"({capture.spill_error}), so only its first and last {HEAD_BYTES // 1024} KiB are shown. "
                "Free some disk space, or run the command with its output redirected to a file you choose "
                "(or filtered, e.g. through tail or grep).",
                code="IO_ERROR",
                meta=value.model_dump(),
            )
        return value

    def present_call(args: BashArgs) -> TerminalCallView:
        return TerminalCallView(title=args.command, description=args.description, cwd=args.workdir)

    def present_result(_args: BashArgs, result: ToolResult) -> TerminalResultView:
        if meta_field(result.meta, "background", bool) and not result.is_error:
            # Started: the card stays live, streaming, until the command ends (the host keeps it).
            return TerminalResultView(output=content_text(result.content), background=True)
        output = meta_field(result.meta, "output", str)
        if output is None:  # no meta (an error before the command ran): show the message
            return TerminalResultView(output=result.error.message if result.error else None)
        if result.error is not None and (
            meta_field(result.meta, "timed_out", bool) or meta_field(result.meta, "spill_error", str)
        ):
            output = result.error.message  # the reason, with the output it kept
        return TerminalResultView(
            output=output,
            exit_code=meta_field(result.meta, "exit_code", int),
            signal=meta_field(result.meta, "signal", str),
            full_output_path=meta_field(result.meta, "full_output_path", str),
        )

    return define_tool(
        name="bash",
        description=(
            "Run a shell command (bash -c) in the working directory, or in workdir. stdout and stderr are "
            "merged; stdin is empty. Long output is cut to its start and end, with the full output saved "
            "to a file whose path is given. Default timeout 120000 ms, at most 600000. With "
            "run_in_background the call returns at once and the command runs on (a dev server, a long "
            "build): bash_output reads its new output, kill_bash stops it, and you are told when it ends. "
            "A job started with & and its output redirected keeps running until the session ends. Do not "
            "use it to read, search or edit files when read, grep, glob or edit can."
        ),
        parameters=BashArgs,
        output=Output(type=BashValue, render=_render, presentation_meta=_meta),
        execute=execute,
        concurrency_safe=False,
        present_call=present_call,
        present_result=present_result,
    )
