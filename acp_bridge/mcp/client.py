"""The MCP SDK side of one server: `Connection` connects, lists, calls and closes, with the official SDK's
`Client` over the server's transport (stdio: `stdio.StdioProcess`; streamable HTTP and SSE: the SDK's
clients). It connects as the SDK's own client does (`mode="auto"`): `server/discover` first, at the newest
protocol revision (2026-07-28), and the 2025 `initialize` handshake when the server answers as a 2025-era
one, so a modern-only endpoint (the TypeScript SDK's `createMcpHandler(factory, {legacy: 'reject'})`) and
an older server both work. A failure to connect says its real cause (`failure_reason`: the HTTP status,
the server's error and code), never the task group it surfaced through.

A connection is one runner task that enters the transport and the session (anyio requires that the task
entering them also leaves them) and then waits for `close()` or the transport's end (a stdio server's
process exited). Any task may call through it meanwhile. A call that is cancelled (the pipeline cancels
the body's task) makes the SDK send `notifications/cancelled` for it; progress reaches `on_progress`.

Server requests: `roots/list` answers the session's roots; `elicitation/create` is forwarded through
`ServerHooks.elicit` when the editor can answer it (and not advertised otherwise); sampling is not
offered, so `sampling/createMessage` is declined by the SDK. `tools/list_changed` and
`prompts/list_changed` reach `ServerHooks.list_changed` (which must not wait on this connection: it is
called from the SDK's receive path).

Must not: be imported before a session has servers (the SDK costs ~0.4 s of import); `servers.py`
imports it in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import httpx2
import mcp_types as types
from mcp import Client, ClientSession
from mcp.client.session import ClientRequestContext, ElicitationFnT, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import PromptsListChanged, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from acp_bridge import __version__

from .config import HttpServer, ServerConfig, StdioServer
from .stdio import StdioProcess

log = logging.getLogger(__name__)

MAX_PAGES: Final = 100
HTTP_TIMEOUT_S: Final = 30.0
HTTP_READ_TIMEOUT_S: Final = 300.0
MAX_ERROR_BODY_CHARS: Final = 300
CLIENT_INFO: Final = types.Implementation(name="acp-bridge", version=__version__)

ProgressFn = Callable[[float, float | None, str | None], None]


@dataclass(frozen=True, slots=True)
class ServerHooks:
    """What a connection asks of its session."""

    roots: Callable[[], Sequence[str]]
    list_changed: Callable[[str], None]
    # Forward `elicitation/create` (its params as JSON) to the editor; None: the editor cannot answer.
    elicit: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None = None


class ConnectionLost(Exception):
    """The server went away (its process ended, its HTTP session failed)."""


class ConnectFailed(Exception):
    """Connecting failed; the message is the real cause (`failure_reason`)."""


class CallFailed(Exception):
    """The server answered a request with an error (or an answer the SDK refused)."""


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """What `initialize` told: the server's name and instructions, and what it offers."""

    name: str | None
    instructions: str | None
    tools: bool
    prompts: bool


