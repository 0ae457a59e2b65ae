"""The ACP face: the agent's methods, over the JSON-RPC peer (`jsonrpc`), onto the session core.

`AcpAgent` is the method table (authenticate, logout, session/new, session/prompt, session/cancel,
session/close, session/set_mode, session/set_config_option, the extension methods
`_acpBridge/setSessionTitle`, `_acpBridge/listRules` and `_acpBridge/forgetRules`, and session/load,
session/list, session/resume, session/fork and session/delete when history is kept); it checks params,
calls the `SessionManager` (and `session_index` for the list), and shapes ACP results. `initialize` is
not here: `handshake.py` answers it before this module is even loaded, refuses every other request
until it succeeded, and hands the client's capabilities over (`AcpAgent.initialized`).
`session/new` and `session/load` hand their `mcpServers` to the core (`acp_bridge.mcp`); new, load,
resume and fork their `systemPrompt` (`session.client_prompt`).
`AcpChannel` is the core's `ClientChannel` over the same JSON-RPC peer (session/update,
session/request_permission, fs/*, and elicitation/create for the session's MCP servers).
`logout` and `authenticate` come from `login`; `configOptions` from the session (`config_options`), once
the model list is loaded (`session/new` waits for it, once per process). `serve.py` runs them on stdio.

Must not: run tools, talk to models or build card shapes (that is turn.py and mapping.py); touch stdio or
signals (that is serve.py, stdio.py and boot.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from acp_bridge.acp.handshake import FORGET_RULES_METHOD, LIST_RULES_METHOD, SET_TITLE_METHOD
from acp_bridge.acp.jsonrpc import JsonRpcPeer, NotificationHandler, Reply, RequestHandler
from acp_bridge.auth import login
from acp_bridge.client.channel import (
    ClientCapabilities,
    PermissionOption,
    PermissionOutcome,
    ToolCallUpdate,
    Update,
)
from acp_bridge.common.errors import ConnectionClosed, InvalidParams, ResourceNotFound, quoted
from acp_bridge.history.session_index import clean_title
from acp_bridge.history.session_index import list_sessions as list_stored_sessions
from acp_bridge.history.store import SessionStore
from acp_bridge.mapping import ConfigSelect
from acp_bridge.permissions.policy import MODES
from acp_bridge.permissions.rules_store import listing as rules_listing
from acp_bridge.session.client_prompt import read_client_prompt
from acp_bridge.session.manager import LoadedLog, SessionManager
from acp_bridge.session.session import Session

log = logging.getLogger(__name__)


class AcpChannel:
    """`ClientChannel` over a JSON-RPC peer speaking ACP's client methods."""

    def __init__(self) -> None:
        self._peer: JsonRpcPeer | None = None
        self._capabilities = ClientCapabilities()

    def bind(self, peer: JsonRpcPeer) -> None:
        self._peer = peer

    @property
    def peer(self) -> JsonRpcPeer:
        if self._peer is None:
            raise ConnectionClosed("the channel is not connected")
        return self._peer

    @property
    def capabilities(self) -> ClientCapabilities:
        return self._capabilities

    def set_capabilities(self, capabilities: ClientCapabilities) -> None:
        self._capabilities = capabilities

    def send_update(self, session_id: str, update: Update) -> None:
        if self._peer is not None:
            self._peer.notify("session/update", {"sessionId": session_id, "update": update})

    async def drain(self) -> None:
        if self._peer is not None:
            await self._peer.writer.drain()

    def backlog(self) -> int:
        return self._peer.writer.backlog() if self._peer is not None else 0

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionOutcome:
        raw = await self.peer.request(
            "session/request_permission", {"sessionId": session_id, "toolCall": tool_call, "options": options}
        )
        return PermissionOutcome.from_acp(raw)

    async def read_text_file(self, session_id: str, path: str) -> str:
        raw = await self.peer.request("fs/read_text_file", {"sessionId": session_id, "path": path})
        content = raw.get("content") if isinstance(raw, Mapping) else None
        if not isinstance(content, str):
            raise ValueError(f"fs/read_text_file answered without text content: {raw!r}")
        return content

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        await self.peer.request(
            "fs/write_text_file", {"sessionId": session_id, "path": path, "content": content}
        )

    async def request_elicitation(self, session_id: str, params: dict[str, Any]) -> dict[str, Any]:
        """An MCP server's `elicitation/create`, put to the editor as ACP's (`params` carry the session id,
        and the call's id when one call of the server runs). Only when `capabilities.elicitation_*`."""
        raw = await self.peer.request("elicitation/create", params)
        if not isinstance(raw, Mapping) or raw.get("action") not in ("accept", "decline", "cancel"):
            raise ValueError(f"elicitation/create answered without an action: {raw!r}")
        return dict(raw)

    async def create_elicitation(self, params: dict[str, Any]) -> Any:
        return await self.peer.request("elicitation/create", params)


