"""acp_bridge.runtime.stdio: input the event loop cannot watch (a regular file, /dev/null) is still read to
its end, in process and for both faces as real subprocesses (`acp-bridge serve < /dev/null` ends as at
EOF); a long burst of frames reaches the reader while it is being made, in order."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_bridge.runtime.stdio import FrameWriter, LineReader, watchable
from tests.support.bridge_harness import REPO
from tests.support.eventually import eventually


@pytest.fixture
def dev_null() -> Iterator[int]:
    fd = os.open(os.devnull, os.O_RDONLY)
    yield fd
    os.close(fd)


def test_only_pipes_sockets_and_terminals_are_watched(tmp_path: Path, dev_null: int) -> None:
    read_end, write_end = os.pipe()
    regular = tmp_path / "frames"
    regular.write_text("{}\n")
    file_fd = os.open(regular, os.O_RDONLY)
    try:
        assert watchable(read_end)
        assert not watchable(file_fd)
        assert not watchable(dev_null)
    finally:
        for fd in (read_end, write_end, file_fd):
            os.close(fd)


async def test_a_line_reader_on_dev_null_sees_eof(dev_null: int) -> None:
    reader = LineReader(dev_null)
    await reader.start()
    # Bounded: before, epoll refused /dev/null inside a loop callback and this read waited forever.
    assert await asyncio.wait_for(reader.next_line(), 5) is None


async def test_a_line_reader_on_a_regular_file_reads_every_frame(tmp_path: Path) -> None:
    regular = tmp_path / "frames"
    regular.write_bytes(b'{"a":1}\n{"b":2}')
    fd = os.open(regular, os.O_RDONLY)
    try:
        reader = LineReader(fd)
        await reader.start()
        assert [await asyncio.wait_for(reader.next_line(), 5) for _ in range(3)] == [
            b'{"a":1}',
            b'{"b":2}',
            None,
        ]
    finally:
        os.close(fd)


@pytest.mark.slow
@pytest.mark.parametrize("face", ["serve", "lsp"])
def test_a_face_with_stdin_from_dev_null_ends_as_at_eof(face: str, tmp_path: Path) -> None:
    with open(os.devnull, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "acp_bridge", face],
            stdin=stdin,
            capture_output=True,
            cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=20,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr, done.stderr.decode()


async def test_a_long_burst_reaches_the_reader_while_it_is_made() -> None:
    # A `session/load` sends thousands of frames without yielding to the event loop: they must not all
    # wait for the end of that iteration, so the client parses the first ones while the rest are made.
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    writer = FrameWriter(write_end)
    received = bytearray()

    def read_some() -> bool:
        try:
            received.extend(os.read(read_end, 1 << 20))
        except BlockingIOError:
            pass
        return received.endswith(b'"n":299}}\n')

    try:
        await writer.start()
        if hasattr(fcntl, "F_GETPIPE_SZ"):  # Linux: room for the client to fall behind for a while
            assert fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ) >= 256 * 1024
        for n in range(300):  # ~300 KB in one iteration
            writer.send({"jsonrpc": "2.0", "method": "update", "params": {"text": "x" * 1000, "n": n}})
            read_some()
        assert received  # before the iteration ended
        await eventually(read_some, what="the whole burst")
    finally:
        writer.close()
        os.close(write_end)
        os.close(read_end)
    frames = [json.loads(line) for line in received.splitlines()]
    assert [frame["params"]["n"] for frame in frames] == list(range(300))
