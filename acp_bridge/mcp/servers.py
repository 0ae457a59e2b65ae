"""A session's MCP servers: started in the background, waited for by the first prompt, followed, stopped.

`SessionServers.start()` (from `session/new` / `session/load`) returns at once: each server starts in
its own task (the SDK is imported in a worker thread the first time, then the server is connected,
initialized and listed within `startup_timeout`). A prompt's `prepare_turn` waits for every start still
running (each bounded by its own timeout, the turn's cancel ends the wait), then tells the user once,
as an agent message, about every server that failed to start, stopped, or was left out of the
configuration (its name, why, and the last lines of its stderr); the session goes on without it.

Each server's tools are registered in the session's `ToolScope` (`tools.build_definition`) and its
policy facts in the session's permissions; `tools/list_changed` re-lists and re-registers them (the
registry's tools-change event follows, and the next model step sees the new list), `prompts/list_changed`
re-lists the prompts and the session re-announces its commands. A server that stops while the session
runs is restarted on its next call, at most `MAX_RESTARTS` times; after that its tools are withdrawn.
Server instructions join the system prompt (`instructions`), prompts are slash commands (`commands`,
expanded by `prepare_turn`). `aclose()` stops every server (stdio process groups killed, HTTP sessions
deleted) and withdraws every tool.

Must not: import the MCP SDK at import time (only `client` does, loaded on first use), block
`session/new`, or let one server's failure fail the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from acp_bridge.client.channel import ElicitingChannel, SessionPlace
from acp_bridge.permissions.external import ExternalTool
from acp_bridge.permissions.policy import SessionPermissions
from registry_core import CancelSignal, StatusProgress, ToolError, ToolRunContext, ToolScope, until_cancelled

from .config import ServerConfig, ServerList, StdioServer
from .naming import command_name, tool_name
from .present import ToolFacts, facts_of
from .prompts import PromptArgsError, PromptCommand, parse_arguments, prompt_command, render_messages
from .tools import CALL_TIMEOUT_MS, build_definition

if TYPE_CHECKING:
    from types import ModuleType

    from .client import Connection

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S: Final = 10.0
MAX_RESTARTS: Final = 3
PROMPT_TIMEOUT_S: Final = 30.0
RELIST_TIMEOUT_S: Final = 10.0
MAX_INSTRUCTIONS_CHARS: Final = 8_000
PROGRESS_INTERVAL_S: Final = 0.1  # at most this often a progress update per call (the last one always)

State = Literal["starting", "ready", "failed", "lost", "closed"]


class McpHost(SessionPlace, Protocol):
    """What the servers need of their session (`session.Session` is one)."""

    @property
    def scope(self) -> ToolScope: ...

    @property
    def permissions(self) -> SessionPermissions: ...

    def commands_changed(self) -> None:
        """The session's slash commands changed: announce them again."""
        ...


_client: ModuleType | None = None
_client_lock: asyncio.Lock | None = None


async def client_module() -> ModuleType:
    """`acp_bridge.mcp.client` (and with it the SDK), imported once, off the event loop."""
    global _client, _client_lock
    if _client is not None:
        return _client
    if _client_lock is None:
        _client_lock = asyncio.Lock()
    async with _client_lock:
        if _client is None:
            _client = await asyncio.to_thread(importlib.import_module, "acp_bridge.mcp.client")
    return _client


class Unavailable(Exception):
    """The server cannot take a call (it failed, or stopped too often); the message says which."""


@dataclass(slots=True)
class _Registered:
    name: str
    facts: ToolFacts
    raw: dict[str, Any]
    dispose: Callable[[], None]


