"""JSON-RPC 2.0 over the stdio frames (`stdio.LineReader` in, `stdio.FrameWriter` out): envelope checks,
dispatch, and our own requests.

Why not the ACP SDK's `Connection`: `import acp` costs about 450 ms (its generated schema builds ~300 pydantic
models at import), measured on the 2-core CI machine, and the target is `initialize` answered within 400 ms
of spawn. The SDK also skips unparsable lines silently instead of answering -32700. So the agent side keeps
this thin layer (the wire shapes still come from the protocol: the tests validate every frame we emit
against the SDK's schema, and drive us with the SDK's client).

What it does: answers -32600 for a line over the reader's size limit, -32700 for unparsable JSON and
-32600 for batches, non-objects and malformed envelopes (all with `id: null` unless an id could be read),
runs each incoming request and notification as its own task (so a long `session/prompt` never blocks
`session/cancel`), and correlates responses to our own requests.
Ids: an id is echoed as is (JSON-RPC requires it) when it is a string or integer of at most `MAX_ID_CHARS`
characters; a longer one is refused with `id: null`. A request reusing the id of one still in flight is
refused (-32600) and the first keeps running, so `$/cancel_request` still finds it. Error answers quote
at most a few hundred characters of what the request carried (`errors.error_obj`).

Must not: know any ACP method or session semantics; print; write to the output but through the writer.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from acp_bridge.common.errors import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    MAX_QUOTED_CHARS,
    PARSE_ERROR,
    BridgeError,
    ConnectionClosed,
    MethodNotFound,
    RemoteError,
    bounded_text,
    error_obj,
    quoted,
)
from acp_bridge.runtime.stdio import FrameWriter, LineReader

log = logging.getLogger(__name__)

# The longest request id echoed back (in characters of its JSON text): far above any real client's (SDKs
# count up from 0; a UUID has 36), far below an id sent to make every answer to it huge.
MAX_ID_CHARS = 256

Params = Any
RequestHandler = Callable[[Params, int | str | None], Awaitable[Any]]
NotificationHandler = Callable[[Params], Awaitable[None]]


# A NamedTuple, not a dataclass: cheap to define, on the way to answering `initialize` (see `settings.Mode`).
class Reply(NamedTuple):
    """A handler result plus work to start right after the response is written (e.g. follow-up updates
    that must not delay the response)."""

    result: Any
    then: Callable[[], None] | None = None


def _error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": error_obj(code, message, data)}


def _valid_id(value: object) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _oversized_id(value: object) -> bool:
    if isinstance(value, str):
        return len(value) > MAX_ID_CHARS
    # An integer's digits count as characters (json parses integers of thousands of digits).
    return isinstance(value, int) and len(str(value)) > MAX_ID_CHARS


class JsonRpcPeer:
    """Dispatches incoming frames to handlers and sends our own requests and notifications."""

    def __init__(
        self,
        reader: LineReader,
        writer: FrameWriter,
        requests: Mapping[str, RequestHandler],
        notifications: Mapping[str, NotificationHandler],
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._requests = requests
        self._notifications = notifications
        self._ids = itertools.count()
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        # Incoming request id → its handler task (so `$/cancel_request` and hooks can find it).
        self.in_flight: dict[int | str, asyncio.Task[None]] = {}
        writer.on_lost = self._on_writer_lost

    @property
    def writer(self) -> FrameWriter:
        return self._writer

    @property
    def closed(self) -> bool:
        return self._closed

    # --- outgoing ---------------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        self._writer.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and await its result. Raises RemoteError for an error answer, ConnectionClosed
        when the transport goes away first. Cancelling the caller withdraws it (`$/cancel_request`)."""
        if self._closed or self._writer.closed:
            raise ConnectionClosed(f"cannot send {method}: the client connection is closed")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        self._writer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        try:
            return await future
        except asyncio.CancelledError:
            if self._pending.pop(request_id, None) is not None and not self._writer.closed:
                # ACP's protocol-level cancellation: the client may drop its UI for this request.
                self.notify("$/cancel_request", {"requestId": request_id})
            raise
        finally:
            self._pending.pop(request_id, None)

    # --- incoming ---------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read and dispatch until EOF (or the output closes). Handler tasks may still be running."""
        while not self._closed:
            line = await self._reader.next_line()
            if line is None:
                break
            self._handle_line(line)
        self._close_pending()

    def _handle_line(self, line: bytes) -> None:
        if line is LineReader.TOO_LONG:
            self._writer.send(
                _error(None, INVALID_REQUEST, "Invalid request: message exceeds the size limit")
            )
            return
        if not line.strip():
            return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            log.warning("unparsable frame (%d bytes): %s", len(line), exc)
            self._writer.send(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
            return
        if isinstance(message, list):
            self._writer.send(
                _error(None, INVALID_REQUEST, "Invalid request: JSON-RPC batches are not supported")
            )
            return
        if not isinstance(message, dict):
            self._writer.send(
                _error(None, INVALID_REQUEST, "Invalid request: a message must be a JSON object")
            )
            return
        self._dispatch(message)

    def _dispatch(self, message: dict[str, Any]) -> None:
        has_id = "id" in message
        id_ = message.get("id")
        reply_id = id_ if _valid_id(id_) and not _oversized_id(id_) else None
        if message.get("jsonrpc") != "2.0":
            if has_id or "method" not in message:
                self._writer.send(
                    _error(reply_id, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
                )
            return
        if has_id and not _valid_id(id_):
            self._writer.send(
                _error(None, INVALID_REQUEST, "Invalid request: id must be a string, integer or null")
            )
            return
        if has_id and _oversized_id(id_):
            self._writer.send(
                _error(None, INVALID_REQUEST, f"Invalid request: id is longer than {MAX_ID_CHARS} characters")
            )
            return
        method = message.get("method")
        if "method" in message:
            if not isinstance(method, str):
                if has_id:
                    self._writer.send(
                        _error(reply_id, INVALID_REQUEST, "Invalid request: method must be a string")
                    )
                return
            params = message.get("params")
            if has_id and id_ is not None and id_ in self.in_flight:
                # Two requests under one id could not be told apart by the client's answers nor by
                # `$/cancel_request`: the first keeps the id, the second is refused under it.
                self._writer.send(
                    _error(
                        id_,
                        INVALID_REQUEST,
                        f"Invalid request: id {quoted(id_)} is in use by a request still in flight; "
                        "use a new id for each request",
                    )
                )
                return
            if has_id:
                self._spawn(self._run_request(method, params, id_), id_)
            else:
                self._spawn(self._run_notification(method, params), None)
            return
        if has_id and ("result" in message or "error" in message):
            self._resolve(message)
            return
        self._writer.send(
            _error(reply_id, INVALID_REQUEST, "Invalid request: neither a request nor a response")
        )

    def _spawn(self, coro: Awaitable[None], request_id: int | str | None) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        if request_id is not None:
            self.in_flight[request_id] = task

        def done(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            if request_id is not None and self.in_flight.get(request_id) is t:
                del self.in_flight[request_id]

        task.add_done_callback(done)

    async def _run_request(self, method: str, params: Any, id_: int | str | None) -> None:
        handler = self._requests.get(method)
        then: Callable[[], None] | None = None
        try:
            if handler is None:
                raise MethodNotFound(
                    f"Method not found: {bounded_text(method, MAX_QUOTED_CHARS)}", data={"method": method}
                )
            result = await handler(params, id_)
            if isinstance(result, Reply):
                result, then = result.result, result.then
            response: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "result": result}
        except BridgeError as exc:
            response = {"jsonrpc": "2.0", "id": id_, "error": exc.to_error_obj()}
        except asyncio.CancelledError:
            # The connection is shutting down; the client gets no answer to this request.
            raise
        except Exception as exc:
            log.exception("request %s failed", method)
            response = _error(id_, INTERNAL_ERROR, f"Internal error: {exc}", {"details": repr(exc)})
        self._writer.send(response)
        if then is not None:
            try:
                then()
            except Exception:
                log.exception("follow-up of %s failed", method)

    async def _run_notification(self, method: str, params: Any) -> None:
        handler = self._notifications.get(method)
        if handler is None:
            # JSON-RPC: notifications are never answered; unknown ones are ignored (ACP says so too).
            log.debug("ignoring unknown notification %s", method)
            return
        try:
            await handler(params)
        except BridgeError as exc:
            log.warning("notification %s rejected: %s", method, exc.message)
        except Exception:
            log.exception("notification %s failed", method)

    def _resolve(self, message: dict[str, Any]) -> None:
        id_ = message["id"]
        future = self._pending.pop(id_, None) if isinstance(id_, int) else None
        if future is None or future.done():
            log.debug("response to unknown or withdrawn request %r", id_)
            return
        if "error" in message:
            err = message["error"]
            if isinstance(err, Mapping):
                code = err.get("code")
                future.set_exception(
                    RemoteError(
                        code if isinstance(code, int) else INTERNAL_ERROR,
                        str(err.get("message", "error")),
                        err.get("data"),
                    )
                )
            else:
                future.set_exception(RemoteError(INTERNAL_ERROR, f"malformed error object: {err!r}"))
            return
        future.set_result(message.get("result"))

    # --- shutdown ---------------------------------------------------------------------------------

    def _on_writer_lost(self) -> None:
        # Nobody reads our answers any more (EPIPE): stop reading too, so the caller shuts down as at EOF.
        self._close_pending()
        self._reader.stop()

    def _close_pending(self) -> None:
        self._closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed("the client connection closed"))

    async def wait_handlers(self, within: float) -> None:
        """Wait up to `within` s for running handlers, then cancel the rest and wait for them to end."""
        tasks = set(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=within)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=1.0)
