"""The ACP face's first exchange: `initialize`, answered before the agent core is loaded, and the door
every other message waits at until the core is ready.

An editor spawns the agent and sends `initialize` at once. The answer depends only on the command line
(`AgentFacts`: whether history is kept, and the endpoint whose API key the model needs, if any) and on
the client's capabilities, so it is answered from here, from modules that load in milliseconds, while
`serve.py` loads the core (model, tools, the session core: most of the start-up time) in a worker thread.

`Handshake.requests` / `notifications` are the tables the JSON-RPC peer dispatches on:
- `initialize` is answered here, each time it is sent (`on_initialized` runs after each answer is
  written: `serve.py` starts loading the core on the first and hands the capabilities to the agent);
- until it succeeded, every other request is refused (-32600, as the ACP TypeScript SDK's agent router
  answers a first request that is not `initialize`, `src/protocol-router.ts`) and every notification is
  ignored (logged): the client's capabilities are not known before it, and a session made without them
  would use the wrong file access;
- after it, a request or notification that arrives before the core is ready waits for it. The waiting
  ones resume in arrival order once `ready` installs the agent's handlers (from then on the peer calls
  those directly, behind the one check above), or fail once `failed` says why the core could not be set
  up (a request gets -32603 with the reason; a notification is dropped, logged);
- a method the agent does not have is unknown (-32601): at once before `initialize` (as before it, a
  known one is refused at once), after it in its turn (it waits like the others), so the answers leave in
  the order they would have had the core been loaded before `initialize`.

Must not: import the core (sessions, turn, mapping, models, the registry, the tools) or the ACP agent
(`connection`): it is what the process runs while those load (`tests/acp_bridge/test_core_boundaries.py`
checks what importing it loads).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final, NamedTuple

from acp_bridge import __version__
from acp_bridge.acp.jsonrpc import NotificationHandler, Reply, RequestHandler
from acp_bridge.auth.auth_methods import auth_capabilities, auth_methods
from acp_bridge.common.client_capabilities import ClientCapabilities
from acp_bridge.common.errors import (
    MAX_QUOTED_CHARS,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    bounded_text,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION: Final = 1
AGENT_INFO: Final = {"name": "acp-bridge", "title": "acp-bridge", "version": __version__}

# ACP's `session/set_title` (unstable; advertised as `sessionCapabilities.title`), and the extension method
# that did the same before it, kept as an alias for the clients that use it.
SET_TITLE: Final = "session/set_title"
SET_TITLE_METHOD: Final = "_acpBridge/setSessionTitle"
# Not in ACP (no method lets a client manage the remembered rules yet): extension methods, named as ACP
# reserves them (a leading underscore), for the VS Code extension.
LIST_RULES_METHOD: Final = "_acpBridge/listRules"
FORGET_RULES_METHOD: Final = "_acpBridge/forgetRules"
# Checkpoints and undo (docs/checkpoints.md), and stopping one background command (what `/tasks kill` does).
CHECKPOINTS_METHOD: Final = "_acpBridge/checkpoints"
REWIND_METHOD: Final = "_acpBridge/rewind"
REVERT_FILE_METHOD: Final = "_acpBridge/revertFile"
KILL_BACKGROUND_METHOD: Final = "_acpBridge/killBackground"

# The agent's methods besides `initialize` (`connection.AcpAgent` has exactly these; a test compares), so
# that before the agent exists a known method waits for it and an unknown one is refused at once.
REQUESTS: Final = (
    "authenticate",
    "logout",
    "session/new",
    "session/prompt",
    "session/set_mode",
    "session/set_config_option",
    "session/close",
    SET_TITLE,
    SET_TITLE_METHOD,
    LIST_RULES_METHOD,
    FORGET_RULES_METHOD,
    CHECKPOINTS_METHOD,
    REWIND_METHOD,
    REVERT_FILE_METHOD,
    KILL_BACKGROUND_METHOD,
)
HISTORY_REQUESTS: Final = (
    "session/load",
    "session/list",
    "session/resume",
    "session/fork",
    "session/delete",
)
NOTIFICATIONS: Final = ("session/cancel", "$/cancel_request")


def agent_requests(history: bool) -> tuple[str, ...]:
    """The agent's request methods: load, list, resume, fork and delete exist only when history is kept."""
    return REQUESTS + HISTORY_REQUESTS if history else REQUESTS


