"""Sessions: the face-independent core a face (ACP, LSP) drives through `SessionManager`.

A `SessionManager` belongs to one client connection. It owns the tool registry (tools, the permission gate
as first pre-execute listener and approval service, the result observer that completes cards and tells the
session's permissions a call settled), and the sessions, each strictly isolated: its own cwd and roots,
history, scripted-turn cursor, permission mode and rules (logged on each change, so `session/load` restores
them), its MCP servers (`acp_bridge.mcp`, started in the background, stopped with the session), and at
most one prompt in flight. A prompt runs as its own task (`Turn.run`, the session being its `TurnHost`);
`cancel()` fires the turn's signal; should the turn not stop within `CANCEL_GRACE` seconds (a tool ignoring
it), the prompt answers `cancelled` anyway and the stuck turn is detached (muted, its cards closed), so a
prompt always answers promptly and the session stays usable.
`close()` does the same, waits for the prompt to answer, then forgets the session. `shutdown()` cancels
everything and waits for it to stop. Each session also has its model controls (`config_options`: model,
thinking effort, usage meter) over the manager's model catalog, and its `Compactor` (`/compact` runs as
the prompt's work, a threshold compaction between a turn's steps).
everything and waits for it to stop. A session's durable events go to its `Recorder` as `session_log`
records; `session/load` replays them (`replay`), then restores the permission state they end with;
`session/resume` rebuilds the same history without sending anything. A session's title comes from its
first prompt (not logged: the log's first prompt gives it back) or from the user (`/title`, logged); the
client hears it, and the time of the last activity, in a `session_info_update` when a prompt ends. With
`CoreConfig.rules_dir` "always" answers last for the project (`rules_store`). An `ask_user` call reaches
the user through `questions.SessionQuestions`.

Must not: know the transport (only `ClientChannel`), or answer for another session's prompt.
"""

from __future__ import annotations

import asyncio
import logging
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel, PermissionOutcome, ToolCallUpdate, Update
from acp_bridge.client.fs import ClientFiles
from acp_bridge.client.questions import SessionQuestions
from acp_bridge.common.errors import (
    AuthRequired,
    InternalError,
    InvalidParams,
    InvalidRequest,
    ResourceNotFound,
    quoted,
)
from acp_bridge.common.settings import DEFAULT_CODE_MODE, CodeMode
from acp_bridge.common.settings import DEFAULT_MAX_STEPS as DEFAULT_MAX_STEPS
from acp_bridge.history.session_index import clean_title, title_from_prompt
from acp_bridge.history.session_log import (
    CallCommitted,
    CodeDispatched,
    LogEvent,
    PermissionsChanged,
    SessionHeader,
    SessionInfoChanged,
)
from acp_bridge.history.store import iso_time
from acp_bridge.mapping import WireContext
from acp_bridge.models import Message, ModelBackend, ModelError, Usage
from acp_bridge.models.catalog import CatalogSettings, ModelCatalog, Price
from acp_bridge.models.images import vision_by_name
from acp_bridge.permissions import permission_log, rules_store
from acp_bridge.permissions.permission_log import RecordedPermissions, permissions_record
from acp_bridge.permissions.policy import (
    MODES,
    AlwaysScopes,
    Decision,
    ModeId,
    PermissionGate,
    PolicyConfig,
    Rule,
    SessionPermissions,
)
from acp_bridge.permissions.rules_store import ProjectPermissions, ProjectRules
from acp_bridge.session import config_options
from acp_bridge.session.background import SessionBackground
from acp_bridge.session.compaction import DEFAULT_COMPACT_AT, Compactor
from acp_bridge.session.config_options import SessionControls
from acp_bridge.session.processes import SessionResources
from acp_bridge.session.prompt_blocks import Prompt, read_prompt
from acp_bridge.session.replay import replay
from acp_bridge.session.system_prompt import system_prompt
from acp_bridge.turn.loop import StopReason, Turn
from presenters.ask_user import QUESTIONS_SERVICE
from presenters.changes import COMMITS_SERVICE
from presenters.fs_access import remove_stale_temps_soon
from presenters.run_code import run_code_tool
from registry_core import (
    Agent,
    CancelSignal,
    CodeDispatchEvent,
    ToolDefinition,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolScope,
)

if TYPE_CHECKING:
    from acp_bridge.mcp.config import ServerList
    from acp_bridge.mcp.servers import SessionServers

log = logging.getLogger(__name__)