class Connection:
    """One live connection to one MCP server (see the module docstring)."""

    def __init__(self, config: ServerConfig, cwd: str, hooks: ServerHooks) -> None:
        self.config = config
        self.cwd = cwd
        self.hooks = hooks
        self.process: StdioProcess | None = None
        self.info: ServerInfo | None = None
        self.lost: str | None = None  # why the connection ended, when it ended without close()
        self._session: ClientSession | None = None
        self._client: Client | None = None
        # The last HTTP error answer (its status, URL and the start of its body): the SDK turns one into a
        # JSON-RPC error that no longer says it, so a failure to connect names it from here.
        self._http_error: str | None = None
        self._closing = asyncio.Event()
        self._runner: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self._session is not None and self.lost is None and not self._closing.is_set()

    def stderr_tail(self) -> str:
        return self.process.stderr_tail() if self.process is not None else ""

    async def open(self) -> ServerInfo:
        """Connect and initialize. Raises on failure (the caller bounds the time); cancelling it stops
        the server."""
        ready: asyncio.Future[ServerInfo] = asyncio.get_running_loop().create_future()
        # Retrieved by `open`, unless the caller gave up first.
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self._runner = asyncio.ensure_future(self._run(ready))
        try:
            return await asyncio.shield(ready)
        except asyncio.CancelledError:
            await self.close()
            raise

    async def _run(self, ready: asyncio.Future[ServerInfo]) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(
                    Client(
                        await self._transport(stack),
                        mode="auto",  # `server/discover`, else the 2025 `initialize` handshake
                        list_roots_callback=self._roots,
                        elicitation_callback=self._elicitation_callback(),
                        logging_callback=self._log,
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                        cache=None,  # every list is read anew (`list_changed` re-lists)
                    )
                )
                caps = client.server_capabilities
                info = ServerInfo(
                    client.server_info.name if client.server_info else None,
                    client.instructions,
                    caps.tools is not None,
                    caps.prompts is not None,
                )
                self.info, self._client, self._session = info, client, client.session
                ready.set_result(info)
                listener = self._listen_for_changes(client, info)
                try:
                    await self._until_ended()
                finally:
                    if listener is not None:
                        listener.cancel()
                        await asyncio.wait({listener})
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(self._open_error(exc))
            elif not self._closing.is_set() and self.lost is None:
                self.lost = f"the connection failed: {failure_reason(exc)}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = self._client = None
            if not self._closing.is_set() and self.lost is None and ready.done():
                self.lost = self._why_ended()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        """The server's transport, not entered yet (the SDK's `Client` enters it); what it needs open
        for its whole life (the HTTP client) is entered on `stack`."""
        config = self.config
        if isinstance(config, StdioServer):
            self.process = StdioProcess(config, self.cwd)
            return self.process
        headers = dict(config.headers)
        if config.kind == "sse":
            return sse_client(
                config.url, headers=headers, timeout=HTTP_TIMEOUT_S, sse_read_timeout=HTTP_READ_TIMEOUT_S
            )
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S),
                event_hooks={"request": [self._forget_http_error], "response": [self._note_http_error]},
            )
        )
        return streamable_http_client(config.url, http_client=client)

    async def _forget_http_error(self, _request: httpx2.Request) -> None:
        if self._session is None:
            self._http_error = None  # a new request: an earlier error answer is not why this one fails

    async def _note_http_error(self, response: httpx2.Response) -> None:
        """Keep what an HTTP error answer said (an error body is small: it is read here, and stays
        readable for the SDK)."""
        if response.status_code < 400 or self._session is not None:
            return
        said = (
            f"{response.request.url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip()
        )
        with contextlib.suppress(httpx2.HTTPError):
            await response.aread()
            body = " ".join(response.text[:MAX_ERROR_BODY_CHARS].split())
            if body and not body.startswith("{"):  # a JSON-RPC error body is told as the server's error
                said += f": {body}"
        self._http_error = said

    def _open_error(self, exc: BaseException) -> Exception:
        """What `open` raises: a lone OS error as it is (a stdio server's command not found), anything else
        as `ConnectFailed` saying its real cause."""
        if not isinstance(exc, Exception):
            return ConnectionLost(repr(exc))
        leaves = _leaves(exc)
        if len(leaves) == 1 and isinstance(leaves[0], OSError) and not self._http_error:
            return leaves[0]
        return ConnectFailed(self._failure(exc))

    def _failure(self, exc: BaseException) -> str:
        """Why connecting failed: the HTTP error answer behind it, if any, and the error itself."""
        reason = failure_reason(exc)
        return f"{self._http_error} ({reason})" if self._http_error else reason

    def _listen_for_changes(self, client: Client, info: ServerInfo) -> asyncio.Task[None] | None:
        """On a 2026-07-28 connection a server tells of list changes only on a `subscriptions/listen`
        stream (a 2025 one sends `notifications/*/list_changed`: `_on_message`): open one, for the life of
        the connection."""
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (info.tools or info.prompts):
            return None
        return asyncio.ensure_future(self._listen(client, info))

    async def _listen(self, client: Client, info: ServerInfo) -> None:
        try:
            async with client.listen(tools_list_changed=info.tools, prompts_list_changed=info.prompts) as sub:
                async for event in sub:
                    if isinstance(event, ToolsListChanged):
                        self.hooks.list_changed("tools")
                    elif isinstance(event, PromptsListChanged):
                        self.hooks.list_changed("prompts")
        except Exception as exc:  # noqa: BLE001 - a server without subscriptions still serves its tools
            log.debug("MCP server %s: no list-change subscription: %s", self.config.name, failure_reason(exc))

    async def _until_ended(self) -> None:
        waits = [asyncio.ensure_future(self._closing.wait())]
        if self.process is not None:
            waits.append(asyncio.ensure_future(self.process.exited.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    def _why_ended(self) -> str:
        if self.process is not None:
            return self.process.describe_exit()
        return "its connection ended"

    # --- server requests and notifications ----------------------------------------------------------

    async def _roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        roots = [
            types.Root.model_validate({"uri": Path(path).as_uri(), "name": Path(path).name or path})
            for path in self.hooks.roots()
        ]
        return types.ListRootsResult(roots=roots)

    def _elicitation_callback(self) -> ElicitationFnT | None:
        elicit = self.hooks.elicit
        if elicit is None:
            return None  # not advertised: the SDK declines a server that asks anyway

        async def forward(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult:
            request = params.model_dump(mode="json", by_alias=True, exclude_none=True)
            request.pop("_meta", None)
            try:
                answer = await elicit(request)
                return types.ElicitResult.model_validate(answer)
            except Exception as exc:  # noqa: BLE001 - the editor's failure is a declined elicitation
                log.warning("elicitation for MCP server %s failed: %s", self.config.name, exc)
                return types.ElicitResult(action="decline")

        return forward

    async def _log(self, params: types.LoggingMessageNotificationParams) -> None:
        log.debug("MCP server %s (%s): %.2000s", self.config.name, params.level, params.data)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.hooks.list_changed("tools")
        elif isinstance(message, types.PromptListChangedNotification):
            self.hooks.list_changed("prompts")
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error %r", self.config.name, message)

    # --- requests -----------------------------------------------------------------------------------

    def _require(self) -> Client:
        client = self._client
        if client is None or self._session is None or self.lost is not None:
            raise ConnectionLost(self.lost or "not connected")
        return client

    async def _request(self, call: Awaitable[Any]) -> Any:
        try:
            return await call
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED or not self.alive:
                await self._settle()
                raise ConnectionLost(self.lost or exc.message) from None
            raise CallFailed(exc.message) from None
        except (httpx2.HTTPError, OSError) as exc:
            raise ConnectionLost(f"the connection failed: {exc}") from None
        except RuntimeError as exc:  # the SDK refused the answer (e.g. structured content off its schema)
            raise CallFailed(str(exc)) from None

    async def _settle(self) -> None:
        """A request saw the connection close: give the runner a moment to record why (the exit code)."""
        if self.process is not None and not self.process.exited.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.process.exited.wait(), 0.5)
        if self.lost is None:
            self.lost = self._why_ended()

    async def list_tools(self) -> list[dict[str, Any]]:
        client = self._require()
        return await self._all_pages(client.list_tools, lambda page: page.tools)

    async def list_prompts(self) -> list[dict[str, Any]]:
        client = self._require()
        return await self._all_pages(client.list_prompts, lambda page: page.prompts)

    async def _all_pages(
        self, request: Callable[..., Awaitable[Any]], items: Callable[[Any], Iterable[Any]]
    ) -> list[dict[str, Any]]:
        """Every item of a paginated list request (at most `MAX_PAGES` pages), as plain JSON."""
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._request(request(cursor=cursor))
            listed += [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items(page)]
            cursor = page.next_cursor
            if not cursor:
                break
        return listed

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """The `CallToolResult` as JSON (a 2026-07-28 server's requests for input answered on the way).
        Raises ConnectionLost / CallFailed."""
        client = self._require()

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(progress, total, message)

        result = await self._request(client.call_tool(name, dict(arguments), progress_callback=report))
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> list[dict[str, Any]]:
        """The prompt's messages as JSON."""
        client = self._require()
        result = await self._request(client.get_prompt(name, dict(arguments)))
        return [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in result.messages]

    async def wait_ended(self) -> None:
        """Until the connection has ended (closed, or lost: then `lost` says why)."""
        runner = self._runner
        if runner is not None:
            await asyncio.wait({runner})

    async def close(self) -> None:
        """End the connection: the session closes, an HTTP session is deleted, a stdio server stopped."""
        self._closing.set()
        runner = self._runner
        if runner is not None and not runner.done():
            if self._session is None:
                runner.cancel()  # still starting: nothing to wind down gracefully
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await runner
        elif self.process is not None:
            await self.process.stop()


def failure_reason(exc: BaseException) -> str:
    """What went wrong, in words that name the cause: an exception group (the SDK's task groups wrap
    what failed in them) is unwrapped to the exceptions it holds; a server's error is its message and
    code (and, for an unsupported protocol version, the versions it supports); an HTTP failure its status
    and URL."""
    causes = list(dict.fromkeys(_reason(leaf) for leaf in _leaves(exc)))
    return "; ".join(causes) or type(exc).__name__


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    if isinstance(exc, ConnectFailed | ConnectionLost | CallFailed | OSError):
        return [exc]
    if exc.__cause__ is not None and not str(exc):
        return _leaves(exc.__cause__)
    return [exc]


def _reason(exc: BaseException) -> str:
    if isinstance(exc, MCPError):
        text = f"the server answered error {exc.code}: {exc.message}"
        data = exc.data
        supported = data.get("supported") if isinstance(data, Mapping) else None
        if exc.code == types.UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list):
            text += f" (it supports {', '.join(map(str, supported))})"
        return text
    if isinstance(exc, httpx2.HTTPStatusError):
        response = exc.response
        return f"{exc.request.url} answered HTTP {response.status_code} {response.reason_phrase}".rstrip()
    if isinstance(exc, httpx2.HTTPError):
        return f"the connection failed: {exc or type(exc).__name__}"
    return str(exc) or type(exc).__name__


def describe(config: ServerConfig) -> str:
    """How the server is reached, for messages (`npx -y @scope/server`, `http https://…`)."""
    if isinstance(config, HttpServer):
        return f"{config.kind} {config.url}"
    return " ".join([config.command, *config.args])
