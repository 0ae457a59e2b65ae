"""One session: a conversation, strictly isolated from the others of its manager, which composes the parts
that each do one job:

- its `PromptSlot` (`prompt_slot`): at most one prompt in flight, its turn a task of its own, cancelled
  promptly even when a tool ignores the cancel;
- its `SessionApprovals` (`approvals`): mode and remembered rules (logged on each change, so `session/load`
  restores them), and the permission questions and `ask_user` questions it puts to the user;
- its `SlashCommands` (`commands`) and its `SessionTitle` (`title`);
- its model controls (`config_options`: model, thinking effort, auto-compaction, usage meter) and its
  `Compactor` (`/compact` runs as the prompt's work, a threshold compaction between a turn's steps);
- its MCP servers (`mcp`, started by the manager, stopped with the session) and its background processes
  and scratch files (`processes.SessionResources`).

The session itself reads a prompt and runs it as a `Turn` (it is the turn's `TurnHost`, its replay's
`ReplayHost`, its compactor's `CompactionHost`, the gate's `GateHost` and its servers' `McpHost`), routes
the registry's per-call callbacks (decision, result, code dispatch) to the running turn, and logs its
durable events to its manager's `Recorder`.

Must not: know the transport (only `ClientChannel`), import its manager (it knows it as a `SessionOwner`),
or answer for another session's prompt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from acp_bridge import mapping
from acp_bridge.checkpoints.service import CHECKPOINTS_SERVICE, session_checkpoints
from acp_bridge.client.channel import ClientChannel, PermissionOutcome, Update
from acp_bridge.client.fs import ClientFiles
from acp_bridge.client.questions import SessionQuestions
from acp_bridge.common.errors import InvalidParams, InvalidRequest, quoted
from acp_bridge.history.session_log import (
    CallCommitted,
    CodeDispatched,
    LogEvent,
    PermissionsChanged,
    SessionInfoChanged,
)
from acp_bridge.mapping import WireContext
from acp_bridge.models import Message, ModelBackend, ModelError, Usage
from acp_bridge.models.catalog import ModelCatalog
from acp_bridge.models.images import vision_by_name
from acp_bridge.permissions.gate import AlwaysScopes
from acp_bridge.permissions.policy import Decision, SessionPermissions
from acp_bridge.permissions.rules_store import ProjectRules
from acp_bridge.permissions.scope import Rule
from acp_bridge.session import config_options, init_command
from acp_bridge.session.approvals import SessionApprovals
from acp_bridge.session.background import SessionBackground
from acp_bridge.session.commands import SlashCommands, compact_command
from acp_bridge.session.compaction import Compactor
from acp_bridge.session.config_options import SessionControls
from acp_bridge.session.core_config import CoreConfig
from acp_bridge.session.processes import SessionResources
from acp_bridge.session.prompt_blocks import Prompt, read_prompt
from acp_bridge.session.prompt_context import INSTRUCTIONS_SERVICE, SessionContext
from acp_bridge.session.prompt_slot import PromptSlot
from acp_bridge.session.rewind import SessionRewind, rewind_argument
from acp_bridge.session.steering import PromptAnswer, SessionSteering
from acp_bridge.session.title import SessionTitle
from acp_bridge.turn.loop import StopReason, Turn
from acp_bridge.turn.subagent import SessionSubagents
from presenters.ask_user import QUESTIONS_SERVICE
from presenters.changes import COMMITS_SERVICE
from presenters.task import SUBAGENTS_SERVICE
from registry_core import (
    Agent,
    CancelSignal,
    CodeDispatchEvent,
    ToolExecution,
    ToolExecutionResult,
    ToolRegistry,
    ToolResult,
    ToolScope,
)

if TYPE_CHECKING:
    from acp_bridge.mcp.servers import SessionServers

log = logging.getLogger(__name__)


class Recorder(Protocol):
    """Where a session's durable events go, in their stored form (`store.SessionStore` implements it)."""

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None: ...

    def append(self, session_id: str, event: Mapping[str, Any]) -> None: ...

    def end(self, session_id: str) -> None:
        """The session was closed: release what its log holds open (the log itself stays)."""
        ...


class SessionOwner(Protocol):
    """What a session uses of the manager that made it (`manager.SessionManager` is one): the connection's
    client and model, the deployment's settings, the shared registry and model catalog, the log, and
    the session's processes and scratch files."""

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def backend(self) -> ModelBackend: ...

    @property
    def config(self) -> CoreConfig: ...

    @property
    def registry(self) -> ToolRegistry: ...

    @property
    def catalog(self) -> ModelCatalog: ...

    @property
    def recorder(self) -> Recorder | None: ...

    @property
    def recording(self) -> bool: ...

    @property
    def project_rules(self) -> ProjectRules | None: ...

    def resources_of(self, session_id: str) -> SessionResources: ...


