"""The MCP SDK side of one server: `Connection` connects, lists, calls and closes, with the official SDK's
`ClientSession` over the server's transport (stdio: `stdio.StdioProcess`; streamable HTTP and SSE: the
SDK's clients).

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
from mcp import ClientSession
from mcp.client.session import ClientRequestContext, ElicitationFnT, IncomingMessage
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from acp_bridge import __version__

from .config import HttpServer, ServerConfig, StdioServer
from .stdio import StdioProcess

log = logging.getLogger(__name__)

MAX_PAGES: Final = 100
HTTP_TIMEOUT_S: Final = 30.0
HTTP_READ_TIMEOUT_S: Final = 300.0
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
                read, write = await self._transport(stack)
                session = await stack.enter_async_context(
                    ClientSession(
                        read,
                        write,
                        list_roots_callback=self._roots,
                        elicitation_callback=self._elicitation_callback(),
                        logging_callback=self._log,
                        message_handler=self._on_message,
                        client_info=CLIENT_INFO,
                    )
                )
                result = await session.initialize()
                caps = result.capabilities
                info = ServerInfo(
                    result.server_info.name if result.server_info else None,
                    result.instructions,
                    caps.tools is not None,
                    caps.prompts is not None,
                )
                self.info, self._session = info, session
                ready.set_result(info)
                await self._until_ended()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else ConnectionLost(repr(exc)))
            elif not self._closing.is_set() and self.lost is None:
                self.lost = f"the connection failed: {exc!r}"
            if not isinstance(exc, Exception):
                raise
        finally:
            self._session = None
            if not self._closing.is_set() and self.lost is None and ready.done():
                self.lost = self._why_ended()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if isinstance(config, StdioServer):
            self.process = StdioProcess(config, self.cwd)
            return await stack.enter_async_context(self.process)
        headers = dict(config.headers)
        if config.kind == "sse":
            return await stack.enter_async_context(
                sse_client(
                    config.url, headers=headers, timeout=HTTP_TIMEOUT_S, sse_read_timeout=HTTP_READ_TIMEOUT_S
                )
            )
        client = await stack.enter_async_context(
            httpx2.AsyncClient(
                headers=headers, timeout=httpx2.Timeout(HTTP_TIMEOUT_S, read=HTTP_READ_TIMEOUT_S)
            )
        )
        return await stack.enter_async_context(streamable_http_client(config.url, http_client=client))

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

    def _require(self) -> ClientSession:
        session = self._session
        if session is None or self.lost is not None:
            raise ConnectionLost(self.lost or "not connected")
        return session

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
        session = self._require()
        return await self._all_pages(session.list_tools, lambda page: page.tools)

    async def list_prompts(self) -> list[dict[str, Any]]:
        session = self._require()
        return await self._all_pages(session.list_prompts, lambda page: page.prompts)

    async def _all_pages(
        self, request: Callable[..., Awaitable[Any]], items: Callable[[Any], Iterable[Any]]
    ) -> list[dict[str, Any]]:
        """Every item of a paginated list request (at most `MAX_PAGES` pages), as plain JSON."""
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._request(request(params=params))
            listed += [item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in items(page)]
            cursor = page.next_cursor
            if not cursor:
                break
        return listed

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], on_progress: ProgressFn | None = None
    ) -> dict[str, Any]:
        """The `CallToolResult` as JSON. Raises ConnectionLost / CallFailed."""
        session = self._require()

        async def report(progress: float, total: float | None, message: str | None) -> None:
            if on_progress is not None:
                on_progress(progress, total, message)

        result = await self._request(session.call_tool(name, dict(arguments), progress_callback=report))
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> list[dict[str, Any]]:
        """The prompt's messages as JSON."""
        session = self._require()
        result = await self._request(session.get_prompt(name, dict(arguments)))
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


def describe(config: ServerConfig) -> str:
    """How the server is reached, for messages (`npx -y @scope/server`, `http https://…`)."""
    if isinstance(config, HttpServer):
        return f"{config.kind} {config.url}"
    return " ".join([config.command, *config.args])
