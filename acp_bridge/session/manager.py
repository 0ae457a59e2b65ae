"""Sessions: the face-independent core a face (ACP, LSP) drives through `SessionManager`.

A `SessionManager` belongs to one client connection. It owns the tool registry (tools, the permission gate
as first pre-execute listener and approval service, the result observer that completes cards and tells the
session's permissions a call settled), and the sessions (`session.Session`: each strictly isolated, with
its own cwd and roots, history, permission state, MCP servers, and at most one prompt in flight). It makes
a session's MCP servers (`acp_bridge.mcp`, started in the background, stopped with the session).
`close()` stops the session's prompt as `cancel` would, waits for it to answer, then forgets the session.
`shutdown()` cancels everything and waits for it to stop. A session's durable events go to its `Recorder`
as `session_log` records; `reopen` is the one path that brings a stored session back: `session/load`
replays them (`replay`), then restores the permission state and title they end with; `session/resume`
rebuilds the same history without sending anything; `session/fork` starts a new session from another's
log. With `CoreConfig.rules_dir` "always" answers last for the project (`rules_store`).

The API takes typed values (a cwd, the other roots, the MCP servers already read by the face) and checks
only what is the core's to know: an unknown or busy session, a cwd that is not a stored session's, a
relative root (the path policy judges paths against the roots).

Must not: know the transport (only `ClientChannel`), name a field of any wire protocol in an error (the
faces read their params), or answer for another session's prompt.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio

from acp_bridge import mapping
from acp_bridge.checkpoints.service import SessionCheckpoints, UnknownTurn
from acp_bridge.checkpoints.wrapper import checkpoint_wrapper
from acp_bridge.client.channel import ClientChannel, Update
from acp_bridge.common.errors import InvalidParams, InvalidRequest, ResourceNotFound, quoted
from acp_bridge.history.session_index import clean_title
from acp_bridge.history.session_log import SessionHeader, SessionInfoChanged
from acp_bridge.mapping import WireContext
from acp_bridge.models import Message, ModelBackend
from acp_bridge.models.catalog import CatalogSettings, ModelCatalog
from acp_bridge.permissions.gate import PermissionGate
from acp_bridge.permissions.rules_store import ProjectPermissions, ProjectRules
from acp_bridge.session.core_config import CoreConfig as CoreConfig
from acp_bridge.session.processes import SessionResources
from acp_bridge.session.prompt_context import add_folder_instructions
from acp_bridge.session.replay import replay
from acp_bridge.session.rewind import events_before_turn
from acp_bridge.session.session import Recorder, Session
from presenters.disk import remove_stale_temps_soon
from presenters.run_code import run_code_tool
from registry_core import (
    CodeDispatchEvent,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolScope,
)

if TYPE_CHECKING:
    from acp_bridge.mcp.config import ServerList

log = logging.getLogger(__name__)

# A stored log as the store reads it: its header, and its events (iterated once).
LoadedLog = tuple[Mapping[str, Any], Iterable[Mapping[str, Any]]]


class SessionManager:
    """All sessions of one client connection, and the registry they share."""

    def __init__(
        self,
        channel: ClientChannel,
        backend: ModelBackend,
        tools: Sequence[ToolDefinition],
        config: CoreConfig | None = None,
        *,
        recorder: Recorder | None = None,
        session_ids: Callable[[], str] | None = None,
    ) -> None:
        self.channel = channel
        self.backend = backend
        self.config = config or CoreConfig()
        self.recorder = recorder
        self.recording = recorder is not None
        self._new_id = session_ids or (lambda: f"sess_{uuid.uuid4().hex}")
        self.sessions: dict[str, Session] = {}
        rules_dir = self.config.rules_dir
        self.project_rules = ProjectRules(rules_dir) if rules_dir is not None else None
        self._resources: dict[str, SessionResources] = {}
        self._closing = False
        self._stopping: set[asyncio.Future[None]] = set()  # MCP servers of replaced sessions, stopping
        # The models sessions may pick, listed once for the connection (`load` is awaited by the faces).
        self.catalog = ModelCatalog(
            backend, CatalogSettings(self.config.model_list, self.config.context_window, self.config.price)
        )
        self.gate = PermissionGate(self._gate_host)
        self.registry = ToolRegistry(approval=self.gate)
        self.registry.on_pre_execute(self.gate.listener, first=True)
        self.registry.on_result(self._observe)
        self.registry.on_code_dispatch(self._observe_code_dispatch)
        self.registry.on_post_execute(add_folder_instructions)  # prompt glue: folder AGENTS.md files
        for tool in tools:
            self.registry.register(tool)
        if self.config.code_mode != "off":
            self.registry.register(run_code_tool(), transport=True)
        if self.config.code_mode == "only":
            self.registry.add_guard(self._through_code_only)
        if self.config.checkpoints_dir is not None:
            # Outermost: a call that timed out is still followed by its snapshot (acp_bridge.checkpoints).
            self.registry.add_execute_wrapper(checkpoint_wrapper, outermost=True)

    def resources_of(self, session_id: str) -> SessionResources:
        """The session's processes and scratch directory (released by `close` and `shutdown`)."""
        return self._resources.setdefault(session_id, SessionResources())

    def _gate_host(self, session_id: str) -> Session | None:
        return self.sessions.get(session_id)

    def _observe(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        session = self.sessions.get(execution.agent.id) if execution.agent is not None else None
        if session is not None:
            session.on_result(execution, result)

    def _observe_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> None:
        session = self.sessions.get(execution.agent.id) if execution.agent is not None else None
        if session is not None:
            session.on_code_dispatch(execution, event)

    def _through_code_only(self, execution: ToolExecution) -> str | None:
        """With `code_mode == "only"`, a session's top-level call of anything but the transport is refused."""
        if (
            execution.parent is not None
            or execution.agent is None
            or self.registry.is_transport(execution.name)
        ):
            return None
        if execution.agent.id not in self.sessions:
            return None
        return (
            f"`{execution.name}` is reachable only from a program in this session: call `run_code` with a "
            f"program that calls {execution.name}(...)."
        )

    def _start_mcp(self, session: Session, servers: ServerList | None) -> None:
        """Start the session's MCP servers in the background: the ones its client passed, then the
        configured ones. Loads the MCP code only when there is a server."""
        configured = self.config.mcp_servers
        if not servers and not configured:
            return
        from acp_bridge.mcp import merge
        from acp_bridge.mcp.config import ServerList as Servers
        from acp_bridge.mcp.servers import SessionServers

        chosen = merge(servers or Servers(), configured or Servers())
        if chosen:
            session.mcp = SessionServers(session, chosen, startup_timeout=self.config.mcp_startup_timeout)
            session.mcp.start()

    def new_session(
        self, cwd: str, extra_roots: Sequence[str] = (), mcp_servers: ServerList | None = None
    ) -> Session:
        """A new session in `cwd`, whose roots are `cwd` then `extra_roots` (absolute paths), with the
        client's MCP servers (and the configured ones). Raises InvalidParams for a relative root,
        InvalidRequest while shutting down."""
        if self._closing:
            raise InvalidRequest("the bridge is shutting down")
        roots = _roots(cwd, extra_roots)
        if not os.path.isdir(roots[0]):
            log.warning("session cwd %s does not exist (yet)", roots[0])
        session_id = self._new_id()
        session = Session(self, session_id, roots[0], roots)
        self.sessions[session_id] = session
        remove_stale_temps_soon(session.roots)  # a killed writer's temporary files (see fs_access)
        if self.recorder is not None:
            self.recorder.begin(session_id, session.cwd, session.roots)
        self._start_mcp(session, mcp_servers)
        return session

    def reopen(
        self,
        how: Reopening,
        session_id: str,
        cwd: str,
        stored: LoadedLog | None,
        extra_roots: Sequence[str] = (),
        mcp_servers: ServerList | None = None,
        *,
        at_turn: tuple[int, SessionCheckpoints] | None = None,
    ) -> Session:
        """Reopen session `session_id` from `stored`, its stored (header, events), or None when nothing is
        stored; its roots are `cwd` and `extra_roots` (ACP: the complete list for the reopened session;
        none when empty). The history, the mode, the remembered rules, the title and the model settings
        come back; the three ways differ only in what they replay or copy:
        - "load": the session, replayed to the client as updates (and the notes on what came back);
        - "resume": the session, sent nothing;
        - "fork": a new session, sent nothing, whose log begins with a copy of the source's events, so it
          can be listed, loaded and forked like any other, titled as a fork ("Fork: " and the source's).
          The source is not touched and may be running a prompt (a fork of a turn under way ends where
          the log does, its unanswered calls answered as having no result, as a reload does); a source
          open here that has logged nothing yet forks from its header alone.
        Raises ResourceNotFound (nothing stored, nor open to fork), InvalidParams (a relative root, or a
        cwd that is not the session's) or InvalidRequest (a session open here and busy, to load or
        resume)."""
        header, log_events = self._stored_log(how, session_id, stored)
        stored_cwd = os.path.normpath(header.cwd)
        if os.path.normpath(cwd) != stored_cwd:
            raise InvalidParams(f"session {session_id} belongs to {stored_cwd}, not {cwd}")
        roots = _roots(stored_cwd, extra_roots)
        existing = self.sessions.get(session_id) if how != "fork" else None
        if existing is not None and existing.busy:
            raise InvalidRequest(f"session {session_id} is running a prompt; cancel it before reopening it")
        if how == "fork":
            session_id = self._new_id()
            log_events = list(log_events)  # copied, then replayed
            if at_turn is not None:  # checkpoints: a fork at a turn (`fork_at`)
                log_events = events_before_turn(log_events, at_turn[0])
                at_turn[1].fork_to(session_id, at_turn[0])
            self._copy_log(session_id, header, log_events)
        session = Session(self, session_id, stored_cwd, roots)
        self.sessions[session_id] = session
        if existing is not None and existing.mcp is not None:
            stopping = asyncio.ensure_future(existing.mcp.aclose())
            self._stopping.add(stopping)
            stopping.add_done_callback(self._stopping.discard)
        remove_stale_temps_soon(session.roots)  # a killed writer's temporary files (see fs_access)
        shown = how == "load"
        if shown:
            replayed = replay(session, log_events)
        else:  # only the cards of commands still running here are drawn (to go on live)
            running = session.background.running_calls()
            replayed = replay(_Unseen(session), log_events, keeps=running.__contains__)
        session.background.reopen(list(replayed.background), visible=shown)  # bg
        session.turn_index = replayed.prompts
        session.compactor.count = replayed.compactions
        if replayed.permissions is not None:
            session.restore_permissions(replayed.permissions, announce=shown)
        elif isinstance(session.permissions, ProjectPermissions):
            session.permissions.adopt_project_rules()
        session.restore_info(replayed.info, replayed.first_prompt)
        if roots != (replayed.info.roots or header.roots):
            session.record(SessionInfoChanged(roots=roots))  # what session/list reports from now on
        self._start_mcp(session, mcp_servers)
        controls = session.controls
        note = controls.restore(replayed.config)
        if note is not None and shown:
            session.send(mapping.agent_message_chunk("\n\n" + note))
        controls.meter.restore(replayed.usage, context_known=replayed.usage_current)
        usage = controls.meter.update(controls.info)
        if usage is not None:
            session.send(usage)  # the gauge as the session left it
        if how == "fork":
            # Told with the client's next `tell_info` (after the answer). Marked first, so a list that
            # cuts a long title still tells the two apart.
            base = clean_title(session.title or "Untitled session")
            session.set_title(f"{FORK_PREFIX}{base[:MAX_FORKED_TITLE]}", source="fork", tell=False)
        return session

    async def fork_at(
        self,
        turn: int,
        session_id: str,
        cwd: str,
        stored: LoadedLog | None,
        extra_roots: Sequence[str] = (),
        mcp_servers: ServerList | None = None,
    ) -> Session:
        """`session/fork` at a checkpoint: the files the source's agent changed in turn `turn` and later go
        back as they were before it (`checkpoints`), then a fork whose conversation ends before that turn,
        with the source's checkpoints of the turns before. Raises InvalidParams (no such turn), InvalidRequest
        (no checkpoints, the source is running a prompt, or a file changed since by someone other than the
        agent: nothing is written then), and as `reopen`."""
        base = self.config.checkpoints_dir
        if base is None:
            raise InvalidRequest("this bridge keeps no checkpoints: a fork at a turn needs them")
        header, log_events = self._stored_log("fork", session_id, stored)
        events_before_turn(list(log_events), turn)  # the turn must exist before anything is written
        source = self.sessions.get(session_id)
        checkpoints = source.checkpoints if source is not None else None
        if checkpoints is None:
            roots = _roots(header.cwd, extra_roots)
            checkpoints = SessionCheckpoints(Path(base), session_id, roots, roots[0])
        if source is not None and source.busy:
            raise InvalidRequest(
                f"session {session_id} is running a prompt; cancel it before forking at a turn"
            )
        try:
            outcome = await checkpoints.rewind(turn)
        except UnknownTurn as exc:
            raise InvalidParams(str(exc), data={"turn": turn}) from None
        if outcome.status == "conflict":
            raise InvalidRequest(
                "files were changed since by someone other than the agent: "
                + ", ".join(path for path, _ in outcome.conflicts),
                data=outcome.to_json(),
            )
        if source is not None:
            source.undo.tell(outcome, f"the files changed in turn {turn} and later (a fork at turn {turn})")
        return self.reopen(
            "fork", session_id, cwd, stored, extra_roots, mcp_servers, at_turn=(turn, checkpoints)
        )

    def _stored_log(
        self, how: Reopening, session_id: str, stored: LoadedLog | None
    ) -> tuple[SessionHeader, Iterable[Mapping[str, Any]]]:
        """The header and events a reopening starts from: what is stored, or (a fork of a session open
        here that has logged nothing yet) the open session's header and no events."""
        if stored is None:
            source = self.sessions.get(session_id) if how == "fork" else None
            if source is None:
                raise ResourceNotFound(
                    f"no stored session {quoted(session_id)}", data={"session": session_id}
                )
            return SessionHeader(source.id, source.cwd, source.roots, ""), []
        raw_header, log_events = stored
        try:
            return SessionHeader.from_json(raw_header), log_events
        except ValueError:
            raise InvalidParams(f"the log of session {session_id} has no readable header") from None

    def _copy_log(self, fork_id: str, header: SessionHeader, log_events: Sequence[Mapping[str, Any]]) -> None:
        """A fork's log: the source's header under the fork's id, then the source's events."""
        if self.recorder is not None:
            self.recorder.begin(fork_id, header.cwd, header.roots)
            for event in log_events:
                self.recorder.append(fork_id, event)

    def get(self, session_id: str) -> Session:
        """The open session `session_id`. Raises ResourceNotFound."""
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(f"unknown session {quoted(session_id)}", data={"session": session_id})
        return session

    async def close(self, session_id: str) -> None:
        """Stop the session's prompt as `cancel` would, then forget the session (its stored log stays, for
        session/load) and release its resources (background processes, scratch files). Raises
        ResourceNotFound as `get`."""
        session = self.get(session_id)
        await session.stop()
        await session.background.close()  # bg: each command's end logged before the log is released
        if session.mcp is not None:
            await session.mcp.aclose()
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
            if self.recorder is not None:
                self.recorder.end(session.id)
            # What its commands left running stops with it; its scratch files go.
            await self._resources.pop(session.id, session.resources).close()
        log.info("session %s closed", session.id)

    async def forget_session(self, session_id: str) -> None:
        """Before its log is deleted: close the session if it is open here (as `close`), else nothing."""
        if session_id in self.sessions:
            await self.close(session_id)

    def cancel(self, session_id: str) -> None:
        """Cancel the session's running prompt, if any (an unknown session is ignored: its prompt may have
        ended and the session been closed while the cancel was on its way)."""
        session = self.sessions.get(session_id)
        if session is None:
            log.debug("cancel for unknown session %r ignored", session_id)
            return
        session.cancel()

    async def shutdown(self, grace: float = 0.8) -> None:
        """Refuse new sessions, cancel every prompt, wait (up to `grace` s, then cancel outright) until
        every turn has stopped, stop what the sessions' commands left running (and delete their scratch
        files), then close the model backend."""
        self._closing = True
        async with anyio.create_task_group() as halting:
            for session in list(self.sessions.values()):
                halting.start_soon(session.halt, grace)
        servers = [s.mcp.aclose(grace=1.0) for s in self.sessions.values() if s.mcp is not None]
        if servers or self._stopping:
            # Before the processes below: a stdio server's group is stopped by its own connection.
            await asyncio.gather(*servers, *self._stopping, return_exceptions=True)
        resources, self._resources = list(self._resources.values()), {}
        if resources:
            # A shorter grace than a session's own close: the editor waits for us to exit.
            await asyncio.gather(*(r.close(grace=0.3) for r in resources), return_exceptions=True)
        # The commands stopped above end through their sessions: with checkpoints each end first takes a
        # snapshot, then is logged and its card completed; bounded, since the editor waits for us to exit.
        with anyio.move_on_after(SETTLE_ENDS_S):
            await asyncio.gather(*(s.background.settle() for s in self.sessions.values()))
        try:
            await self.backend.aclose()
        except Exception:
            log.exception("closing the model backend failed")


def _roots(cwd: str, extra_roots: Sequence[str]) -> tuple[str, ...]:
    """A session's roots: the cwd, then each extra root (duplicates dropped), normalized. Every root must
    be absolute (the path policy judges paths against them): raises InvalidParams otherwise."""
    roots: list[str] = []
    for root in (cwd, *extra_roots):
        if not os.path.isabs(root):
            raise InvalidParams(f"a session's directories must be absolute paths, got {quoted(root)}")
        root = os.path.normpath(root)
        if root not in roots:
            roots.append(root)
    return tuple(roots)


# How `SessionManager.reopen` brings a stored session back: `session/load`, `session/resume`, `session/fork`.
Reopening = Literal["load", "resume", "fork"]

FORK_PREFIX = "Fork: "
# How long the shutdown waits for the ends of the background commands it stopped to be logged and shown.
SETTLE_ENDS_S = 3.0
# Room for the prefix in a title (`clean_title` keeps 200 characters).
MAX_FORKED_TITLE = 200 - len(FORK_PREFIX)


class _Unseen:
    """A session as a replay host that sends nothing: a resumed or forked session gets the model's context
    back without the conversation being shown again."""

    def __init__(self, session: Session) -> None:
        self._session = session

    @property
    def id(self) -> str:
        return self._session.id

    @property
    def scope(self) -> ToolScope:
        return self._session.scope

    @property
    def wire(self) -> WireContext:
        return self._session.wire

    @property
    def history(self) -> list[Message]:
        return self._session.history

    @property
    def channel(self) -> ClientChannel:
        return self._session.channel

    def send(self, update: Update) -> None:
        return None