def _params(raw: object) -> Mapping[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise InvalidParams("params must be an object")
    return raw


def _after_reopening(session: Session) -> None:
    """What a resumed or forked session tells the client once it has its answer: the commands, the
    title."""
    session.send(session.available_commands_update())
    session.tell_info()


def _modes_state(session: Session) -> dict[str, Any]:
    return {
        "currentModeId": session.permissions.mode,
        "availableModes": [
            {"id": m.id, "name": m.name, "description": m.description} for m in MODES.values()
        ],
    }


def _config_options(session: Session) -> list[ConfigSelect]:
    # The mode, the model and the thinking effort (`config_options`).
    return session.config_options()


class AcpAgent:
    """ACP's agent methods. `requests` / `notifications` are its tables (`handshake.Handshake.ready`
    installs them behind the check that `initialize` came first)."""

    def __init__(
        self, channel: AcpChannel, manager: SessionManager, store: SessionStore | None = None
    ) -> None:
        self.channel = channel
        self.manager = manager
        self.store = store
        # Incoming prompt request id → its session, for `$/cancel_request`.
        self._prompts: dict[int | str, str] = {}
        self.requests: dict[str, RequestHandler] = {
            "authenticate": self.authenticate,
            "logout": self.logout,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/set_mode": self.set_mode,
            "session/set_config_option": self.set_config_option,
            "session/close": self.close_session,
            SET_TITLE_METHOD: self.set_session_title,
            LIST_RULES_METHOD: self.list_rules,
            FORGET_RULES_METHOD: self.forget_rules,
        }
        if store is not None:
            self.requests["session/load"] = self.load_session
            self.requests["session/list"] = self.list_sessions
            self.requests["session/resume"] = self.resume_session
            self.requests["session/fork"] = self.fork_session
            self.requests["session/delete"] = self.delete_session
        self.notifications: dict[str, NotificationHandler] = {
            "session/cancel": self.cancel,
            "$/cancel_request": self.cancel_request,
        }

    def initialized(self, caps: ClientCapabilities) -> None:
        """The client's `initialize` (each one): its capabilities, for the sessions made from now on."""
        self.channel.set_capabilities(caps)
        self.manager.catalog.prefetch()  # the model list, ready by the first session/new

    async def authenticate(self, raw: object, _id: object) -> dict[str, Any]:
        # The stored (or environment) key, checked against the endpoint (`login`).
        await login.authenticate(self.manager.backend, _params(raw).get("methodId"))
        return {}

    async def logout(self, raw: object, _id: object) -> dict[str, Any]:
        login.logout(self.manager.backend)
        return {}

    async def new_session(self, raw: object, _id: object) -> Reply:
        params = _params(raw)
        client_prompt = read_client_prompt(params.get("systemPrompt"))  # prompt glue: checked first
        await self.manager.catalog.load()  # once per process, bounded by its timeout
        session = self.manager.new_session(
            params.get("cwd"), params.get("additionalDirectories"), params.get("mcpServers")
        )
        session.context.client = client_prompt  # prompt glue: the client's systemPrompt
        result = {
            "sessionId": session.id,
            "modes": _modes_state(session),
            "configOptions": _config_options(session),
        }
        # After the response, so session/new answers without waiting for anything.
        return Reply(result, then=lambda: session.send(session.available_commands_update()))

    async def load_session(self, raw: object, _id: object) -> dict[str, Any]:
        params = _params(raw)
        session_id, loaded = self._stored(params)
        if loaded is None:
            raise ResourceNotFound(f"no stored session {quoted(session_id)}", data={"sessionId": session_id})
        client_prompt = read_client_prompt(params.get("systemPrompt"))  # prompt glue: checked first
        await self.manager.catalog.load()
        # The replay's updates go out before this response, as ACP requires.
        session = self.manager.load_session(
            session_id,
            params.get("cwd"),
            loaded,
            params.get("additionalDirectories"),
            params.get("mcpServers"),
        )
        session.context.client = client_prompt  # prompt glue: the client's systemPrompt
        session.tell_info()  # the session's title, for the client's list
        return {"modes": _modes_state(session), "configOptions": _config_options(session)}

    async def resume_session(self, raw: object, _id: object) -> Reply:
        """`session/resume`: the stored conversation comes back as the model's context, and nothing of
        it is sent to the client (unlike `session/load`)."""
        params = _params(raw)
        session_id, loaded = self._stored(params)
        if loaded is None:
            raise ResourceNotFound(f"no stored session {quoted(session_id)}", data={"sessionId": session_id})
        client_prompt = read_client_prompt(params.get("systemPrompt"))  # prompt glue: checked first
        await self.manager.catalog.load()  # once per process, bounded by its timeout
        session = self.manager.load_session(
            session_id,
            params.get("cwd"),
            loaded,
            params.get("additionalDirectories"),
            params.get("mcpServers"),
            replay_updates=False,
        )
        session.context.client = client_prompt  # prompt glue: the client's systemPrompt
        result = {"modes": _modes_state(session), "configOptions": _config_options(session)}
        return Reply(result, then=lambda: _after_reopening(session))

    async def fork_session(self, raw: object, _id: object) -> Reply:
        """`session/fork` (unstable in ACP v1): a new session with the conversation of `sessionId` so
        far (stored, or open here), sent nothing of it (as `session/resume`); the source goes on
        untouched, even mid-prompt. The answer names the new session."""
        params = _params(raw)
        source_id, loaded = self._stored(params)
        client_prompt = read_client_prompt(params.get("systemPrompt"))  # prompt glue: checked first
        await self.manager.catalog.load()  # once per process, bounded by its timeout
        session = self.manager.fork_session(
            source_id,
            params.get("cwd"),
            loaded,
            params.get("additionalDirectories"),
            params.get("mcpServers"),
        )
        session.context.client = client_prompt  # prompt glue: the client's systemPrompt
        result = {
            "sessionId": session.id,
            "modes": _modes_state(session),
            "configOptions": _config_options(session),
        }
        return Reply(result, then=lambda: _after_reopening(session))

    def _stored(self, params: Mapping[str, Any]) -> tuple[str, LoadedLog | None]:
        """The `sessionId` of a request's params and that session's stored log (None when none is)."""
        assert self.store is not None
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise InvalidParams(f"sessionId must be a string, got {quoted(session_id)}")
        return session_id, self.store.load(session_id)

    async def delete_session(self, raw: object, _id: object) -> dict[str, Any]:
        """`session/delete`: the session leaves `session/list` and its log is deleted; open here, it is
        closed first (as `session/close`)."""
        assert self.store is not None
        params = _params(raw)
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            raise InvalidParams(f"sessionId must be a string, got {quoted(session_id)}")
        open_here = session_id in self.manager.sessions
        await self.manager.forget_session(session_id)
        if not self.store.delete(session_id) and not open_here:
            raise ResourceNotFound(f"no stored session {quoted(session_id)}", data={"sessionId": session_id})
        return {}

    async def list_sessions(self, raw: object, _id: object) -> dict[str, Any]:
        assert self.store is not None
        params = _params(raw)
        cwd, cursor = params.get("cwd"), params.get("cursor")
        if cwd is not None and (not isinstance(cwd, str) or not os.path.isabs(cwd)):
            raise InvalidParams(f"cwd must be an absolute path, got {quoted(cwd)}")
        if cursor is not None and not isinstance(cursor, str):
            raise InvalidParams("cursor must be a string from a previous session/list")
        try:
            records, next_cursor = list_stored_sessions(self.store, cwd, cursor)
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        result: dict[str, Any] = {"sessions": [r.to_acp() for r in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def set_session_title(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/setSessionTitle` {sessionId, title}: rename an open session; the client is told
        with a `session_info_update`, and `session/list` shows the title from now on."""
        params = _params(raw)
        session = self.manager.get(params.get("sessionId"))
        try:
            title = clean_title(params.get("title"))
        except ValueError as exc:
            raise InvalidParams(str(exc)) from None
        session.set_title(title)
        return {"title": title}

    async def list_rules(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/listRules` {sessionId}: the session's mode and remembered rules, numbered as
        `/permissions` shows them, and whether they last for the session or the project."""
        session = self.manager.get(_params(raw).get("sessionId"))
        return rules_listing(session.permissions)

    async def forget_rules(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/forgetRules` {sessionId, number?}: forget rule `number` (as `listRules` numbers
        them), or every rule; answers with the rules left."""
        params = _params(raw)
        session = self.manager.get(params.get("sessionId"))
        number = params.get("number")
        if number is not None and (not isinstance(number, int) or isinstance(number, bool) or number < 1):
            raise InvalidParams(f"number must be a rule number ({LIST_RULES_METHOD}), got {quoted(number)}")
        if not session.forget_rules(number) and number is not None:
            raise InvalidParams(f"session {session.id} has no rule {number}", data={"number": number})
        return rules_listing(session.permissions)

    async def prompt(self, raw: object, request_id: object) -> dict[str, Any]:
        params = _params(raw)
        session = self.manager.get(params.get("sessionId"))
        if isinstance(request_id, (int, str)):
            self._prompts[request_id] = session.id
        try:
            stop = await session.prompt(params.get("prompt"))
        finally:
            if isinstance(request_id, (int, str)):
                self._prompts.pop(request_id, None)
        return {"stopReason": stop}

    async def set_mode(self, raw: object, _id: object) -> dict[str, Any]:
        params = _params(raw)
        session = self.manager.get(params.get("sessionId"))
        mode = params.get("modeId")
        if not isinstance(mode, str):
            raise InvalidParams("modeId must be a string")
        session.set_mode(mode)
        return {}

    async def set_config_option(self, raw: object, _id: object) -> dict[str, Any]:
        params = _params(raw)
        session = self.manager.get(params.get("sessionId"))
        if params.get("type") == "boolean":
            raise InvalidParams("this agent's config options are all of type select")
        return {"configOptions": session.set_config_option(params.get("configId"), params.get("value"))}

    async def close_session(self, raw: object, _id: object) -> dict[str, Any]:
        params = _params(raw)
        # Answers after the running prompt (if any) has stopped or been abandoned, so a client that waits
        # for this answer gets no further work from the session.
        await self.manager.close(params.get("sessionId"))
        return {}

    async def cancel(self, raw: object) -> None:
        params = _params(raw)
        self.manager.cancel(params.get("sessionId"))

    async def cancel_request(self, raw: object) -> None:
        params = _params(raw)
        request_id = params.get("requestId")
        session_id = self._prompts.get(request_id) if isinstance(request_id, (int, str)) else None
        if session_id is not None:
            self.manager.cancel(session_id)