class Session:
    """One conversation. Created by `SessionManager.new_session` (see the module docstring)."""

    def __init__(self, manager: SessionOwner, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
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
        self.slot = PromptSlot(session_id)
        # steer: prompts sent while a turn runs (steering.py); the turn's `steering` inbox.
        self.steering = SessionSteering(self, manager.config.steer_late)
        self.approvals = SessionApprovals(
            self, self.slot, manager.config.policy, manager.project_rules, recording=manager.recording
        )
        # Read for every call (`decide`, `on_result`) and by the gate: plain attributes, not forwarding
        # properties.
        self.permissions: SessionPermissions = self.approvals.permissions
        self.approval_lock: asyncio.Lock = self.approvals.approval_lock
        services: dict[str, Any] = {QUESTIONS_SERVICE: SessionQuestions(self.approvals)}
        caps = self.channel.capabilities
        if caps.fs_read or caps.fs_write:
            services["fs"] = ClientFiles(self.channel, session_id)
        if manager.recording:
            services[COMMITS_SERVICE] = _CommitLog(self)
        # Background processes and scratch files: per session id, so a reloaded session keeps its own.
        self.resources = manager.resources_of(session_id)
        services.update(self.resources.services)
        # The keeper of its background commands' cards (the turn's `background`).
        changes = self._background_changes if manager.config.checkpoints_dir is not None else None
        self.background = SessionBackground(self, self.resources.background, changes=changes)
        # prompt glue: the system prompt and folder instructions of this session (prompt_context).
        self.context = SessionContext(self)
        services[INSTRUCTIONS_SERVICE] = self.context
        services[SUBAGENTS_SERVICE] = SessionSubagents(self)  # the `task` tool's child loops
        self.agent = Agent(id=session_id, cwd=cwd, roots=roots, services=services)
        self.controls = SessionControls(manager.catalog, boolean_options=caps.config_boolean)
        self.compactor = Compactor(self, manager.config.compact_at)
        self.commands = SlashCommands(self)
        self.title_info = SessionTitle(self)  # what `session/list` shows
        self.history: list[Message] = []
        self.turn_index = 0
        self.mcp: SessionServers | None = None  # the session's MCP servers, when it has any
        # Checkpoints of its roots and undo (acp_bridge.checkpoints, rewind.py); None without a store.
        self.checkpoints = session_checkpoints(manager.config.checkpoints_dir, session_id, roots, cwd)
        if self.checkpoints is not None:
            services[CHECKPOINTS_SERVICE] = self.checkpoints
        self.undo = SessionRewind(self)

    async def _background_changes(self, call_id: str, result: ToolResult) -> ToolResult:
        """checkpoints: a background command's end, with the files it changed by then."""
        if self.checkpoints is None:
            return result
        return await self.checkpoints.after_background(call_id, result)

    @property
    def turn(self) -> Turn | None:
        """The running prompt's turn, None when idle."""
        return self.slot.turn

    @property
    def busy(self) -> bool:
        return self.slot.busy

    @property
    def title(self) -> str | None:
        return self.title_info.title

    # --- the registry's calls of this session (GateHost and result observers) ----------------------

    def model_schemas(self) -> list[dict[str, Any]]:
        schemas = self.scope.schemas()
        if self.manager.config.code_mode != "only":
            return schemas
        return [schema for schema in schemas if self.manager.registry.is_transport(schema["name"])]

    def decide(self, execution: ToolExecution) -> Decision:
        turn = self.slot.turn
        if turn is not None:
            return turn.decide(execution, self.permissions)
        return self.permissions.decide(execution.name, execution.arguments)

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        turn = self.slot.turn
        if turn is not None:
            turn.on_decision(execution, decision)

    async def ask_user(
        self, execution: ToolExecution, reason: str | None, scopes: AlwaysScopes
    ) -> PermissionOutcome:
        return await self.approvals.ask_user(execution, reason, scopes)

    def cancel_turn(self, why: str) -> None:
        log.info("session %s: cancelling the turn (%s)", self.id, why)
        self.cancel()

    def on_result(self, execution: ToolExecution, result: ToolExecutionResult) -> None:
        """A call of this session settled (nested ones too: any call may have changed what a later
        permission decision sees on disk); a top-level one completes its card."""
        self.permissions.settled(execution.name)
        turn = self.slot.turn
        if turn is not None and execution.parent is None:
            turn.on_result(execution, result)

    def on_code_dispatch(self, execution: ToolExecution, event: CodeDispatchEvent) -> None:
        """A program's nested call settled (`execution` is the program's call): its turn logs it and
        completes its card; without a turn (a program run outside one) it is only logged."""
        turn = self.slot.turn
        if turn is None:
            self.record(CodeDispatched(event))
        elif not turn.on_code_dispatch(execution, event):
            log.debug("session %s: code dispatch %s of no open card", self.id, event.call_id)

    # --- durable events and updates ---------------------------------------------------------------

    def record(self, event: LogEvent) -> None:
        recorder = self.manager.recorder
        if recorder is not None:
            recorder.append(self.id, event.to_json())

    def send(self, update: Update) -> None:
        self.channel.send_update(self.id, update)

    # --- prompts ----------------------------------------------------------------------------------

    async def submit(self, blocks: object, message_id: str | None = None) -> PromptAnswer:
        """A `session/prompt`: a prompt, or, while one runs, a steer that joins it (steering.py; its echo
        carries `message_id`, the client's id for it, when given). Raises as `prompt` does, but never for
        a prompt already running."""
        return await self.steering.submit(blocks, message_id)

    def read(self, blocks: object) -> Prompt:
        """A prompt's content read for the model. Raises InvalidParams: bad content, or images for a
        model that cannot see them."""
        prompt = read_prompt(blocks)
        if prompt.images and not self.vision:
            raise InvalidParams(
                f"This prompt has {len(prompt.images)} image(s), but the model {self.backend.name} cannot "
                "see images: remove them, or start the bridge with --vision if this model accepts them.",
                data={"images": len(prompt.images), "model": self.backend.name},
            )
        return prompt

    async def prompt(self, blocks: object) -> StopReason:
        """Run one prompt to its stop reason. Raises InvalidRequest (one already runs), InvalidParams (bad
        content), AuthRequired / InternalError (the model failed; the message says how)."""
        if self.slot.busy:
            raise InvalidRequest(
                f"session {self.id} is already running a prompt: wait for its response, or send "
                "session/cancel first"
            )
        prompt = self.read(blocks)
        self.controls.meter.begin_prompt()  # the answer's `usage` counts this prompt's requests only
        text = prompt.text
        compact_focus = compact_command(text) if not prompt.images else None
        rewind = rewind_argument(text) if not prompt.images else None
        if rewind is not None:
            await self.undo.command(rewind)  # checkpoints: `/rewind [N]` (rewind.py)
            return "end_turn"
        if text.startswith("/") and compact_focus is None and not prompt.images:
            handled = self.commands.run(text)
            if handled:
                self.tell_info()
                return "end_turn"
        # Told when the prompt ends, with its time, so the client's list updates once per prompt.
        self.title_info.from_prompt(text)
        try:
            # prompt glue: `/init` becomes the prompt asking for an AGENTS.md (init_command).
            return await self._run_turn(init_command.expand(prompt), self.vision, compact_focus)
        finally:
            self.tell_info(activity=True)

    def prompt_usage(self) -> mapping.PromptUsage | None:
        """The tokens of the last prompt's model requests (its steps, and a compaction it ran), as its
        answer's `usage`; None when none reported usage."""
        return self.controls.meter.prompt.usage()

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
            system_prompt="",  # prompt glue: set by `self.context.run_turn` below
            turn_index=self.turn_index,
            max_steps=self.max_steps,
            vision=vision,
            wait_notice=self.manager.config.wait_notice,
        )
        if self.checkpoints is not None and compact_focus is None:
            self.checkpoints.begin_turn(self.turn_index + 1, prompt.text)  # checkpoints: turn N begins
        work = (
            # prompt glue: the turn gets the session's system prompt first (prompt_context).
            self.context.run_turn(turn, turn.run(prompt.text, prompt.images, prompt.blocks))
            if compact_focus is None
            else turn.run_compaction(compact_focus or None)
        )
        try:
            task = await self.slot.run(turn, work)
            if compact_focus is None:
                self.turn_index += 1  # `/compact` is no prompt of the model's: the script stays in step
            stop = self.slot.stop_reason(turn, task)
        except BaseException as exc:
            self.steering.turn_ended(None, exc)  # steer: the prompts it took fail with it
            raise
        self.steering.turn_ended(stop)  # steer: answered with it, or run next (steering.py)
        return stop

    def cancel(self) -> None:
        """Cancel the running prompt, if any (model stream, tools, pending questions), and the prompts
        queued to join it."""
        self.steering.cancel()
        self.slot.cancel()

    async def stop(self) -> None:
        """Cancel the running prompt, if any, and wait until it answered (`PromptSlot.stop`)."""
        await self.slot.stop()

    async def wait_idle(self) -> None:
        await self.slot.wait_idle()

    async def halt(self, grace: float) -> None:
        """Stop the running turn for good (the bridge is shutting down; `PromptSlot.halt`)."""
        await self.slot.halt(grace)

    # --- permissions, title and commands, as the faces and the manager reach them --------------------

    def set_mode(self, mode_id: str) -> None:
        """Switch the permission mode; the client gets `current_mode_update` and `config_option_update`.
        Raises InvalidParams for an unknown mode id."""
        mode = self.approvals.set_mode(mode_id)
        self.send(self.controls.update(mode))

    def forget_rules(self, number: int | None = None) -> list[Rule]:
        return self.approvals.forget_rules(number)

    def restore_permissions(self, stored: PermissionsChanged, *, announce: bool = True) -> None:
        self.approvals.restore(stored, announce=announce)

    def set_title(self, title: str, *, source: str = "user", tell: bool = True) -> None:
        self.title_info.set(title, source=source, tell=tell)

    def tell_info(self, *, activity: bool = False) -> None:
        self.title_info.tell(activity=activity)

    def restore_info(self, info: SessionInfoChanged, first_prompt: str | None) -> None:
        self.title_info.restore(info, first_prompt)

    def available_commands_update(self) -> Update:
        return self.commands.available_commands_update()

    def commands_changed(self) -> None:
        """`McpHost`: the MCP servers' prompts changed (a server started, or its list changed): announce
        them."""
        self.send(self.available_commands_update())

    # --- config options (model, thinking effort, auto-compaction), usage and compaction ---------------

    def config_options(self) -> list[mapping.ConfigOption]:
        """ACP `configOptions`: the mode, the model, (for a model that takes one) the thinking effort and
        (for a client that takes boolean options) auto-compaction."""
        return self.controls.options(self.permissions.mode)

    def set_config_option(self, config_id: object, value: object) -> list[mapping.ConfigOption]:
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
        elif config_id == config_options.AUTO_COMPACT and self.controls.boolean_options:
            self.controls.set_auto_compact(value)
        else:
            options = ", ".join(self.controls.ids())
            raise InvalidParams(f"unknown config option {quoted(config_id)}; this session has: {options}")
        if self.manager.recording:
            self.record(self.controls.record())
        self.send(self.controls.update(self.permissions.mode))
        return self.config_options()

    def model_choice(self) -> tuple[str | None, str | None]:
        return self.controls.step_choice()

    def parent_prompt(self) -> tuple[str, int]:
        """`SubagentHost`: the running turn's system prompt and index, which a subagent starts from."""
        turn = self.slot.turn
        return (turn.system_prompt, turn.turn_index) if turn is not None else ("", self.turn_index)

    def report_usage(self, usage: Usage, *, in_context: bool = True) -> Update | None:
        """A response's usage: the meter counts it (logged), and the client gets a `usage_update` when the
        selected model's window is known (a guessed `size` would mislead its "context full" gauge).
        `in_context` False: a subagent's response, which costs but does not fill this context."""
        meter, info = self.controls.meter, self.controls.info
        meter.add(usage, info, in_context=in_context)
        if self.manager.recording:
            self.record(meter.record())
        return meter.update(info)

    async def compact(
        self, history: list[Message], signal: CancelSignal, *, focus: str | None = None, forced: bool = False
    ) -> None:
        """`TurnHost.compact`: `/compact` always; otherwise once the context reached `--compact-at`, unless
        the user turned auto-compaction off. A failed threshold compaction is reported and the turn goes on
        with the full context."""
        if forced:
            await self.compactor.run(history, signal, trigger="command", focus=focus)
            return
        if not self.compactor.due():
            return
        try:
            await self.compactor.run(history, signal, trigger="threshold")
        except ModelError as exc:
            log.warning("session %s: compaction failed: %s", self.id, exc.message)


class _CommitLog:
    """`agent.services["commits"]` (a `presenters.changes.CommitJournal`): a file tool's change, logged the
    moment it is made. Without it, a bridge killed between the write and the call's result would replay
    a change that is on disk as a call that did not finish."""

    def __init__(self, session: Session) -> None:
        self._session = session

    def committed(self, call_id: str, tool: str, summary: str, meta: Mapping[str, Any]) -> None:
        self._session.record(CallCommitted(call_id, tool, summary, meta))
