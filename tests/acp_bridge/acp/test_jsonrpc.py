"""The JSON-RPC layer in process over real OS pipes: framing, envelope errors, dispatch, our own requests."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

from acp_bridge.acp.jsonrpc import JsonRpcPeer, Reply
from acp_bridge.common.errors import ConnectionClosed, InvalidParams, RemoteError
from acp_bridge.runtime.stdio import FrameWriter, LineReader
from tests.support.eventually import eventually


class Pipes:
    """A peer wired to two pipes: `feed()` writes what the client sends, `frames()` reads what it got."""

    def __init__(self, requests: dict[str, Any], notifications: dict[str, Any], max_line: int) -> None:
        self.in_r, self.in_w = os.pipe()
        self.out_r, self.out_w = os.pipe()
        self.requests = requests
        self.notifications = notifications
        self.max_line = max_line
        self._buffer = b""
        self.peer: JsonRpcPeer | None = None
        self.reader: LineReader | None = None
        self.runner: asyncio.Task[None] | None = None

    async def start(self) -> JsonRpcPeer:
        reader = self.reader = LineReader(self.in_r, self.max_line)
        writer = FrameWriter(self.out_w)
        await reader.start()
        await writer.start()
        os.set_blocking(self.out_r, False)
        self.peer = JsonRpcPeer(reader, writer, self.requests, self.notifications)
        self.runner = asyncio.ensure_future(self.peer.run())
        return self.peer

    def feed(self, data: bytes) -> None:
        os.write(self.in_w, data)

    async def frames(self, count: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while len(out) < count:
            try:
                self._buffer += os.read(self.out_r, 1 << 20)
            except BlockingIOError:
                if loop.time() > deadline:
                    raise TimeoutError(f"got {out}") from None
                await asyncio.sleep(0.005)
            *lines, self._buffer = self._buffer.split(b"\n")
            out += [json.loads(line) for line in lines if line]
        return out

    def close(self) -> None:
        for fd in (self.in_w, self.out_r):
            try:
                os.close(fd)
            except OSError:
                pass


@pytest.fixture
async def pipes() -> AsyncIterator[Any]:
    made: list[Pipes] = []

    async def make(requests: dict[str, Any] | None = None, notifications: dict[str, Any] | None = None,
                   max_line: int = 1 << 20) -> Pipes:  # fmt: skip
        p = Pipes(requests or {}, notifications or {}, max_line)
        await p.start()
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()
        if p.runner is not None:
            await asyncio.wait_for(p.runner, 2)


async def echo(params: Any, request_id: Any) -> Any:
    return {"echo": params}


async def test_frames_split_across_writes_and_packed_together_are_all_answered(pipes: Any) -> None:
    p = await pipes({"echo": echo})
    one = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "echo", "params": {"n": 1}}).encode()
    two = json.dumps({"jsonrpc": "2.0", "id": "two", "method": "echo", "params": [2]}).encode()
    p.feed(one[:10])
    # Proven split: the reader holds the first half as an unfinished line before the rest is written.
    assert p.reader is not None
    await eventually(lambda: bytes(p.reader._buffer) == one[:10], within=5, what="the first half to be read")
    p.feed(one[10:] + b"\n" + two + b"\n\n  \n")
    frames = await p.frames(2)
    assert {f["id"]: f["result"] for f in frames} == {1: {"echo": {"n": 1}}, "two": {"echo": [2]}}


async def test_an_oversized_line_is_refused_and_the_next_one_still_works(pipes: Any) -> None:
    p = await pipes({"echo": echo}, max_line=1000)
    p.feed(b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"' + b"x" * 5000 + b'"}\n')
    p.feed(b'{"jsonrpc":"2.0","id":2,"method":"echo"}\n')
    too_long, ok = await p.frames(2)
    assert too_long["id"] is None
    assert too_long["error"]["code"] == -32600
    assert "size limit" in too_long["error"]["message"]
    assert ok == {"jsonrpc": "2.0", "id": 2, "result": {"echo": None}}


async def test_handler_errors_become_error_objects(pipes: Any) -> None:
    async def picky(params: Any, request_id: Any) -> Any:
        raise InvalidParams("x must be positive", data={"x": -1})

    async def buggy(params: Any, request_id: Any) -> Any:
        raise KeyError("oops")

    p = await pipes({"picky": picky, "buggy": buggy})
    p.feed(b'{"jsonrpc":"2.0","id":1,"method":"picky"}\n{"jsonrpc":"2.0","id":2,"method":"buggy"}\n')
    p.feed(b'{"jsonrpc":"2.0","id":3,"method":"missing"}\n')
    by_id = {f["id"]: f["error"] for f in await p.frames(3)}
    assert by_id[1] == {"code": -32602, "message": "x must be positive", "data": {"x": -1}}
    assert by_id[2]["code"] == -32603
    assert "oops" in by_id[2]["message"]
    assert by_id[3]["code"] == -32601


async def test_a_reply_follow_up_runs_after_the_response_is_written(pipes: Any) -> None:
    async def new(params: Any, request_id: Any) -> Any:
        return Reply({"ok": True}, then=lambda: peer.notify("after", {}))

    p = await pipes({"new": new})
    peer = p.peer
    p.feed(b'{"jsonrpc":"2.0","id":1,"method":"new"}\n')
    response, notification = await p.frames(2)
    assert response["result"] == {"ok": True}
    assert notification["method"] == "after"


async def test_notifications_are_never_answered(pipes: Any) -> None:
    seen: list[Any] = []

    async def note(params: Any) -> None:
        seen.append(params)

    p = await pipes({"echo": echo}, {"note": note})
    p.feed(b'{"jsonrpc":"2.0","method":"note","params":{"a":1}}\n{"jsonrpc":"2.0","method":"unknown"}\n')
    p.feed(b'{"jsonrpc":"2.0","id":9,"method":"echo"}\n')
    (only,) = await p.frames(1)
    assert only["id"] == 9
    assert seen == [{"a": 1}]


async def test_our_requests_resolve_fail_and_withdraw(pipes: Any) -> None:
    p = await pipes()
    peer = p.peer
    ok = asyncio.ensure_future(peer.request("ask", {"q": 1}))
    bad = asyncio.ensure_future(peer.request("ask", {"q": 2}))
    gone = asyncio.ensure_future(peer.request("ask", {"q": 3}))
    sent = await p.frames(3)
    ids = [f["id"] for f in sent]
    p.feed(json.dumps({"jsonrpc": "2.0", "id": ids[0], "result": {"a": 1}}).encode() + b"\n")
    p.feed(
        json.dumps({"jsonrpc": "2.0", "id": ids[1], "error": {"code": -32002, "message": "nope"}}).encode()
        + b"\n"
    )
    assert await ok == {"a": 1}
    with pytest.raises(RemoteError) as caught:
        await bad
    assert (caught.value.code, caught.value.message) == (-32002, "nope")
    gone.cancel()
    (withdrawn,) = await p.frames(1)
    assert withdrawn == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": ids[2]}}
    # A late answer to a withdrawn request is ignored.
    p.feed(json.dumps({"jsonrpc": "2.0", "id": ids[2], "result": {}}).encode() + b"\n")


async def test_eof_fails_pending_requests_with_connection_closed(pipes: Any) -> None:
    p = await pipes()
    pending = asyncio.ensure_future(p.peer.request("ask", {}))
    await p.frames(1)
    os.close(p.in_w)
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(pending, 2)
    with pytest.raises(ConnectionClosed):
        await p.peer.request("ask", {})


async def test_a_last_frame_without_newline_counts(pipes: Any) -> None:
    p = await pipes({"echo": echo})
    p.feed(b'{"jsonrpc":"2.0","id":7,"method":"echo"}')
    os.close(p.in_w)
    (response,) = await p.frames(1)
    assert response["id"] == 7


async def _read_until_eof(fd: int) -> bytes:
    data = b""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while loop.time() < deadline:
        try:
            chunk = os.read(fd, 1 << 20)
        except BlockingIOError:
            await asyncio.sleep(0.005)
            continue
        if not chunk:
            return data
        data += chunk
    raise TimeoutError(f"no EOF; got {data!r}")


async def test_send_bytes_keeps_call_order_with_frames_and_close_flushes_then_drops() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    writer = FrameWriter(write_fd)
    try:
        await writer.start()
        writer.send_bytes(b"Content-Length: 2\r\n\r\n{}")
        writer.send({"jsonrpc": "2.0", "method": "between"})
        writer.send_bytes(b"tail")
        writer.close()  # before the batch's end-of-iteration flush: close must write it first
        writer.send_bytes(b"after close")
        writer.send({"jsonrpc": "2.0", "method": "after close"})
        await writer.aclose()  # waits until the transport has written everything
    finally:
        os.close(write_fd)  # the transport never owned the fd: EOF comes when we close it
    try:
        received = await _read_until_eof(read_fd)
    finally:
        os.close(read_fd)
    assert received == b'Content-Length: 2\r\n\r\n{}{"jsonrpc":"2.0","method":"between"}\ntail'
