"""The ACP face: the agent's methods, over the JSON-RPC peer (`jsonrpc`), onto the session core.

`AcpAgent` is the method table (authenticate, logout, session/new, session/prompt, session/cancel,
session/close, session/set_mode, session/set_config_option, session/set_title and its older alias
`_acpBridge/setSessionTitle`, the extension methods `_acpBridge/listRules` and `_acpBridge/forgetRules`,
and session/load, session/list, session/resume, session/fork and session/delete when history is kept):
each handler reads its params into a typed value (`params`, which answers a bad field with -32602 naming
it), calls the `SessionManager` (and `session_index` for the list) with typed arguments, and shapes the
ACP result. A prompt's answer carries its token `usage` when the model reported any.
Load, resume and fork are one handler (`_reopen`) over one core path (`SessionManager.reopen`). New,
load, resume and fork hand the client's `systemPrompt` to the session (`session.client_prompt`).
`initialize` is not here: `handshake.py` answers it before this module is even loaded, refuses every
other request until it succeeded, and hands the client's capabilities over (`AcpAgent.initialized`).
`AcpChannel` is the core's `ClientChannel` over the same JSON-RPC peer (session/update,
session/request_permission, fs/*, and elicitation/create, `ElicitingChannel`, for `ask_user` and the
session's MCP servers). `logout` and `authenticate` come from `login`; `configOptions` from the session
(`config_options`), once the model list is loaded (`session/new` waits for it, once per process);
`modes` from `mapping`. `serve.py` runs them on stdio.

Must not: run tools, talk to models or build card or update shapes (that is `turn` and `mapping`); check
what only the core knows (sessions, modes, models); touch stdio or signals (that is serve.py, stdio.py
and boot.py).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from acp_bridge import mapping
from acp_bridge.acp import params
from acp_bridge.acp.handshake import (
    CHECKPOINTS_METHOD,
    FORGET_RULES_METHOD,
    KILL_BACKGROUND_METHOD,
    LIST_RULES_METHOD,
    REVERT_FILE_METHOD,
    REWIND_METHOD,
    SET_TITLE,
    SET_TITLE_METHOD,
)
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
from acp_bridge.history.session_index import list_sessions as list_stored_sessions
from acp_bridge.history.store import SessionStore
from acp_bridge.permissions.policy import MODES
from acp_bridge.permissions.rules_store import listing as rules_listing
from acp_bridge.session.manager import Reopening, SessionManager
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

    async def create_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        """`elicitation/create` (`ElicitingChannel`): the `ask_user` form, or an MCP server's question."""
        raw = await self.peer.request("elicitation/create", params)
        if not isinstance(raw, Mapping) or raw.get("action") not in ("accept", "decline", "cancel"):
            raise ValueError(f"elicitation/create answered without an action: {raw!r:.200}")
        return dict(raw)


def _session_state(session: Session) -> dict[str, Any]:
    """What an answer that sets a session up says of it: its modes and its config options (the mode, the
    model and the thinking effort, `config_options`)."""
    modes = ((m.id, m.name, m.description) for m in MODES.values())
    return {
        "modes": mapping.session_modes(session.permissions.mode, modes),
        "configOptions": session.config_options(),
    }