# After a cancel, how long the turn gets to stop (tools stop their processes: bash sends SIGTERM, then
# SIGKILL after 0.5 s) before the prompt answers `cancelled` anyway and the turn is abandoned. Cancelling
# the task a second time instead could interrupt a tool's own cleanup and leave a process behind.
CANCEL_GRACE = 0.75

# At shutdown, once a turn ignored its cancel for the grace `shutdown` gives, its task is cancelled
# outright and gets this long to unwind.
HARD_STOP_S = 0.2

# The slash commands every session understands (handled here, without the model).
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("permissions", "Show this session's permission mode and remembered rules, numbered", None),
    ("forget", "Forget the remembered 'always' answers: all of them, or number N of /permissions", "N"),
    ("mode", "Show or switch the permission mode: default, accept_edits, plan, full_access", "mode id"),
    ("compact", "Summarize the older conversation to free context", "what the summary should focus on"),
    ("title", "Rename this session (as session/list shows it)", "new title"),
    ("tasks", "List the background commands; /tasks kill ID stops one", "kill ID"),
)


LoadedLog = tuple[Mapping[str, Any], list[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """Deployment settings of the core (the CLI fills them)."""

    max_steps: int = DEFAULT_MAX_STEPS
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    # The configured model's context window in tokens, when the deployment knows it (the backend's
    # metadata and the built-in table come first, `models.catalog`): `usage_update` needs a truthful
    # `size`, so a model none of them describes reports no usage.
    context_window: int | None = None
    # MCP servers every session gets (`--mcp-config`), after those its client passes; and how long the
    # first prompt waits for each server to start.
    mcp_servers: ServerList | None = None
    mcp_startup_timeout: float = 30.0
    # `--models`: the models offered instead of the backend's list; `--price-in/--price-out`: the
    # configured model's price; `--compact-at`: the share of the window that triggers a compaction.
    model_list: tuple[str, ...] | None = None
    price: Price | None = None
    compact_at: float | None = DEFAULT_COMPACT_AT
    # Whether the model is given images: None = known from its name (`models.images.vision_by_name`).
    vision: bool | None = None
    # Where "always" answers are kept per project (`--remember project`); None: they last a session.
    rules_dir: str | None = None
    # Code Mode: "off" (no `run_code`), "on" (`run_code` beside the other tools), "only" (the model gets
    # `run_code` alone; every other tool is reached through a program, and a direct call is refused).
    code_mode: CodeMode = DEFAULT_CODE_MODE


class Recorder(Protocol):
    """Where a session's durable events go, in their stored form (`store.SessionStore` implements it)."""

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None: ...

    def append(self, session_id: str, event: Mapping[str, Any]) -> None: ...

    def end(self, session_id: str) -> None:
        """The session was closed: release what its log holds open (the log itself stays)."""
        ...


class Session:
    """One conversation. Created by `SessionManager.new_session`; the permission gate's `GateHost`, its
    turn's `TurnHost` and its replay's `ReplayHost`."""

    def __init__(
        self,
        manager: SessionManager,
        session_id: str,
        cwd: str,
        roots: tuple[str, ...],
    ) -> None:
        self.manager = manager
        self.id = session_id
        self.cwd = cwd
        self.roots = roots
        self.channel: ClientChannel = manager.channel
        self.backend: ModelBackend = manager.backend
        self.max_steps = manager.config.max_steps
        self.scope: ToolScope = manager.registry.scope()
        self.wire = WireContext(
            cwd=cwd, terminal_meta=self.channel.capabilities.terminal_meta, extra_roots=roots[1:]
        )
        services: dict[str, Any] = {QUESTIONS_SERVICE: SessionQuestions(self)}
        caps = self.channel.capabilities
        if caps.fs_read or caps.fs_write:
            services["fs"] = ClientFiles(self.channel, session_id)
        if manager.recording:
            services[COMMITS_SERVICE] = _CommitLog(self)
        # Background processes and scratch files: per session id, so a reloaded session keeps its own.
        self.resources = manager.resources_of(session_id)
        services.update(self.resources.services)
        # bg: the keeper of its background commands' cards (the turn's `background`).
        self.background = SessionBackground(self, self.resources.background)
        self.agent = Agent(id=session_id, cwd=cwd, roots=roots, services=services)
        self._permissions: RecordedPermissions
        if manager.project_rules is not None:
            self._permissions = ProjectPermissions(
                manager.config.policy, cwd, roots, self._record_permissions, manager.project_rules
            )
        else:
            self._permissions = RecordedPermissions(
                manager.config.policy, cwd, roots, on_change=self._record_permissions
            )
        self._approval_lock = asyncio.Lock()
        self.controls = SessionControls(manager.catalog)
        self.compactor = Compactor(self, manager.config.compact_at)
        # What `session/list` shows: a title (from the first prompt, or set by the user) and whether the
        # client has been told it yet (`session_info_update`).
        self.title: str | None = None
        self.title_source: str | None = None
        self._title_told = True
        self.history: list[Message] = []
        self.turn_index = 0
        self.turn: Turn | None = None
        self._task: asyncio.Task[StopReason] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        self._abandon: asyncio.Future[None] | None = None
        self.mcp: SessionServers | None = None  # the session's MCP servers, when it has any

    # --- GateHost ---------------------------------------------------------------------------------

    @property
    def permissions(self) -> SessionPermissions:
        return self._permissions

    @property
    def approval_lock(self) -> asyncio.Lock:
        return self._approval_lock

    def model_schemas(self) -> list[dict[str, Any]]:
        schemas = self.scope.schemas()
        if self.manager.config.code_mode != "only":
            return schemas
        return [schema for schema in schemas if self.manager.registry.is_transport(schema["name"])]

    def decide(self, execution: ToolExecution) -> Decision:
        if self.turn is not None:
            return self.turn.decide(execution, self._permissions)
        return self._permissions.decide(execution.name, execution.arguments)

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        if self.turn is not None:
            self.turn.on_decision(execution, decision)

    async def ask_user(
        self, execution: ToolExecution, reason: str | None, scopes: AlwaysScopes
    ) -> PermissionOutcome:
        turn = self.turn
        if turn is not None:
            tool_call = await turn.permission_tool_call(execution, reason)
        else:
            tool_call = mapping.permission_tool_call(
                self.wire, execution.call_id, execution.name, execution.arguments, None, reason
            )
        options = mapping.permission_options(
            scopes.allow or scopes.reject,
            offer_always=scopes.allow is not None,
            reject_label=scopes.reject,
            server_label=scopes.server,
            remembered_for=scopes.remembered_for,
        )
        return await self.channel.request_permission(self.id, tool_call, options)

    def cancel_turn(self, why: str) -> None:
        log.info("session %s: cancelling the turn (%s)", self.id, why)
        self.cancel()

    async def question_card(self, execution: ToolExecution) -> ToolCallUpdate:
        """`QuestionHost`: an `ask_user` call's card, as the `toolCall` of a permission request."""
        turn = self.turn
        if turn is not None:
            return await turn.permission_tool_call(execution, None)
        return mapping.permission_tool_call(
            self.wire, execution.call_id, execution.name, execution.arguments, None, None
        )

    # --- what session/list shows ------------------------------------------------------------------

    def set_title(self, title: str, *, source: str = "user", tell: bool = True) -> None:
        """The user (or a fork) named the session: logged (the list shows it, a reload keeps it) and told
        to the client, now or (`tell` False) with the next `tell_info`."""
        self.title, self.title_source = title, source
        self.record(SessionInfoChanged(title=title, title_source=source))
        self._title_told = False
        if tell:
            self.tell_info()

    def tell_info(self, *, activity: bool = False) -> None:
        """Send `session_info_update`: the title when the client has not been told it, and the time of
        the last activity when `activity` (a prompt just ended)."""
        title = self.title if not self._title_told else None
        if title is None and not activity:
            return
        self._title_told = True
        now = iso_time(datetime.now(UTC).timestamp()) if activity else None
        self.send(mapping.session_info_update(title=title, updated_at=now))

    def restore_info(self, info: SessionInfoChanged, first_prompt: str | None) -> None:
        """Take back the title a loaded log ends with, else its first prompt's (the client is told with
        the next info update)."""
        if info.title is not None:
            self.title, self.title_source = info.title, info.title_source
        elif first_prompt is not None:
            self.title, self.title_source = title_from_prompt(first_prompt), "prompt"
        self._title_told = self.title is None

    # --- durable events ---------------------------------------------------------------------------

    def record(self, event: LogEvent) -> None:
        recorder = self.manager.recorder
        if recorder is not None:
            recorder.append(self.id, event.to_json())

    def _record_permissions(self) -> None:
        """The user changed the mode or the remembered rules: log the whole state (the last one wins)."""
        if self.manager.recording:
            self.record(permissions_record(self._permissions))

    def restore_permissions(self, stored: PermissionsChanged, *, announce: bool = True) -> None:
        """Apply the permission state a loaded log ended with, announce the mode, and tell the user what
        came back that a new session would not have (`announce` False: a resumed session, which shows
        no conversation to add a note to; its mode is in the response)."""
        restored = permission_log.restore(self._permissions, stored)
        if isinstance(self._permissions, ProjectPermissions):
            self._permissions.adopt_project_rules()
        if not announce:
            return
        if restored.mode is not None:
            self.send(mapping.mode_update(restored.mode))
        fresh_mode = self.manager.config.policy.mode
        if restored.rules or restored.dropped or restored.mode not in (None, fresh_mode):
            # A paragraph of its own: the client may join it to the agent's last replayed words.
            self.send(mapping.agent_message_chunk("\n\n" + restored.note()))

    # --- prompts ----------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        return self._task is not None

    def send(self, update: Update) -> None:
        self.channel.send_update(self.id, update)

    async def prompt(self, blocks: object) -> StopReason:
        """Run one prompt to its stop reason. Raises InvalidRequest (one already runs), InvalidParams (bad
        content), AuthRequired / InternalError (the model failed; the message says how)."""
        if self._task is not None:
            raise InvalidRequest(
                f"session {self.id} is already running a prompt: wait for its response, or send "
                "session/cancel first"
            )
        prompt = read_prompt(blocks)
        text = prompt.text
        compact_focus = _compact_command(text) if not prompt.images else None
        if text.startswith("/") and compact_focus is None and not prompt.images:
            handled = self._slash_command(text)
            if handled:
                self.tell_info()
                return "end_turn"
        vision = self.vision
        if prompt.images and not vision:
            raise InvalidParams(
                f"This prompt has {len(prompt.images)} image(s), but the model {self.backend.name} cannot "
                "see images: remove them, or start the bridge with --vision if this model accepts them.",
                data={"images": len(prompt.images), "model": self.backend.name},
            )
        if self.title is None:
            # Not logged: the log's first prompt gives it back (`session_index`, `restore_info`). Told
            # when the prompt ends, with its time, so the client's list updates once per prompt.
            self.title, self.title_source = title_from_prompt(text), "prompt"
            self._title_told = self.title is None
        try:
            return await self._run_turn(prompt, vision, compact_focus)
        finally:
            self.tell_info(activity=True)

    @property
    def vision(self) -> bool:
        """Whether this session's model is given images (`--vision`, else known from its name)."""
        configured = self.manager.config.vision
        return configured if configured is not None else vision_by_name(self.backend.name)

    async def _run_turn(self, prompt: Prompt, vision: bool, compact_focus: str | None) -> StopReason:
        self.compactor.suppressed = False  # a new prompt may try a failed threshold compaction again
        turn = Turn(
            self,
            self.history,
            system_prompt=system_prompt(self.cwd, self.roots),
            turn_index=self.turn_index,
            max_steps=self.max_steps,
            vision=vision,
        )
        self.turn = turn
        # The turn is a plain task, not a child of an anyio task group, on purpose: a task group cannot
        # exit before its children end, so the prompt could not answer until the turn stopped. A turn
        # whose tool ignores the cancel must be left behind instead (`_give_up`, then `Turn.detach`): the
        # prompt answers `cancelled` within `CANCEL_GRACE` and the session takes the next prompt while
        # the stuck task ends in the background. Outliving its parent is what that task is for.
        work = (
            turn.run(prompt.text, prompt.images, prompt.blocks)
            if compact_focus is None
            else turn.run_compaction(compact_focus or None)
        )
        task = asyncio.ensure_future(work)
        self._task = task
        abandon = self._abandon = asyncio.get_running_loop().create_future()
        task.add_done_callback(self._turn_finished)
        try:
            await asyncio.wait({task, abandon}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            # This prompt's handler is going away (the connection is shutting down): stop the turn too.
            turn.cancel()
            task.cancel()
            raise
        if compact_focus is None:
            self.turn_index += 1  # `/compact` is no prompt of the model's: the script's turns stay in step
        if not task.done():
            log.warning("session %s: abandoning a turn that ignored its cancellation", self.id)
            turn.detach()
            self._release(task)
            return "cancelled"
        if task.cancelled():
            return "cancelled"
        exc = task.exception()
        if exc is None:
            return task.result()
        if isinstance(exc, ModelError):
            if turn.cancelled:
                return "cancelled"
            raise _model_failure(exc) from exc
        log.error("session %s: the turn failed", self.id, exc_info=exc)
        raise InternalError(f"The turn failed: {type(exc).__name__}: {exc}") from exc

    def _turn_finished(self, task: asyncio.Task[StopReason]) -> None:
        if self._task is task:
            self._release(task)
        elif not task.cancelled() and task.exception() is not None:
            log.warning("an abandoned turn of session %s ended with %r", self.id, task.exception())

    def _release(self, task: asyncio.Task[StopReason]) -> None:
        if self._task is not task:
            return
        self._task = None
        self.turn = None
        self._abandon = None
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None

    def cancel(self) -> None:
        """Cancel the running prompt, if any (model stream, tools, pending questions)."""
        turn, task = self.turn, self._task
        if turn is None or task is None:
            return
        turn.cancel()
        if self._watchdog is None and not task.done():
            self._watchdog = asyncio.get_running_loop().call_later(CANCEL_GRACE, self._give_up, task)

    def _give_up(self, task: asyncio.Task[StopReason]) -> None:
        self._watchdog = None
        abandon = self._abandon
        if not task.done() and self._task is task and abandon is not None and not abandon.done():
            abandon.set_result(None)

    async def stop(self) -> None:
        """Cancel the running prompt, if any, and wait until it answered: the turn stopped, or it ignored
        the cancel for `CANCEL_GRACE` s and was abandoned (detached by `prompt`)."""
        task, abandon = self._task, self._abandon
        self.cancel()
        if task is not None and abandon is not None:
            stopped: set[asyncio.Future[Any]] = {task, abandon}
            await asyncio.wait(stopped, return_when=asyncio.FIRST_COMPLETED)

    async def wait_idle(self) -> None:
        task = self._task
        if task is not None:
            await asyncio.wait({task})

    async def halt(self, grace: float) -> None:
        """Stop the running turn for good (the bridge is shutting down): cancel it, wait up to `grace`
        seconds for its task to end (abandoned or not), then cancel the task outright, which may cut a
        tool's cleanup short, and wait `HARD_STOP_S` more."""
        task = self._task
        if task is None:
            return
        self.cancel()
        with anyio.move_on_after(grace):
            await asyncio.wait({task})
        if not task.done():
            task.cancel()
            with anyio.move_on_after(HARD_STOP_S):
                await asyncio.wait({task})

    def on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """A call of this session settled (nested ones too: any call may have changed what a later
        permission decision sees on disk); a top-level one completes its card."""
        self._permissions.settled(execution.name)
        turn = self.turn
        if turn is not None and execution.parent is None:
            turn.on_result(execution, result)

    def on_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> None:
        """A program's nested call settled (`execution` is the program's call): its turn logs it and
        completes its card; without a turn (a program run outside one) it is only logged."""
        turn = self.turn
        if turn is None:
            self.record(CodeDispatched(event))
        elif not turn.on_code_dispatch(execution, event):
            log.debug("session %s: code dispatch %s of no open card", self.id, event.call_id)

    def set_mode(self, mode_id: str) -> None:
        if mode_id not in MODES:
            raise InvalidParams(f"unknown mode {quoted(mode_id)}; available: {', '.join(MODES)}")
        mode: ModeId = MODES[mode_id].id
        changed = mode != self._permissions.mode
        self._permissions.mode = mode
        if changed:
            self._record_permissions()
        self.send(mapping.mode_update(mode))
        self.send(self.controls.update(mode))

    # --- config options (model, thinking effort) and usage -----------------------------------------

    def config_options(self) -> list[mapping.ConfigSelect]:
        """ACP `configOptions`: the mode, the model and (for a model that takes one) the thinking effort."""
        return self.controls.options(self._permissions.mode)

    def set_config_option(self, config_id: object, value: object) -> list[mapping.ConfigSelect]:
        """Change one option (`session/set_config_option`, the LSP face's command); the client is sent a
        `config_option_update`, and the full set is returned. Raises InvalidParams for an unknown option
        or value."""
        if config_id == config_options.MODE:
            if not isinstance(value, str):
                raise InvalidParams("value must be a mode id string")
            self.set_mode(value)
            return self.config_options()
        if config_id == config_options.MODEL:
            self.controls.set_model(value)
        elif config_id == config_options.THOUGHT_LEVEL and self.controls.info.efforts:
            self.controls.set_thought_level(value)
        else:
            options = ", ".join(self.controls.ids())
            raise InvalidParams(f"unknown config option {quoted(config_id)}; this session has: {options}")
        if self.manager.recording:
            self.record(self.controls.record())
        self.send(self.controls.update(self._permissions.mode))
        return self.config_options()

    def model_choice(self) -> tuple[str | None, str | None]:
        return self.controls.step_choice()

    def report_usage(self, usage: Usage) -> Update | None:
        """A response's usage: the meter counts it (logged), and the client gets a `usage_update` when the
        selected model's window is known (a guessed `size` would mislead its "context full" gauge)."""
        meter, info = self.controls.meter, self.controls.info
        meter.add(usage, info)
        if self.manager.recording:
            self.record(meter.record())
        return meter.update(info)

    async def compact(
        self, history: list[Message], signal: CancelSignal, *, focus: str | None = None, forced: bool = False
    ) -> None:
        """`TurnHost.compact`: `/compact` always; otherwise once the context reached `--compact-at`. A failed
        threshold compaction is reported and the turn goes on with the full context."""
        if forced:
            await self.compactor.run(history, signal, trigger="command", focus=focus)
            return
        if not self.compactor.due():
            return
        try:
            await self.compactor.run(history, signal, trigger="threshold")
        except ModelError as exc:
            log.warning("session %s: compaction failed: %s", self.id, exc.message)

    def _slash_command(self, text: str) -> bool:
        name, _, rest = text[1:].partition(" ")
        name, rest = name.strip(), rest.strip()
        if name == "permissions":
            self.send(mapping.agent_message_chunk(rules_store.describe(self._permissions)))
            return True
        if name == "tasks":  # bg
            self.send(mapping.agent_message_chunk(self.background.tasks(rest)))
            return True
        if name == "forget":
            self.send(mapping.agent_message_chunk(self._forget(rest)))
            return True
        if name == "title":
            try:
                self.set_title(clean_title(rest))
            except ValueError:
                self.send(mapping.agent_message_chunk("Usage: `/title NEW TITLE`."))
                return True
            self.send(mapping.agent_message_chunk(f"Session renamed: {self.title}"))
            return True
        if name == "mode":
            if not rest:
                self.send(mapping.agent_message_chunk(rules_store.describe(self._permissions)))
                return True
            if rest not in MODES:
                self.send(mapping.agent_message_chunk(f"Unknown mode `{rest}`. Modes: {', '.join(MODES)}."))
                return True
            self.set_mode(rest)
            self.send(
                mapping.agent_message_chunk(f"Mode is now **{MODES[rest].name}**: {MODES[rest].description}")
            )
            return True
        return False

    def _forget(self, which: str) -> str:
        """`/forget` (every rule) or `/forget N` (the Nth of `/permissions`): what the user is told."""
        if which and not which.isdigit():
            return "Usage: `/forget` (every rule) or `/forget N` (rule N of `/permissions`)."
        forgotten = self.forget_rules(int(which) if which else None)
        if not which:
            return f"Forgot {len(forgotten)} remembered rule{'s' if len(forgotten) != 1 else ''}."
        if not forgotten:
            return f"There is no rule {which}: `/permissions` lists them."
        return f"Forgot rule {which}: {forgotten[0].describe()}."

    def forget_rules(self, number: int | None = None) -> list[Rule]:
        """Forget rule `number` (1-based, as `/permissions` numbers them), or every rule; returns what was
        forgotten (nothing for a number no rule has)."""
        if number is None:
            every = list(self._permissions.rules)
            self._permissions.forget()
            return every
        rule = self._permissions.revoke(number - 1)
        return [rule] if rule is not None else []

    def available_commands_update(self) -> Update:
        commands = COMMANDS if self.mcp is None else (*COMMANDS, *self.mcp.commands())
        return mapping.available_commands(commands)

    def commands_changed(self) -> None:
        """The MCP servers' prompts changed (a server started, or its list changed): announce them."""
        self.send(self.available_commands_update())


class _CommitLog:
    """`agent.services["commits"]` (a `presenters.changes.CommitJournal`): a file tool's change, logged the
    moment it is made. Without it, a bridge killed between the write and the call's result would replay
    a change that is on disk as a call that did not finish."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def committed(self, call_id: str, tool: str, summary: str, meta: Mapping[str, Any]) -> None:
        self._session.record(CallCommitted(call_id, tool, summary, meta))


def _compact_command(text: str) -> str | None:
    """The focus of a `/compact [focus]` prompt ("" without one), or None for any other prompt."""
    name, _, rest = text.partition(" ")
    return rest.strip() if name.strip() == "/compact" else None


def _model_failure(exc: ModelError) -> Exception:
    data = {"kind": exc.kind, "status": exc.status}
    if exc.kind == "auth":
        return AuthRequired(exc.message, data=data)
    return InternalError(f"The model failed: {exc.message}", data=data)


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
        for tool in tools:
            self.registry.register(tool)
        if self.config.code_mode != "off":
            self.registry.register(run_code_tool(), transport=True)
        if self.config.code_mode == "only":
            self.registry.add_guard(self._through_code_only)

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

    def _start_mcp(self, session: Session, servers: object) -> None:
        """Start the session's MCP servers in the background: the ones its client passed, then the
        configured ones. Loads the MCP code only when there is a server."""
        configured = self.config.mcp_servers
        if not servers and not configured:
            return
        from acp_bridge.mcp import merge, parse_any
        from acp_bridge.mcp.config import ServerList as Servers
        from acp_bridge.mcp.servers import SessionServers

        chosen = merge(parse_any(servers), configured or Servers())
        if chosen:
            session.mcp = SessionServers(session, chosen, startup_timeout=self.config.mcp_startup_timeout)
            session.mcp.start()

    def new_session(
        self, cwd: object, additional_directories: object = None, mcp_servers: object = None
    ) -> Session:
        """Raises InvalidParams for a relative or missing cwd (or additional directory), InvalidRequest
        while shutting down."""
        if self._closing:
            raise InvalidRequest("the bridge is shutting down")
        if not isinstance(cwd, str) or not cwd:
            raise InvalidParams("cwd is required: the absolute path of the session's working directory")
        if not os.path.isabs(cwd):
            raise InvalidParams(f"cwd must be an absolute path, got {quoted(cwd)}")
        roots = _roots(cwd, additional_directories)
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

    def load_session(
        self,
        session_id: object,
        cwd: object,
        events: LoadedLog,
        additional_directories: object = None,
        mcp_servers: object = None,
        *,
        replay_updates: bool = True,
    ) -> Session:
        """Reopen a stored session: check the cwd, rebuild its history and (`replay_updates`, for
        `session/load`) replay it to the client as updates, through the same mapping as live; without
        (`session/resume`) the model's context comes back and the client is sent nothing. `events` is the
        stored (header, events). Its roots are the cwd and `additional_directories` (ACP: the complete
        list for the reopened session; none when omitted). Raises InvalidParams (relative or different
        cwd) or InvalidRequest (the session is open and busy)."""
        if not isinstance(session_id, str):
            raise InvalidParams("sessionId must be a string")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise InvalidParams(f"cwd must be an absolute path, got {quoted(cwd)}")
        raw_header, log_events = events
        try:
            header = SessionHeader.from_json(raw_header)
        except ValueError:
            raise InvalidParams(f"the log of session {session_id} has no readable header") from None
        stored_cwd = os.path.normpath(header.cwd)
        if os.path.normpath(cwd) != stored_cwd:
            raise InvalidParams(f"session {session_id} belongs to {stored_cwd}, not {cwd}")
        roots = _roots(stored_cwd, additional_directories)
        existing = self.sessions.get(session_id)
        if existing is not None and existing.busy:
            raise InvalidRequest(f"session {session_id} is running a prompt; cancel it before loading it")
        session = Session(self, session_id, stored_cwd, roots)
        self.sessions[session_id] = session
        if existing is not None and existing.mcp is not None:
            stopping = asyncio.ensure_future(existing.mcp.aclose())
            self._stopping.add(stopping)
            stopping.add_done_callback(self._stopping.discard)
        remove_stale_temps_soon(session.roots)  # a killed writer's temporary files (see fs_access)
        replayed = replay(session if replay_updates else _Unseen(session), log_events)
        session.background.reopen(list(replayed.background), visible=replay_updates)  # bg
        session.turn_index = replayed.prompts
        session.compactor.count = replayed.compactions
        if replayed.permissions is not None:
            session.restore_permissions(replayed.permissions, announce=replay_updates)
        elif isinstance(session.permissions, ProjectPermissions):
            session.permissions.adopt_project_rules()
        session.restore_info(replayed.info, replayed.first_prompt)
        if roots != (replayed.info.roots or header.roots):
            session.record(SessionInfoChanged(roots=roots))  # what session/list reports from now on
        self._start_mcp(session, mcp_servers)
        controls = session.controls
        note = controls.restore(replayed.config)
        if note is not None and replay_updates:
            session.send(mapping.agent_message_chunk("\n\n" + note))
        controls.meter.restore(replayed.usage, context_known=replayed.usage_current)
        usage = controls.meter.update(controls.info)
        if usage is not None:
            session.send(usage)  # the gauge as the session left it
        return session

    def fork_session(
        self,
        source_id: str,
        cwd: object,
        events: LoadedLog | None,
        additional_directories: object = None,
        mcp_servers: object = None,
    ) -> Session:
        """A new session that starts from session `source_id`'s conversation as logged so far (`events`;
        None for a session open here that has logged nothing yet): its history, mode, remembered rules
        and model settings, and a title that says it is a fork ("Fork: " and the source's). The source
        is not touched and may be running a prompt (a fork of a turn under way ends where the log does,
        its unanswered calls answered as having no result, as a reload does). The fork's log begins
        with a copy of the source's events, so the fork can be listed, loaded and forked like any
        session. Raises InvalidParams (a relative cwd, or not the source's) or ResourceNotFound (no such
        session)."""
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise InvalidParams(f"cwd must be an absolute path, got {quoted(cwd)}")
        if events is None:
            source = self.sessions.get(source_id)
            if source is None:
                raise ResourceNotFound(f"no session {quoted(source_id)}", data={"sessionId": source_id})
            header = SessionHeader(source.id, source.cwd, source.roots, "")
            events = (header.to_json(), [])
        raw_header, log_events = events
        try:
            header = SessionHeader.from_json(raw_header)
        except ValueError:
            raise InvalidParams(f"the log of session {source_id} has no readable header") from None
        if os.path.normpath(cwd) != os.path.normpath(header.cwd):
            raise InvalidParams(f"session {source_id} belongs to {header.cwd}, not {cwd}")
        fork_id = self._new_id()
        if self.recorder is not None:
            self.recorder.begin(fork_id, header.cwd, header.roots)
            for event in log_events:
                self.recorder.append(fork_id, event)
        fork_header = SessionHeader(fork_id, header.cwd, header.roots, header.created_at)
        session = self.load_session(
            fork_id,
            cwd,
            (fork_header.to_json(), log_events),
            additional_directories,
            mcp_servers,
            replay_updates=False,
        )
        # Told with the client's next `tell_info` (after the answer). Marked first, so a list that cuts a
        # long title still tells the two apart.
        base = clean_title(session.title or "Untitled session")
        session.set_title(f"{FORK_PREFIX}{base[:MAX_FORKED_TITLE]}", source="fork", tell=False)
        return session

    def get(self, session_id: object) -> Session:
        if not isinstance(session_id, str):
            raise InvalidParams("sessionId must be a string")
        session = self.sessions.get(session_id)
        if session is None:
            raise ResourceNotFound(f"unknown session {quoted(session_id)}", data={"sessionId": session_id})
        return session

    async def close(self, session_id: object) -> None:
        """Stop the session's prompt as `cancel` would, then forget the session (its stored log stays, for
        session/load) and release its resources (background processes, scratch files). Raises
        InvalidParams / ResourceNotFound as `get`."""
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

    def cancel(self, session_id: object) -> None:
        session = self.sessions.get(session_id) if isinstance(session_id, str) else None
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
        try:
            await self.backend.aclose()
        except Exception:
            log.exception("closing the model backend failed")


def _roots(cwd: str, additional_directories: object) -> tuple[str, ...]:
    """The session's roots: the cwd, then each additional directory (absolute; duplicates dropped).
    Raises InvalidParams for a malformed list."""
    roots = [os.path.normpath(cwd)]
    if additional_directories is None:
        return tuple(roots)
    if not isinstance(additional_directories, list):
        raise InvalidParams("additionalDirectories must be a list of absolute paths")
    for i, extra in enumerate(additional_directories):
        if not isinstance(extra, str) or not os.path.isabs(extra):
            raise InvalidParams(f"additionalDirectories[{i}] must be an absolute path, got {quoted(extra)}")
        root = os.path.normpath(extra)
        if root not in roots:
            roots.append(root)
    return tuple(roots)


FORK_PREFIX = "Fork: "
# Room for the prefix in a title (`clean_title` keeps 200 characters).
MAX_FORKED_TITLE = 200 - len(FORK_PREFIX)


class _Unseen:
    """A session as a replay host that sends nothing: `session/resume` rebuilds the model's context
    without showing the conversation again."""

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