# A NamedTuple, not a dataclass: cheap to define, on the way to answering `initialize` (see `settings.Mode`).
class AgentFacts(NamedTuple):
    """What `initialize` says of the agent that the command line decides.

    `history`: session logs are kept (not `--no-history`). `auth_endpoint`: the endpoint whose API key the
    model needs (`boot.model_endpoint`), or None for a model without a key."""

    history: bool
    auth_endpoint: str | None
    checkpoints: bool = True  # not `--no-checkpoints`


def read_initialize(raw: object) -> ClientCapabilities:
    """The client's capabilities from `initialize`'s params. Raises InvalidParams for a bad version."""
    if raw is not None and not isinstance(raw, Mapping):
        raise InvalidParams("params must be an object")
    params: Mapping[str, Any] = raw or {}
    version = params.get("protocolVersion")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise InvalidParams("protocolVersion must be a non-negative integer (this agent speaks 1)")
    info = params.get("clientInfo")
    return ClientCapabilities.from_acp(
        params.get("clientCapabilities"), info if isinstance(info, Mapping) else None
    )


def session_capabilities(history: bool) -> dict[str, Any]:
    caps: dict[str, Any] = {"close": {}, "additionalDirectories": {}}
    # The proposed `systemPrompt` on new/load/resume/fork (`session.client_prompt`): append is the
    # baseline, and `override` is offered too. A client that does not know the key ignores it.
    caps["systemPrompt"] = {"mode": {"override": {}}}
    # `session/set_title` (unstable): an open session, with or without history.
    caps["title"] = {}
    if history:
        # `fork` is unstable in ACP v1 (a client that does not know it ignores the key).
        caps.update({"list": {}, "resume": {}, "fork": {}, "delete": {}})
    return caps


def initialize_result(facts: AgentFacts, caps: ClientCapabilities) -> dict[str, Any]:
    return {
        # Only v1 exists; a client asking for more gets ours and decides.
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            # Truthful: load, list, resume, fork and delete exist only with history (not --no-history).
            "loadSession": facts.history,
            # Images are accepted whatever the model: a prompt with images to a model without vision
            # gets an error saying so (a session's model may change; a silent drop would mislead).
            "promptCapabilities": {"image": True, "audio": False, "embeddedContext": True},
            "mcpCapabilities": {"http": True, "sse": True},
            "sessionCapabilities": session_capabilities(facts.history),
            "auth": auth_capabilities(facts.auth_endpoint),
            # Checkpoints and undo (docs/checkpoints.md): the `_acpBridge/checkpoints` methods below.
            "_meta": {"acpBridge": {"checkpoints": facts.checkpoints}},
        },
        "authMethods": auth_methods(facts.auth_endpoint, caps),
        "agentInfo": AGENT_INFO,
    }