def _after_reopening(session: Session) -> None:
    """What a resumed or forked session tells the client once it has its answer: the commands, the
    title."""
    session.send(session.available_commands_update())
    session.tell_info()


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
            SET_TITLE: self.set_session_title,
            SET_TITLE_METHOD: self.set_session_title,
            LIST_RULES_METHOD: self.list_rules,
            FORGET_RULES_METHOD: self.forget_rules,
            # checkpoints: undo (docs/checkpoints.md), and stopping one background command
            CHECKPOINTS_METHOD: self.checkpoints,
            REWIND_METHOD: self.rewind,
            REVERT_FILE_METHOD: self.revert_file,
            KILL_BACKGROUND_METHOD: self.kill_background,
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
        await login.authenticate(self.manager.backend, params.read_authenticate(raw))
        return {}

    async def logout(self, raw: object, _id: object) -> dict[str, Any]:
        params.read_no_params(raw)
        login.logout(self.manager.backend)
        return {}

    async def new_session(self, raw: object, _id: object) -> Reply:
        setup = params.read_new_session(raw)
        await self.manager.catalog.load()  # once per process, bounded by its timeout
        session = self.manager.new_session(setup.cwd, setup.additional_directories, setup.mcp_servers)
        session.context.client = setup.system_prompt
        result = {"sessionId": session.id, **_session_state(session)}
        # After the response, so session/new answers without waiting for anything.
        return Reply(result, then=lambda: session.send(session.available_commands_update()))

    async def load_session(self, raw: object, _id: object) -> Reply:
        """`session/load`: the stored conversation is replayed to the client before the answer, as ACP
        requires."""
        return await self._reopen(raw, "load")

    async def resume_session(self, raw: object, _id: object) -> Reply:
        """`session/resume`: the stored conversation comes back as the model's context, and nothing of
        it is sent to the client (unlike `session/load`)."""
        return await self._reopen(raw, "resume")

    async def fork_session(self, raw: object, _id: object) -> Reply:
        """`session/fork` (unstable in ACP v1): a new session with the conversation of `sessionId` so
        far (stored, or open here), sent nothing of it (as `session/resume`); the source goes on
        untouched, even mid-prompt. The answer names the new session."""
        return await self._reopen(raw, "fork")

    async def _reopen(self, raw: object, how: Reopening) -> Reply:
        """The one path of load, resume and fork; they differ in what the core replays or copies
        (`SessionManager.reopen`), in the new session's id in a fork's answer, and in when the client
        hears the title (before a load's answer, with its replay; after the others')."""
        assert self.store is not None
        asked = params.read_reopen(raw)
        at_turn = params.fork_turn(raw) if how == "fork" else None  # checkpoints: a fork at turn N
        stored = self.store.load(asked.session_id)
        await self.manager.catalog.load()  # once per process, bounded by its timeout
        setup = asked.setup
        if at_turn is not None:
            session = await self.manager.fork_at(
                at_turn, asked.session_id, setup.cwd, stored, setup.additional_directories, setup.mcp_servers
            )
        else:
            session = self.manager.reopen(
                how, asked.session_id, setup.cwd, stored, setup.additional_directories, setup.mcp_servers
            )
        session.context.client = setup.system_prompt
        result = _session_state(session)
        if how == "fork":
            result = {"sessionId": session.id, **result}
        if how == "load":
            session.tell_info()  # the session's title, for the client's list
            return Reply(result)
        return Reply(result, then=lambda: _after_reopening(session))

    async def delete_session(self, raw: object, _id: object) -> dict[str, Any]:
        """`session/delete`: the session leaves `session/list` and its log is deleted; open here, it is
        closed first (as `session/close`)."""
        assert self.store is not None
        session_id = params.read_session(raw).session_id
        open_here = session_id in self.manager.sessions
        await self.manager.forget_session(session_id)
        if not self.store.delete(session_id) and not open_here:
            raise ResourceNotFound(f"no stored session {quoted(session_id)}", data={"sessionId": session_id})
        return {}

    async def list_sessions(self, raw: object, _id: object) -> dict[str, Any]:
        assert self.store is not None
        asked = params.read_list_sessions(raw)
        try:
            records, next_cursor = list_stored_sessions(self.store, asked.cwd, asked.cursor)
        except ValueError as exc:  # a cursor this bridge did not hand out
            raise InvalidParams(f"cursor is {exc}", data={"field": "cursor"}) from None
        result: dict[str, Any] = {"sessions": [r.to_acp() for r in records]}
        if next_cursor is not None:
            result["nextCursor"] = next_cursor
        return result

    async def set_session_title(self, raw: object, _id: object) -> dict[str, Any]:
        """`session/set_title` {sessionId, title} (or its alias `_acpBridge/setSessionTitle`): rename an
        open session; the answer is the title as stored (cleaned: one line, bounded), the client is told
        with a `session_info_update`, and `session/list` shows the title from now on (a prompt never
        replaces it)."""
        asked = params.read_set_title(raw)
        self.manager.get(asked.session_id).set_title(asked.title)
        return {"title": asked.title}

    async def list_rules(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/listRules` {sessionId}: the session's mode and remembered rules, numbered as
        `/permissions` shows them, and whether they last for the session or the project."""
        session = self.manager.get(params.read_session(raw).session_id)
        return rules_listing(session.permissions)

    async def forget_rules(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/forgetRules` {sessionId, number?}: forget rule `number` (as `listRules` numbers
        them), or every rule; answers with the rules left."""
        asked = params.read_forget_rules(raw)
        session = self.manager.get(asked.session_id)
        if not session.forget_rules(asked.number) and asked.number is not None:
            raise InvalidParams(
                f"session {session.id} has no rule {asked.number}", data={"number": asked.number}
            )
        return rules_listing(session.permissions)

    async def checkpoints(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/checkpoints` {sessionId}: the session's turns, with how many files each changed."""
        session = self.manager.get(params.read_session(raw).session_id)
        return {"turns": session.undo.listing()}

    async def rewind(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/rewind` {sessionId, turn, force?}: the files back as before turn N; `conflict`
        (nothing written) when one was changed since by someone other than the agent, unless `force`."""
        asked = params.read_rewind(raw)
        session = self.manager.get(asked.session_id)
        return (await session.undo.rewind(asked.turn, force=asked.force)).to_json()

    async def revert_file(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/revertFile` {sessionId, toolCallId, path, force?}: one file back as before that
        call."""
        asked = params.read_revert_file(raw)
        session = self.manager.get(asked.session_id)
        return (await session.undo.revert_file(asked.tool_call_id, asked.path, force=asked.force)).to_json()

    async def kill_background(self, raw: object, _id: object) -> dict[str, Any]:
        """`_acpBridge/killBackground` {sessionId, bashId}: stop one background command (`/tasks kill`)."""
        asked = params.read_kill_background(raw)
        session = self.manager.get(asked.session_id)
        return {"killed": session.background.kill(asked.bash_id)}

    async def prompt(self, raw: object, request_id: object) -> dict[str, Any]:
        asked = params.read_prompt(raw)
        session = self.manager.get(asked.session_id)
        if isinstance(request_id, (int, str)):
            self._prompts[request_id] = session.id
        try:
            # steer: taken while a turn runs too (session/steering.py)
            answer = await session.submit(list(asked.blocks), asked.message_id)
        finally:
            if isinstance(request_id, (int, str)):
                self._prompts.pop(request_id, None)
        return answer.response()  # `_meta.acpBridge.turn`: the turn it ran in (checkpoints)

    async def set_mode(self, raw: object, _id: object) -> dict[str, Any]:
        asked = params.read_set_mode(raw)
        self.manager.get(asked.session_id).set_mode(asked.mode_id)
        return {}

    async def set_config_option(self, raw: object, _id: object) -> dict[str, Any]:
        asked = params.read_set_config_option(raw)
        session = self.manager.get(asked.session_id)
        return {"configOptions": session.set_config_option(asked.config_id, asked.value)}

    async def close_session(self, raw: object, _id: object) -> dict[str, Any]:
        # Answers after the running prompt (if any) has stopped or been abandoned, so a client that waits
        # for this answer gets no further work from the session.
        await self.manager.close(params.read_session(raw).session_id)
        return {}

    async def cancel(self, raw: object) -> None:
        self.manager.cancel(params.read_session(raw).session_id)

    async def cancel_request(self, raw: object) -> None:
        session_id = self._prompts.get(params.read_cancel_request(raw))
        if session_id is not None:
            self.manager.cancel(session_id)