@dataclass(slots=True)
class _Throttle:
    """Progress for one call: at most one update per `PROGRESS_INTERVAL_S`, and never the last one lost."""

    ctx: ToolRunContext
    last: float = 0.0
    pending: StatusProgress | None = None
    timer: asyncio.TimerHandle | None = field(default=None)

    def feed(self, done: float, total: float | None, message: str | None) -> None:
        self.pending = StatusProgress(progress=done, total=total, message=message)
        now = time.monotonic()
        if now - self.last >= PROGRESS_INTERVAL_S:
            self.flush()
        elif self.timer is None:
            self.timer = asyncio.get_running_loop().call_later(
                PROGRESS_INTERVAL_S - (now - self.last), self.flush
            )

    def flush(self) -> None:
        self.timer = None
        if self.pending is not None:
            self.last = time.monotonic()
            update, self.pending = self.pending, None
            self.ctx.progress(update)

    def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class ServerHandle:
    """One configured server of the session: its connection, tools, prompts, and restarts."""

    def __init__(self, servers: SessionServers, config: ServerConfig) -> None:
        self.servers = servers
        self.config = config
        self.name = config.name
        self.state: State = "starting"
        self.conn: Connection | None = None
        self.instructions: str | None = None
        self.prompts: dict[str, PromptCommand] = {}
        self.tools: dict[str, _Registered] = {}
        self.restarts = 0
        self.reason: str | None = None
        self.task: asyncio.Task[None] | None = None
        self.in_flight: list[str] = []
        self._lock = asyncio.Lock()
        self._watch: asyncio.Task[None] | None = None
        self._relists: dict[str, asyncio.Task[None]] = {}
        self._relist_again: set[str] = set()

    # --- starting -----------------------------------------------------------------------------------

    def start(self) -> None:
        self.task = asyncio.ensure_future(self._start())

    async def _start(self) -> None:
        # One turn of the loop first: the answer to session/new (flushed on the next turn) goes out before
        # any server is spawned.
        await asyncio.sleep(0)
        try:
            await self._connect()
        except Unavailable as exc:
            self.state = "failed"
            self.servers.report(str(exc))

    async def _connect(self) -> None:
        """Connect, initialize, list and register, within the start-up timeout. Raises Unavailable."""
        try:
            module = await client_module()
        except ImportError as exc:  # a broken installation: said once, like any failed start
            raise Unavailable(
                f"MCP server `{self.name}` cannot start: the MCP client did not load ({exc})."
            ) from None
        hooks = module.ServerHooks(
            roots=self._roots, list_changed=self._list_changed, elicit=self.servers.elicitor(self)
        )
        conn: Connection = module.Connection(self.config, self.servers.host.cwd, hooks)
        timeout = self.servers.startup_timeout
        try:
            async with asyncio.timeout(timeout):
                info = await conn.open()
                tools = await conn.list_tools() if info.tools else []
                prompts = await conn.list_prompts() if info.prompts else []
        except TimeoutError:
            await conn.close()
            raise Unavailable(self._why(f"did not start within {timeout:g} s", conn)) from None
        except Exception as exc:  # noqa: BLE001 - any failure to start is reported, never raised
            await _settle_exit(conn)
            why = _describe_failure(exc, conn)
            await conn.close()
            raise Unavailable(self._why(f"failed to start: {why}", conn)) from None
        if self.state == "closed":
            await conn.close()
            raise Unavailable(f"MCP server `{self.name}` was stopped while it started.")
        self.conn, self.state, self.reason = conn, "ready", None
        self.instructions = (
            info.instructions.strip() if info.instructions and info.instructions.strip() else None
        )
        self._register_tools(tools)
        self._set_prompts(prompts)
        self._watch = asyncio.ensure_future(self._watch_connection(conn))
        log.info("MCP server %s ready: %d tools, %d prompts", self.name, len(tools), len(prompts))

    def _why(self, what: str, conn: Connection | None, then: str = "") -> str:
        """`MCP server `x` <what>. <then>`, and the last lines of its stderr when it wrote any."""
        text = f"MCP server `{self.name}` {what}." + (f" {then}" if then else "")
        tail = conn.stderr_tail() if conn is not None else ""
        if tail:
            text += f" Its last stderr lines:\n\n{_fence(tail)}"
        return text

    async def _watch_connection(self, conn: Connection) -> None:
        """Notice a server that stops between calls: report it, and let its next call restart it."""
        await conn.wait_ended()
        if self.conn is conn and self.state == "ready" and conn.lost is not None:
            self._lost(conn)

    def _lost(self, conn: Connection) -> None:
        self.state = "lost"
        left = MAX_RESTARTS - self.restarts
        if left > 0:
            then = "It will be restarted on its next call."
        else:
            then = "It was restarted too often, so its tools are withdrawn."
            self._withdraw_tools()
        self.reason = self._why(f"stopped: {conn.lost}", conn, then)
        # Said once: on the card of a call that was running (its failure says it), else at the next prompt.
        self.servers.report(self.reason, key=("lost", self.name, self.restarts), shown=bool(self.in_flight))

    # --- calls --------------------------------------------------------------------------------------

    async def connection(self) -> Connection:
        """The live connection, restarting a stopped server when it may still be. Raises Unavailable."""
        conn = self.conn
        if self.state == "ready" and conn is not None and conn.alive:
            return conn
        async with self._lock:
            conn = self.conn
            if self.state == "ready" and conn is not None and conn.alive:
                return conn
            if self.state == "ready" and conn is not None:
                self._lost(conn)
            if self.state != "lost" or self.restarts >= MAX_RESTARTS:
                raise Unavailable(self.reason or f"MCP server `{self.name}` is not running.")
            self.restarts += 1
            log.info("restarting MCP server %s (restart %d of %d)", self.name, self.restarts, MAX_RESTARTS)
            old, self.conn = self.conn, None
            if old is not None:
                await old.close()
            try:
                await self._connect()
            except Unavailable as exc:
                self.reason = str(exc)
                if self.restarts >= MAX_RESTARTS:
                    self._withdraw_tools()
                raise
            assert self.conn is not None
            return self.conn

    async def call(
        self, facts: ToolFacts, arguments: Mapping[str, Any], ctx: ToolRunContext
    ) -> dict[str, Any]:
        meta = facts.meta()
        try:
            conn = await self.connection()
        except Unavailable as exc:
            raise ToolError(str(exc), meta=meta) from None
        module = await client_module()
        throttle = _Throttle(ctx)
        self.in_flight.append(ctx.call_id)
        try:
            result = await conn.call_tool(facts.tool, arguments, throttle.feed)
            await self._relisted()
            return result
        except module.ConnectionLost:
            await _settle_exit(conn)
            if self.conn is conn and self.state == "ready":
                self._lost(conn)
            raise ToolError(
                self.reason or f"MCP server `{self.name}` stopped during the call.", meta=meta
            ) from None
        except module.CallFailed as exc:
            raise ToolError(f"MCP server `{self.name}` answered with an error: {exc}", meta=meta) from None
        finally:
            throttle.flush()
            throttle.close()
            self.in_flight.remove(ctx.call_id)

    async def get_prompt(self, prompt: str, arguments: Mapping[str, str]) -> list[dict[str, Any]]:
        module = await client_module()
        conn = await self.connection()
        try:
            messages: list[dict[str, Any]] = await conn.get_prompt(prompt, arguments)
        except (module.ConnectionLost, module.CallFailed) as exc:
            raise Unavailable(
                f"MCP server `{self.name}` could not give the prompt `{prompt}`: {exc}"
            ) from None
        return messages

    # --- what the server offers ---------------------------------------------------------------------

    def _register_tools(self, tools: list[dict[str, Any]]) -> None:
        """Register the listed tools, replacing changed ones and withdrawing those no longer listed."""
        host = self.servers.host
        listed = {str(t.get("name")): t for t in tools if isinstance(t.get("name"), str) and t.get("name")}
        for tool, registered in list(self.tools.items()):
            if listed.get(tool) != registered.raw:
                self._withdraw(tool)
        for tool, raw in listed.items():
            if tool in self.tools:
                continue
            facts = facts_of(self.name, raw)
            name = tool_name(self.name, tool, self.servers.taken_names())
            definition = build_definition(name, facts, raw, self, self.servers.call_timeout_ms)
            try:
                dispose = host.scope.register(definition)
            except ValueError as exc:  # RegistrationError: a schema that is not an object schema
                log.warning("MCP server %s: tool %r not registered: %s", self.name, tool, exc)
                self.servers.report(f"MCP server `{self.name}`: its tool `{tool}` was left out: {exc}")
                continue
            host.permissions.external_tools[name] = ExternalTool(self.name, tool, facts.read_only)
            self.tools[tool] = _Registered(name, facts, raw, dispose)

    def _withdraw(self, tool: str) -> None:
        registered = self.tools.pop(tool)
        registered.dispose()
        self.servers.host.permissions.external_tools.pop(registered.name, None)

    def _withdraw_tools(self) -> None:
        for tool in list(self.tools):
            self._withdraw(tool)
        if self.prompts:
            self.prompts = {}
            self.servers.host.commands_changed()

    def _set_prompts(self, prompts: list[dict[str, Any]]) -> None:
        commands: dict[str, PromptCommand] = {}
        for raw in prompts:
            if isinstance(raw.get("name"), str) and raw["name"]:
                command = command_name(self.name, raw["name"])
                commands[command] = prompt_command(command, self.name, raw)
        changed = commands != self.prompts
        self.prompts = commands
        if changed:
            self.servers.host.commands_changed()

    def _roots(self) -> tuple[str, ...]:
        return self.servers.host.roots

    def _list_changed(self, kind: str) -> None:
        """`notifications/*/list_changed` (from the SDK's receive path: list again in a task of our own;
        several in a row make one more listing, not one each)."""
        running = self._relists.get(kind)
        if running is not None and not running.done():
            self._relist_again.add(kind)
            return
        self._relists[kind] = asyncio.ensure_future(self._relist(kind))

    async def _relisted(self) -> None:
        """Wait for the listings a call's `list_changed` started, so the model's next step sees them.

        The SDK hands a notification to a task of its own before it resolves the response that followed
        it on the wire; one turn of the loop lets that task reach `_list_changed`."""
        await asyncio.sleep(0)
        running = [task for task in self._relists.values() if not task.done()]
        if running:
            await asyncio.wait(running, timeout=RELIST_TIMEOUT_S)

    async def _relist(self, kind: str) -> None:
        while True:
            self._relist_again.discard(kind)
            conn = self.conn
            if conn is None or self.state != "ready":
                return
            try:
                if kind == "tools":
                    self._register_tools(await conn.list_tools())
                else:
                    self._set_prompts(await conn.list_prompts())
            except Exception as exc:  # noqa: BLE001 - a failed re-listing keeps what was listed before
                log.warning("MCP server %s: listing %s again failed: %r", self.name, kind, exc)
                return
            if kind not in self._relist_again:
                return

    # --- stopping -----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        self.state = "closed"
        for task in (self.task, self._watch, *self._relists.values()):
            if task is not None and not task.done():
                task.cancel()
        tasks = [t for t in (self.task, self._watch, *self._relists.values()) if t is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for tool in list(self.tools):
            self._withdraw(tool)
        conn, self.conn = self.conn, None
        if conn is not None:
            await conn.close()


class SessionServers:
    """Every MCP server of one session (see the module docstring)."""

    def __init__(
        self,
        host: McpHost,
        servers: ServerList,
        *,
        startup_timeout: float = STARTUP_TIMEOUT_S,
        call_timeout_ms: float = CALL_TIMEOUT_MS,
    ) -> None:
        self.host = host
        self.startup_timeout = startup_timeout
        self.call_timeout_ms = call_timeout_ms
        self.handles = [ServerHandle(self, config) for config in servers.servers]
        self._reports: list[str] = []
        self._reported: set[object] = set()
        for problem in servers.problems:
            self.report(f"MCP server `{problem.name}` was left out: {problem.reason}.")

    def start(self) -> None:
        """Start every server in the background; returns at once."""
        for handle in self.handles:
            handle.start()

    def report(self, text: str, key: object = None, *, shown: bool = False) -> None:
        """Tell the user `text` at the next prompt, once per `key` (or text); `shown`: a card already did."""
        key = key if key is not None else text
        if key not in self._reported:
            self._reported.add(key)
            if not shown:
                self._reports.append(text)

    def taken_names(self) -> set[str]:
        return {r.name for h in self.handles for r in h.tools.values()}

    def elicitor(self, handle: ServerHandle) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None:
        """How `handle`'s elicitations reach the editor, or None when it cannot answer them."""
        channel = self.host.channel
        caps = channel.capabilities
        if not (caps.elicitation_form or caps.elicitation_url) or not isinstance(channel, ElicitingChannel):
            return None
        elicit = channel.create_elicitation
        session_id = self.host.id

        async def forward(params: dict[str, Any]) -> dict[str, Any]:
            mode = params.get("mode", "form")
            if (mode == "form" and not caps.elicitation_form) or (mode == "url" and not caps.elicitation_url):
                return {"action": "decline"}
            request = {"sessionId": session_id, **params}
            if len(handle.in_flight) == 1:
                request["toolCallId"] = handle.in_flight[0]
            return await elicit(request)

        return forward

    # --- turns --------------------------------------------------------------------------------------

    async def wait_ready(self, signal: CancelSignal) -> None:
        """Wait for every start still running (each bounded by its own timeout), or the cancel."""
        starting = {h.task for h in self.handles if h.task is not None and not h.task.done()}
        if starting:
            await until_cancelled(asyncio.wait(starting), signal)

    def take_reports(self) -> str | None:
        reports, self._reports = self._reports, []
        return "\n\n".join(reports) if reports else None

    async def prepare_turn(self, text: str, signal: CancelSignal, say: Callable[[str], None]) -> str | None:
        """Before a prompt's first model step: wait for the servers, tell what failed, and expand a
        `/server:prompt` command. Returns the text to run, or None when the command was answered here."""
        await self.wait_ready(signal)
        if signal.cancelled:
            return None
        reports = self.take_reports()
        if reports:
            say(reports + "\n\n")
        if not text.startswith("/"):
            return text
        word, _, rest = text[1:].partition(" ")
        found = [(h, h.prompts[word]) for h in self.handles if word in h.prompts]
        if not found:
            return text
        handle, command = found[0]
        try:
            arguments = parse_arguments(command, rest)
            messages = await until_cancelled(
                asyncio.wait_for(handle.get_prompt(command.prompt, arguments), PROMPT_TIMEOUT_S), signal
            )
        except PromptArgsError as exc:
            say(str(exc))
            return None
        except (Unavailable, TimeoutError) as exc:
            say(
                str(exc)
                or f"MCP server `{handle.name}` did not give the prompt within {PROMPT_TIMEOUT_S:g} s."
            )
            return None
        if messages is None:
            return None
        expanded = render_messages(messages)
        if not expanded.strip():
            say(f"The prompt `/{command.command}` came back empty.")
            return None
        return expanded

    def instructions(self) -> str:
        """The servers' instructions for the system prompt ("" when none gave any)."""
        parts = []
        for handle in self.handles:
            text = handle.instructions
            if handle.state == "ready" and text:
                if len(text) > MAX_INSTRUCTIONS_CHARS:
                    text = text[:MAX_INSTRUCTIONS_CHARS] + "\n[…instructions cut]"
                parts.append(f"## MCP server `{handle.name}`\n{text}")
        if not parts:
            return ""
        return (
            "\n\nThe session's MCP servers gave these instructions for their tools (named "
            "mcp__<server>__<tool>):\n\n" + "\n\n".join(parts)
        )

    def commands(self) -> list[tuple[str, str, str | None]]:
        """The servers' prompts as slash commands: (name, description, input hint)."""
        return [(c.command, c.description, c.hint) for h in self.handles for c in h.prompts.values()]

    async def aclose(self, grace: float = 3.0) -> None:
        """Stop every server (bounded by `grace` seconds; a stdio server's group is killed by then)."""
        closing = [asyncio.ensure_future(h.aclose()) for h in self.handles]
        if not closing:
            return
        _done, pending = await asyncio.wait(closing, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=0.5)


async def _settle_exit(conn: Connection) -> None:
    """A stdio server whose connection just ended has usually exited too: wait a moment for its status."""
    process = conn.process
    if process is not None and not process.exited.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(process.exited.wait(), 0.5)


def _describe_failure(exc: BaseException, conn: Connection) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # what failed, not the task group it failed in (`client.failure_reason`)
    process = conn.process
    if isinstance(exc, FileNotFoundError) and isinstance(conn.config, StdioServer):
        return f"the command `{conn.config.command}` was not found"
    if process is not None and process.exited.is_set():
        return process.describe_exit()
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 500 else text[:500] + "…"


def _fence(text: str) -> str:
    longest = run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
