"""The process's stdio as a face's transport: the claim, newline-delimited framing, and the one writer.

`claim_stdio` moves the protocol to private descriptors: fd 0 becomes /dev/null and fd 1 becomes stderr,
so neither a stray `print` nor a tool's child process can corrupt or steal protocol frames. A face's
command claims stdio before anything else runs (tools and model set up, an `--extra-tools` module's
import included) and hands the descriptors to its server.

`FrameWriter` is the one writer of the output descriptor: frames leave in the order `send` (a JSON
message, newline-terminated) or `send_bytes` (a frame the face encoded itself, such as LSP's
Content-Length framing) was called; a full pipe never blocks the event loop. A long burst (a
`session/load` replaying thousands of cards in one go) leaves in chunks as it is produced, so the client
reads and parses it while the rest is made, instead of after. Before any frame is
written, the process's output barrier runs (`set_output_barrier`: the session log's queued lines go to
disk first, so a client is never told about an event its log could still lose). `LineReader` reads
newline-terminated frames of up to `max_line` bytes (default 64 MiB); a longer one is discarded and
reported as `TOO_LONG`. Input the event loop cannot watch (`watchable`: a regular file, /dev/null) is
read by a thread.

Must not: import a face or the core, know JSON-RPC envelopes, or write anything but frames to the output.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from acp_bridge.common.json_bytes import dumps

log = logging.getLogger(__name__)

# The protocol's (input, output) descriptors, once claimed.
Stdio = tuple[int, int]

DEFAULT_MAX_LINE = 64 * 1024 * 1024
READ_CHUNK = 256 * 1024
# Above this many queued bytes `drain()` waits for the client to read (the transport's high-water mark).
_HIGH_WATER = 4 * 1024 * 1024
_LOW_WATER = 1024 * 1024
# A batch this large is written at once rather than at the end of its event-loop iteration: well under
# the pipe's capacity, so it goes straight into the pipe (asyncio writes directly while its own buffer is
# empty) and the client can read it while the burst goes on.
_FLUSH_AT = 64 * 1024
# The output pipe's capacity asked for (Linux `F_SETPIPE_SZ`): the default 64 KiB fills after a chunk
# whenever the client falls briefly behind, and then the rest of a burst waits in our buffer until the
# burst ends. Four chunks, not the 1 MiB allowed: every page counts against the user's pipe quota
# (`pipe-user-pages-soft`), past which each new pipe of theirs gets a single page.
_PIPE_SIZE = 256 * 1024


# What runs before any frame leaves the process: the session store's `flush`, installed by the core's
# set-up (`boot`). One per process, as the output is; None: nothing to do.
_output_barrier: Callable[[], None] | None = None


def set_output_barrier(barrier: Callable[[], None] | None) -> None:
    """Run `barrier` before every write of frames to the output, from now on (None: no more)."""
    global _output_barrier
    _output_barrier = barrier


def _before_output() -> None:
    barrier = _output_barrier
    if barrier is not None:
        try:
            barrier()
        except Exception:  # a failing barrier must not stop the frames: it logs its own troubles
            log.exception("the output barrier failed")


def claim_stdio() -> Stdio:
    """Move the protocol to private fds (returned: input, output); point fd 0 at /dev/null and fd 1 at
    stderr, so neither a stray print nor a child process can touch the protocol streams. Any stdio face
    calls this first."""
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return in_fd, out_fd


def watchable(fd: int) -> bool:
    """Whether the event loop can wait for input on `fd`: a pipe, a socket or a terminal. Not a regular
    file, nor another device such as /dev/null: asyncio accepts a device, then epoll refuses it (EPERM)
    inside a loop callback, after `connect_read_pipe` returned, and the read would wait forever."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


def encode_frame(message: Mapping[str, Any]) -> bytes:
    """One newline-delimited JSON frame."""
    # An exotic value in an error's data is spelled as its `str()` and a lone surrogate (from undecodable
    # tool output) as "?" (`json_bytes.dumps`): nothing a tool returns can kill the writer.
    return dumps(message) + b"\n"


def _enlarge_pipe(fd: int) -> None:
    """Ask for a larger pipe behind `fd` (see `_PIPE_SIZE`), never a smaller one; best effort: only Linux
    has it (hence the import here), and a user over its pipe quota keeps the default."""
    try:
        import fcntl

        get_size, set_size = getattr(fcntl, "F_GETPIPE_SZ", None), getattr(fcntl, "F_SETPIPE_SZ", None)
        if get_size is None or set_size is None or not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        if fcntl.fcntl(fd, get_size) < _PIPE_SIZE:
            fcntl.fcntl(fd, set_size, _PIPE_SIZE)
    except OSError as exc:
        log.debug("output pipe keeps its size: %s", exc)


class _WriteProtocol(asyncio.BaseProtocol):
    def __init__(self, on_lost: Callable[[], None]) -> None:
        self.paused = False
        self.closed = False
        self.lost = asyncio.Event()
        self._on_lost = on_lost
        self._waiters: list[asyncio.Future[None]] = []

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost.set()
        self._wake()
        # Also when the reader closed its end while we were idle (asyncio watches a pipe's write end
        # for that): nobody reads our frames any more.
        self._on_lost()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def wait_writable(self) -> None:
        if not self.paused or self.closed:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        await waiter


