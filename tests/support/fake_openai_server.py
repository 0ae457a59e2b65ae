"""A real HTTP server on 127.0.0.1 that speaks OpenAI's streaming chat completions (SSE), scripted per test.

Each request to `.../chat/completions` is recorded (method, path, headers, body) in `requests`, then
answered with the next queued response: an SSE stream (`SSE`, or `chat(...)` to build a realistic one,
usage chunk included), an HTTP error with a JSON body and optional `Retry-After` (`HTTPError`), or a
connection closed without any answer (`Disconnect`). An SSE stream can also drop the connection after N
chunks, stall after N chunks until the client goes away, or wait after N chunks until the test releases it
(`Hold`: the test knows the model is mid-answer, does something, then lets the answer finish). With the
queue empty it answers 400 and says so, so an unexpected request fails loudly.

Like a real endpoint it also has:
- `GET .../models` (recorded in `model_requests`): OpenAI's list (`{"object": "list", "data": [...]}`) of
  the `models` it was given, each an object with `id` and whatever metadata a test adds (a context length,
  `supported_parameters`); without `models`, 404 (as an endpoint without the route);
- reasoning effort: a chat request carrying `reasoning_effort` for a listed model whose
  `supported_parameters` lack it is answered 400 with OpenAI's message, using up no response;
- refused keys: with `accepted_keys`, any request whose `Authorization: Bearer` key is not one of them is
  answered 401 with OpenAI's `invalid_api_key` error (recorded, using up no response).
Any other path is answered 404 (recorded in `other_requests`).

In-process: `with FakeOpenAIServer([...]) as server:` runs the server's own event loop in a thread, so
sync and async tests alike can use it; point a backend at `server.base_url`. As a process, for a bridge
subprocess to talk to:

    python tests/support/fake_openai_server.py --script responses.json --port-file port.txt \\
        [--requests-log requests.jsonl]

where responses.json is a list of `response_from_json` objects; the port is written once listening, each
request is appended to the log as one JSON line, and SIGTERM/SIGINT stop it. `--models models.json` (a
list of model objects) and `--accept-key KEY` (repeatable) set the model list and the accepted keys.

Stdlib only (it must run as a plain script), and it never mocks the client side: bytes go over real TCP.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http
import json
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

__all__ = [
    "SSE",
    "Disconnect",
    "FakeOpenAIServer",
    "HTTPError",
    "Hold",
    "RecordedRequest",
    "Response",
    "chat",
    "chat_chunks",
    "response_from_json",
]

# --- responses -----------------------------------------------------------------------------------


class Hold:
    """A point an SSE answer waits at (`SSE(..., hold=hold, hold_after=N)`): once N chunks are sent,
    `reached` is set and the stream waits, its connection open, until `release()` (or the client goes
    away). Usable from any thread; in process only (not in a `--script` file)."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self._lock = threading.Lock()
        self._released = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []

    def release(self) -> None:
        with self._lock:
            self._released = True
            waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # the server's loop already closed
                loop.call_soon_threadsafe(event.set)

    async def wait_reached(self, within: float = 10.0) -> None:
        """From a test's event loop: until the stream is held (TimeoutError after `within` s)."""
        if not await asyncio.to_thread(self.reached.wait, within):
            raise TimeoutError(f"the held answer was not reached within {within} s")

    async def pause(self) -> None:
        """The server's side: mark the point reached and wait for `release()`."""
        event = asyncio.Event()
        with self._lock:
            if not self._released:
                self._waiters.append((asyncio.get_running_loop(), event))
            else:
                event.set()
        self.reached.set()
        await event.wait()


@dataclass(frozen=True)
class SSE:
    """A 200 `text/event-stream` answer.

    `chunks`: a dict is sent as `data: <json>` plus a blank line; a str is sent verbatim (raw SSE text such
    as `": keep-alive\\n\\n"` or a malformed event). `done` appends `data: [DONE]`. `drop_after=N` aborts the
    TCP connection (no final chunk) after N chunks; `stall_after=N` sends N chunks and then holds the
    connection open until the client closes it; `hold` with `hold_after=N` sends N chunks, then waits for
    the test to release the hold before the rest. `delay` is slept before each chunk.
    """

    chunks: Sequence[Mapping[str, Any] | str]
    done: bool = True
    drop_after: int | None = None
    stall_after: int | None = None
    delay: float = 0.0
    content_type: str = "text/event-stream"
    hold: Hold | None = field(default=None, compare=False)
    hold_after: int = 1


@dataclass(frozen=True)
class HTTPError:
    """An error status with OpenAI's error body `{"error": {"message", "type", "code"}}` (or `body`)."""

    status: int
    message: str = "fake error"
    body: Any = None
    retry_after: str | None = None


@dataclass(frozen=True)
class Disconnect:
    """Close the connection after reading the request, without sending a byte."""