class Handshake:
    """`initialize`, and every other message held until the agent is `ready` (or has `failed`)."""

    def __init__(
        self, facts: AgentFacts, on_initialized: Callable[[ClientCapabilities], None] | None = None
    ) -> None:
        self.facts = facts
        self.on_initialized = on_initialized
        self.capabilities: ClientCapabilities | None = None
        self.failure: str | None = None
        self._settled = asyncio.Event()
        self._waiting = 0
        # The handlers by method; `ready` and `failed` replace them in place.
        self._requests: dict[str, RequestHandler] = {"initialize": self.initialize}
        for method in agent_requests(facts.history):
            self._requests[method] = self._held_request(method)
        self.notifications: dict[str, NotificationHandler] = {
            method: self._held_notification(method) for method in NOTIFICATIONS
        }
        self.requests: Mapping[str, RequestHandler] = _RequestTable(self)

    @property
    def initialized(self) -> bool:
        return self.capabilities is not None

    @property
    def settled(self) -> bool:
        """The agent is ready or has failed: nothing waits any more."""
        return self._settled.is_set()

    @property
    def waiting(self) -> int:
        """How many messages wait for the agent."""
        return self._waiting

    async def initialize(self, raw: object, _id: object) -> Reply:
        caps = read_initialize(raw)
        self.capabilities = caps
        log.info("initialized by %s: %s", caps.client_name or "an unnamed client", caps)
        # After the answer is written: loading the core must not delay it.
        then = functools.partial(self.on_initialized, caps) if self.on_initialized is not None else None
        return Reply(initialize_result(self.facts, caps), then=then)

    def ready(
        self, requests: Mapping[str, RequestHandler], notifications: Mapping[str, NotificationHandler]
    ) -> None:
        """Install the agent's handlers and let the waiting messages through, in arrival order."""
        self._requests.clear()
        self._requests["initialize"] = self.initialize
        for method, handler in requests.items():
            self._requests[method] = self._request_after_initialize(method, handler)
        self.notifications.clear()
        for method, notification in notifications.items():
            self.notifications[method] = self._notification_after_initialize(method, notification)
        self._settled.set()

    def failed(self, reason: str) -> None:
        """The core could not be set up: each request (waiting or to come) gets an error saying why."""
        self.failure = reason
        log.error("the agent could not start: %s", reason)

        async def unavailable(raw: object, _id: object) -> Any:
            raise InternalError(f"The agent could not start: {reason}", data={"reason": reason})

        async def dropped(raw: object) -> None:
            log.warning("ignoring a notification: the agent could not start (%s)", reason)

        for method in [m for m in self._requests if m != "initialize"]:
            self._requests[method] = self._request_after_initialize(method, unavailable)
        for method in self.notifications:
            self.notifications[method] = self._notification_after_initialize(method, dropped)
        self._settled.set()

    def _refuse_before_initialize(self, method: str) -> None:
        if self.capabilities is None:
            raise InvalidRequest(
                f"Invalid request: {method} before initialize; send initialize first",
                data={"method": method},
            )

    def _request_after_initialize(self, method: str, handler: RequestHandler) -> RequestHandler:
        async def gated(raw: object, request_id: int | str | None) -> Any:
            self._refuse_before_initialize(method)
            return await handler(raw, request_id)

        return gated

    def _notification_after_initialize(
        self, method: str, handler: NotificationHandler
    ) -> NotificationHandler:
        async def gated(raw: object) -> None:
            if self.capabilities is None:
                log.warning("ignoring %s received before initialize", method)
                return
            await handler(raw)

        return gated

    async def _until_settled(self) -> None:
        self._waiting += 1
        try:
            # Waiters resume in the order they started waiting: the order the messages arrived in.
            await self._settled.wait()
        finally:
            self._waiting -= 1

    def _held_request(self, method: str) -> RequestHandler:
        async def held(raw: object, request_id: int | str | None) -> Any:
            self._refuse_before_initialize(method)
            await self._until_settled()
            handler = self._requests.get(method)
            if handler is None:
                raise MethodNotFound(
                    f"Method not found: {bounded_text(method, MAX_QUOTED_CHARS)}", data={"method": method}
                )
            return await handler(raw, request_id)

        return held

    def _held_notification(self, method: str) -> NotificationHandler:
        async def held(raw: object) -> None:
            if self.capabilities is None:
                log.warning("ignoring %s received before initialize", method)
                return
            await self._until_settled()
            handler = self.notifications.get(method)
            if handler is not None:
                await handler(raw)

        return held


class _RequestTable(Mapping[str, RequestHandler]):
    """What the peer looks a request's method up in: the handshake's handlers, and, between `initialize`
    and the agent being settled, a waiting handler for any other method (it is unknown or not once the
    agent is there). Looked up when the request's task starts, as the peer does."""

    def __init__(self, handshake: Handshake) -> None:
        self._handshake = handshake

    def __getitem__(self, method: str) -> RequestHandler:
        handshake = self._handshake
        handler = handshake._requests.get(method)
        if handler is not None:
            return handler
        if handshake.initialized and not handshake.settled:
            return handshake._held_request(method)
        raise KeyError(method)

    def __iter__(self) -> Iterator[str]:
        return iter(self._handshake._requests)

    def __len__(self) -> int:
        return len(self._handshake._requests)