class FrameWriter:
    """The one writer of the output fd. `send` is synchronous; frames leave in call order.

    Frames sent within one event-loop iteration are written together (one system call instead of one
    per frame: a step of 200 calls produces 400 updates in a burst), at the end of that iteration, or
    as soon as `_FLUSH_AT` bytes are waiting (a burst of megabytes reaches the client as it is made).
    `on_lost` is called once when the output closes under us (EPIPE: nobody reads our frames any more).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._transport: asyncio.WriteTransport | None = None
        self._protocol: _WriteProtocol | None = None
        self._closed = False
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._flush_scheduled = False
        self.on_lost: Callable[[], None] | None = None

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        # Wrapping an already-open fd never blocks; the transport owns the wrapper from here.
        pipe = open(self._fd, "wb", buffering=0, closefd=False)  # noqa: SIM115, ASYNC230
        try:
            transport, protocol = await loop.connect_write_pipe(lambda: _WriteProtocol(self._lost), pipe)
        except ValueError:
            # A regular file (e.g. `serve > log`): no pipe transport exists for it; write synchronously.
            pipe.close()
            log.debug("output fd %d is not a pipe; writing synchronously", self._fd)
            return
        transport.set_write_buffer_limits(high=_HIGH_WATER, low=_LOW_WATER)
        _enlarge_pipe(self._fd)
        self._transport = transport
        self._protocol = protocol

    @property
    def closed(self) -> bool:
        return self._closed or (self._protocol is not None and self._protocol.closed)

    def send(self, message: Mapping[str, Any]) -> None:
        """Queue one message as a newline-delimited JSON frame."""
        if self.closed:
            return
        self.send_bytes(encode_frame(message))

    def send_bytes(self, data: bytes) -> None:
        """Queue one already-encoded frame, for a face with its own framing (LSP's Content-Length
        headers). It leaves in call order with every other frame; dropped once the output is closed."""
        if self.closed or not data:
            return
        if self._transport is None:
            self._write_sync(data)
            return
        self._batch.append(data)
        self._batch_size += len(data)
        if self._batch_size >= _FLUSH_AT:
            self._flush()
        elif not self._flush_scheduled:
            asyncio.get_running_loop().call_soon(self._flush)
            self._flush_scheduled = True

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._batch:
            return
        data = b"".join(self._batch)
        self._batch.clear()
        self._batch_size = 0
        if self.closed or self._transport is None:
            return
        _before_output()
        try:
            self._transport.write(data)
        except (OSError, RuntimeError) as exc:
            log.warning("client output closed: %s", exc)
            self._lost()

    def _write_sync(self, data: bytes) -> None:
        _before_output()
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError as exc:
            log.warning("client output closed: %s", exc)
            self._lost()

    def _lost(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.on_lost is not None:
            self.on_lost()

    def backlog(self) -> int:
        queued = self._transport.get_write_buffer_size() if self._transport is not None else 0
        return queued + self._batch_size

    async def drain(self) -> None:
        if self._protocol is not None and not self.closed:
            if self._batch_size > _HIGH_WATER:
                self._flush()
            await self._protocol.wait_writable()

    def close(self) -> None:
        """Stop accepting frames; the output closes once what is queued has been written (no waiting)."""
        self._flush()
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    async def aclose(self, within: float = 1.0) -> None:
        """`close`, then wait (at most `within` s) until what is queued has been written."""
        self.close()
        if self._protocol is None:
            return
        try:
            await asyncio.wait_for(self._protocol.lost.wait(), within)
        except TimeoutError:
            log.warning("the client did not read our last frames in time")


class LineReader:
    """Reads newline-terminated frames from an fd; a line over `max_line` bytes becomes `TOO_LONG`."""

    TOO_LONG = b"\x00too-long"

    def __init__(self, fd: int, max_line: int = DEFAULT_MAX_LINE) -> None:
        self._fd = fd
        self._max = max_line
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._buffer = bytearray()
        self._discarding = False
        self._eof = False
        self._pending: deque[bytes] = deque()
        self._stopped = False

    async def start(self) -> None:
        if not watchable(self._fd):
            return  # a regular file or a device: `_read_chunk` reads it in a worker thread
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
        # Wrapping an already-open fd never blocks; the transport owns the wrapper from here.
        pipe = open(self._fd, "rb", buffering=0, closefd=False)  # noqa: SIM115, ASYNC230
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe
        )
        self._reader = reader
        self._transport = transport

    def stop(self) -> None:
        """End reading as at EOF (e.g. on SIGTERM): `next_line` returns None from now on, a pending call
        included; frames read but not yet returned are dropped. (Only the pipe read can be waiting
        indefinitely; a regular file's read in the worker thread returns at once.)"""
        self._stopped = True
        self._pending.clear()
        if self._transport is not None:
            # Closing (not just feeding EOF) so data arriving later is never fed to the ended reader.
            self._transport.close()

    async def _read_chunk(self) -> bytes:
        if self._reader is not None:
            return await self._reader.read(READ_CHUNK)
        return await asyncio.to_thread(os.read, self._fd, READ_CHUNK)

    async def next_line(self) -> bytes | None:
        """The next frame without its newline (`TOO_LONG` for an oversized one), or None at EOF (or
        after `stop`)."""
        while True:
            if self._stopped:
                return None
            if self._pending:
                return self._pending.popleft()
            if self._eof:
                return None
            chunk = await self._read_chunk()
            if not chunk:
                self._eof = True
                if self._buffer and not self._discarding:
                    # A last frame without a trailing newline still counts.
                    self._pending.append(bytes(self._buffer))
                self._buffer.clear()
                continue
            self._split(chunk)

    def _split(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            if end < 0:
                if not self._discarding:
                    self._buffer += chunk[start:]
                    if len(self._buffer) > self._max:
                        self._buffer.clear()
                        self._discarding = True
                        self._pending.append(self.TOO_LONG)
                return
            if self._discarding:
                self._discarding = False
            else:
                self._buffer += chunk[start:end]
                if len(self._buffer) > self._max:
                    self._pending.append(self.TOO_LONG)
                else:
                    self._pending.append(bytes(self._buffer))
                self._buffer.clear()
            start = end + 1