Response = SSE | HTTPError | Disconnect


def chat_chunks(
    *,
    text: str = "",
    reasoning: str = "",
    tool_calls: Sequence[Mapping[str, Any]] = (),
    usage: Mapping[str, int] | None = None,
    finish_reason: str | None = None,
    piece: int = 7,
    model: str = "fake-model",
) -> list[dict[str, Any]]:
    """The chunks a real server streams for one answer: a role chunk, `reasoning_content` and `content` in
    `piece`-character deltas, each tool call as a first fragment (index, id, name) followed by its
    arguments in `piece`-character fragments, a finish chunk, then a usage-only chunk (`choices: []`).

    A tool call is `{"id", "name", "arguments"}` where `arguments` is an object (sent as its JSON) or a
    string (sent verbatim, e.g. invalid JSON).
    """

    def chunk(delta: Mapping[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": model,
            "choices": [{"index": 0, "delta": dict(delta or {}), "finish_reason": finish}],
        }

    def pieces(s: str) -> list[str]:
        return [s[i : i + piece] for i in range(0, len(s), piece)]

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"reasoning_content": p}) for p in pieces(reasoning)]
    out += [chunk({"content": p}) for p in pieces(text)]
    for index, call in enumerate(tool_calls):
        arguments = call["arguments"]
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        first = {"index": index, "id": call["id"], "type": "function"}
        out.append(chunk({"tool_calls": [{**first, "function": {"name": call["name"], "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in pieces(raw)]
    out.append(chunk(finish=finish_reason or ("tool_calls" if tool_calls else "stop")))
    usage_chunk = chunk()
    usage_chunk["choices"] = []
    usage_chunk["usage"] = dict(usage or {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})
    out.append(usage_chunk)
    return out


def chat(**kwargs: Any) -> SSE:
    """`SSE(chat_chunks(**kwargs))`: a complete, well-formed streamed answer."""
    return SSE(chat_chunks(**kwargs))


def response_from_json(obj: Mapping[str, Any]) -> Response:
    """One response of a `--script` file:

    `{"chat": {chat_chunks keyword arguments}}`, `{"sse": [chunks], "done"?, "drop_after"?, "stall_after"?,
    "delay"?}`, `{"status": 429, "message"?, "body"?, "retry_after"?}` or `{"disconnect": true}`.
    """
    if "chat" in obj:
        return chat(**obj["chat"])
    if "sse" in obj:
        return SSE(
            obj["sse"],
            done=obj.get("done", True),
            drop_after=obj.get("drop_after"),
            stall_after=obj.get("stall_after"),
            delay=obj.get("delay", 0.0),
        )
    if "status" in obj:
        return HTTPError(
            obj["status"],
            obj.get("message", "fake error"),
            body=obj.get("body"),
            retry_after=obj.get("retry_after"),
        )
    if obj.get("disconnect"):
        return Disconnect()
    raise ValueError(f"not a fake server response: {obj!r}")


# --- the server ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class _State:
    """Shared between the test's thread and the server's loop; every access holds `lock`."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    queue: deque[Response] = field(default_factory=deque)
    requests: list[RecordedRequest] = field(default_factory=list)
    model_requests: list[RecordedRequest] = field(default_factory=list)
    other_requests: list[RecordedRequest] = field(default_factory=list)
    models: list[dict[str, Any]] | None = None
    accepted_keys: frozenset[str] | None = None
    stalls_closed: int = 0
    changed: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self.changed = threading.Condition(self.lock)


class FakeOpenAIServer:
    """See the module docstring. `start()`/`stop()` or use it as a context manager."""

    def __init__(
        self,
        responses: Iterable[Response] = (),
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        requests_log: TextIO | None = None,
        models: Iterable[Mapping[str, Any]] | None = None,
        accepted_keys: Iterable[str] | None = None,
    ) -> None:
        self._host = host
        self._port = port
        self._requests_log = requests_log
        self._state = _State()
        self._state.queue.extend(responses)
        self.set_models(models)
        self.accept_keys(accepted_keys)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._ready = threading.Event()
        self._startup_error: OSError | None = None
        self._listening = False

    # -- control (any thread) --

    @property
    def port(self) -> int:
        return self._port

    @property
    def base_url(self) -> str:
        """With `/v1`, as real endpoints are usually configured; requests go to `/v1/chat/completions`."""
        return f"http://{self._host}:{self._port}/v1"

    def enqueue(self, *responses: Response) -> None:
        with self._state.lock:
            self._state.queue.extend(responses)

    def set_models(self, models: Iterable[Mapping[str, Any]] | None) -> None:
        """What `GET /models` lists (None: the route does not exist)."""
        with self._state.lock:
            self._state.models = None if models is None else [dict(m) for m in models]

    def accept_keys(self, keys: Iterable[str] | None) -> None:
        """Refuse (401) every request without one of `keys` (None: accept any)."""
        with self._state.lock:
            self._state.accepted_keys = None if keys is None else frozenset(keys)

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every chat-completions request received so far, oldest first (a copy)."""
        with self._state.lock:
            return list(self._state.requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """Every `GET /models` received so far, oldest first (a copy)."""
        with self._state.lock:
            return list(self._state.model_requests)

    @property
    def other_requests(self) -> list[RecordedRequest]:
        with self._state.lock:
            return list(self._state.other_requests)

    @property
    def pending(self) -> int:
        """Responses still queued."""
        with self._state.lock:
            return len(self._state.queue)

    def wait_for_stall_closed(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until clients have closed `count` stalled streams; False on timeout."""
        with self._state.changed:
            return self._state.changed.wait_for(lambda: self._state.stalls_closed >= count, timeout)

    def start(self) -> FakeOpenAIServer:
        self._thread = threading.Thread(target=self._run, name="fake-openai-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("fake OpenAI server did not start within 10 s")
        if self._startup_error is not None or not self._listening:
            raise RuntimeError("fake OpenAI server failed to start") from self._startup_error
        return self

    def stop(self) -> None:
        loop, stop_event, thread = self._loop, self._stop_event, self._thread
        if loop is not None and stop_event is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop may have just closed
                loop.call_soon_threadsafe(stop_event.set)
        if thread is not None:
            thread.join(10)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- the server's own loop --

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except OSError as exc:  # binding the port failed
            self._startup_error = exc
        finally:
            # Also on any other crash, so start() reports it at once instead of waiting out its timeout.
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_event = asyncio.Event()
        handlers: set[asyncio.Task[None]] = set()

        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            handlers.add(task)
            try:
                await self._serve_connection(reader, writer)
            finally:
                handlers.discard(task)

        server = await asyncio.start_server(on_connection, self._host, self._port)
        self._port = server.sockets[0].getsockname()[1]
        self._listening = True
        self._ready.set()
        try:
            await self._stop_event.wait()
        finally:
            server.close()
            # Stalled streams would otherwise keep the loop alive forever.
            for task in list(handlers):
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)

    async def _serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await _read_request(reader)
            if request is None:
                return
            path = request.path.rstrip("/")
            if path.endswith("/models") and request.method == "GET":
                await self._answer_models(request, writer)
                return
            if not path.endswith("/chat/completions"):
                # Recorded but answered without using up a scripted response: a wrong URL is the bug here.
                self._record(request, take=False, into="other")
                await _send_error(writer, HTTPError(404, f"fake OpenAI server: no route for {request.path}"))
                return
            refusal = self._refusal(request) or self._unsupported_effort(request)
            if refusal is not None:
                self._record(request, take=False)
                await _send_error(writer, refusal)
                return
            response = self._record(request, take=True)
            if response is None:
                count = len(self.requests)
                response = HTTPError(
                    400, f"fake OpenAI server: no scripted response left for request #{count}"
                )
            if isinstance(response, Disconnect):
                writer.transport.abort()
                return
            if isinstance(response, HTTPError):
                await _send_error(writer, response)
                return
            await self._send_sse(reader, writer, response)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing left to answer
        finally:
            writer.close()

    async def _answer_models(self, request: RecordedRequest, writer: asyncio.StreamWriter) -> None:
        self._record(request, take=False, into="models")
        refusal = self._refusal(request)
        with self._state.lock:
            models = None if self._state.models is None else list(self._state.models)
        if refusal is not None:
            await _send_error(writer, refusal)
        elif models is None:
            await _send_error(writer, HTTPError(404, f"fake OpenAI server: no route for {request.path}"))
        else:
            listed = [{"object": "model", "owned_by": "fake", "created": 1700000000, **m} for m in models]
            await _send_json(writer, {"object": "list", "data": listed})

    def _refusal(self, request: RecordedRequest) -> HTTPError | None:
        """OpenAI's 401 for a key it does not know (only when `accepted_keys` is set)."""
        with self._state.lock:
            accepted = self._state.accepted_keys
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        if accepted is None or (scheme == "Bearer" and key in accepted):
            return None
        error = {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                 "code": "invalid_api_key"}  # fmt: skip
        return HTTPError(401, body={"error": error})

    def _unsupported_effort(self, request: RecordedRequest) -> HTTPError | None:
        """OpenAI's 400 for `reasoning_effort` sent to a listed model that does not take it."""
        try:
            body = request.json()
        except ValueError:
            return None
        if not isinstance(body, dict) or "reasoning_effort" not in body:
            return None
        with self._state.lock:
            listed = {m.get("id"): m for m in self._state.models or ()}
        model = listed.get(body.get("model"))
        if model is None or "reasoning_effort" in model.get("supported_parameters", ()):
            return None
        message = "Unsupported parameter: 'reasoning_effort' is not supported with this model."
        error = {"message": message, "type": "invalid_request_error", "param": "reasoning_effort",
                 "code": "unsupported_parameter"}  # fmt: skip
        return HTTPError(400, body={"error": error})

    def _record(self, request: RecordedRequest, *, take: bool, into: str = "chat") -> Response | None:
        """Record the request and, with `take`, dequeue its response (None when the queue is empty)."""
        with self._state.lock:
            kinds = {"chat": self._state.requests, "models": self._state.model_requests,
                     "other": self._state.other_requests}  # fmt: skip
            kinds[into].append(request)
            response = self._state.queue.popleft() if take and self._state.queue else None
        if self._requests_log is not None:
            try:
                body: Any = request.json()
            except ValueError:
                body = request.body.decode("utf-8", "replace")
            line = {"method": request.method, "path": request.path, "headers": request.headers, "body": body}
            self._requests_log.write(json.dumps(line) + "\n")
            self._requests_log.flush()
        return response

    async def _send_sse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, sse: SSE) -> None:
        head = (
            "HTTP/1.1 200 OK\r\n"
            f"Content-Type: {sse.content_type}\r\n"
            "Cache-Control: no-cache\r\n"
            "Transfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n"
        )
        writer.write(head.encode())
        await writer.drain()
        for sent, chunk in enumerate(sse.chunks):
            if sse.drop_after is not None and sent >= sse.drop_after:
                writer.transport.abort()  # no terminating chunk: the client sees a broken body
                return
            if sse.stall_after is not None and sent >= sse.stall_after:
                await self._stall(reader)
                return
            if sse.hold is not None and sent == sse.hold_after:
                await sse.hold.pause()
            if sse.delay:
                await asyncio.sleep(sse.delay)
            text = chunk if isinstance(chunk, str) else f"data: {json.dumps(chunk)}\n\n"
            await _write_chunk(writer, text.encode())
        if sse.drop_after is not None:
            writer.transport.abort()
            return
        if sse.stall_after is not None:
            await self._stall(reader)
            return
        if sse.done:
            await _write_chunk(writer, b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _stall(self, reader: asyncio.StreamReader) -> None:
        # The client sends nothing more on this connection, so EOF (or a reset) means it closed it.
        with contextlib.suppress(ConnectionError):
            await reader.read()
        with self._state.changed:
            self._state.stalls_closed += 1
            self._state.changed.notify_all()


async def _read_request(reader: asyncio.StreamReader) -> RecordedRequest | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length) if length else b""
    return RecordedRequest(method, path, headers, body)


async def _write_chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    await writer.drain()


async def _send_json(writer: asyncio.StreamWriter, payload: Any) -> None:
    body = json.dumps(payload).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    writer.write((head + "Connection: close\r\n\r\n").encode() + body)
    await writer.drain()


async def _send_error(writer: asyncio.StreamWriter, error: HTTPError) -> None:
    payload = error.body
    if payload is None:
        payload = {"error": {"message": error.message, "type": "fake_error", "code": error.status}}
    body = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
    try:
        reason = http.HTTPStatus(error.status).phrase
    except ValueError:
        reason = "Error"
    head = f"HTTP/1.1 {error.status} {reason}\r\n"
    head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    if error.retry_after is not None:
        head += f"Retry-After: {error.retry_after}\r\n"
    writer.write((head + "Connection: close\r\n\r\n").encode() + body)
    await writer.drain()


# --- as a process --------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="A scripted fake OpenAI chat-completions server.")
    parser.add_argument("--script", type=Path, help="JSON list of responses (see response_from_json)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: an ephemeral one)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port-file", type=Path, help="write the bound port here once listening")
    parser.add_argument("--requests-log", type=Path, help="append each request here as one JSON line")
    parser.add_argument("--models", type=Path, help="JSON list of model objects GET /models lists")
    parser.add_argument("--accept-key", action="append", default=None, help="accept only these keys")
    args = parser.parse_args(argv)

    responses = [response_from_json(o) for o in json.loads(args.script.read_text())] if args.script else []
    models = json.loads(args.models.read_text()) if args.models else None
    stopping = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopping.set())
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(args.requests_log.open("a")) if args.requests_log else None
        server = stack.enter_context(
            FakeOpenAIServer(
                responses,
                host=args.host,
                port=args.port,
                requests_log=log,
                models=models,
                accepted_keys=args.accept_key,
            )
        )
        if args.port_file:
            # Written whole then renamed, so a reader polling for the file never sees a partial port.
            tmp = args.port_file.with_name(args.port_file.name + ".tmp")
            tmp.write_text(str(server.port))
            os.replace(tmp, args.port_file)
        print(f"fake OpenAI server listening on {server.base_url}", file=sys.stderr, flush=True)
        while not stopping.wait(0.2):
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
