"""The stdio transport: an MCP server as a child process in a process group of its own.

The SDK's `stdio_client` starts the server with a trimmed environment, sends its stderr to a file and
gives it seconds to stop; the bridge needs the server to see the user's environment (its secrets were
taken out at start-up, `credentials.py`), the last lines of its stderr when it fails, its exit status when
it crashes, and the whole process group gone promptly when its session ends. So this transport is ours,
speaking the SDK's stream protocol (`SessionMessage`s over anyio memory streams): newline-delimited
JSON-RPC on the child's stdin/stdout, as the MCP specification's stdio transport defines it.

Stopping follows the specification's order (close stdin, wait, SIGTERM, SIGKILL), with short waits and on
the process group, so whatever the server started in it (`npx` → `node`) stops with it.

Must not: be imported before a session has servers (it loads the SDK).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import signal
from types import TracebackType
from typing import Final

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from .config import StdioServer

log = logging.getLogger(__name__)

MAX_LINE: Final = 64 * 1024 * 1024
STDERR_LINES: Final = 20
STDERR_LINE_CHARS: Final = 500
# Stopping: after stdin closes, the server gets this long to exit by itself, then SIGTERM, then SIGKILL.
EXIT_GRACE_S: Final = 0.3
TERM_GRACE_S: Final = 0.5

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


class StdioProcess:
    """`async with StdioProcess(config, cwd) as (read, write)`: the server runs for the block."""

    def __init__(self, config: StdioServer, cwd: str) -> None:
        self.config = config
        # The session's directory, where a project's server expects to run (when it exists).
        self.cwd = cwd if os.path.isdir(cwd) else None
        self.process: asyncio.subprocess.Process | None = None
        self.exited = asyncio.Event()
        self.stopping = False
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def exit_code(self) -> int | None:
        return self.process.returncode if self.process is not None else None

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def describe_exit(self) -> str:
        code = self.exit_code
        if code is None:
            return "its process ended"
        if code < 0:
            try:
                return f"it was killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"it was killed by signal {-code}"
        return f"it exited with code {code}"

    async def __aenter__(self) -> Streams:
        config = self.config
        env = dict(os.environ)
        env.update(config.env)
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.subprocess_exec(
            lambda: _ExitAwareProtocol(loop, self.exited),
            config.command,
            *config.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=self.cwd,
            env=env,
            start_new_session=True,  # its own process group, stopped as one
        )
        self.process = process = asyncio.subprocess.Process(transport, protocol, loop)
        read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](16)
        self._read_send, self._write_send = read_send, write_send
        self._tasks = [
            asyncio.ensure_future(self._read(process, read_send)),
            asyncio.ensure_future(self._write(process, write_receive, read_send)),
            asyncio.ensure_future(self._read_stderr(process)),
        ]
        return read_receive, write_send

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def _read(
        self, process: asyncio.subprocess.Process, out: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        assert process.stdout is not None
        try:
            async with out:
                while True:
                    try:
                        line = await process.stdout.readline()
                    except ValueError as exc:  # a line over MAX_LINE: dropped, the session is told
                        await out.send(exc)
                        continue
                    if not line:
                        return
                    if not line.strip():
                        continue
                    try:
                        message: SessionMessage | Exception = SessionMessage(
                            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                        )
                    except ValueError as exc:
                        log.warning(
                            "MCP server %s wrote a line that is not JSON-RPC: %.200r", self.config.name, line
                        )
                        message = exc
                    await out.send(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return

    async def _write(
        self,
        process: asyncio.subprocess.Process,
        messages: MemoryObjectReceiveStream[SessionMessage],
        read_side: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        assert process.stdin is not None
        stdin = process.stdin
        try:
            async with messages:
                async for message in messages:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
        except (ConnectionError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The server stopped reading: end the read side too, so no request waits for an answer.
            await read_side.aclose()
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        while True:
            try:
                line = await process.stderr.readline()
            except ValueError:
                continue  # an endless line: skipped
            if not line:
                return
            text = line.decode(errors="replace").rstrip()
            if text:
                log.debug("MCP server %s: %s", self.config.name, text)
                self._stderr.append(
                    text if len(text) <= STDERR_LINE_CHARS else text[:STDERR_LINE_CHARS] + "…"
                )

    async def stop(self) -> None:
        """Stop the server (idempotent): stdin closed, then SIGTERM and SIGKILL to its process group."""
        self.stopping = True
        process = self.process
        if process is None:
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._write_send.aclose()
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        if not await self._exited_within(EXIT_GRACE_S):
            _signal_group(process.pid, signal.SIGTERM)
            if not await self._exited_within(TERM_GRACE_S):
                _signal_group(process.pid, signal.SIGKILL)
                await self._exited_within(TERM_GRACE_S)
        # What the server started in its group goes too, even when the server itself exited cleanly.
        _signal_group(process.pid, signal.SIGKILL)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._read_send.aclose()

    async def _exited_within(self, seconds: float) -> bool:
        try:
            await asyncio.wait_for(self.exited.wait(), seconds)
        except TimeoutError:
            return False
        return True


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a child with stream pipes, which also says when the process itself exited:
    `Process.wait()` waits for the pipes to close as well, and a child the server left holding its stdout
    would hide the crash."""

    def __init__(self, loop: asyncio.AbstractEventLoop, exited: asyncio.Event) -> None:
        super().__init__(limit=MAX_LINE, loop=loop)
        self._exited = exited

    def process_exited(self) -> None:
        super().process_exited()
        self._exited.set()


def _signal_group(pgid: int, signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)
