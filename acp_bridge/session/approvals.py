"""A session's approvals: its permission state (mode and remembered "always" rules, kept for the project
with `CoreConfig.rules_dir`), the questions it puts to the user, and the changes the user makes to it.

`ask_user` turns the gate's `ask` into a permission request, its `toolCall` the call's card as the running
turn draws it (with its preview); `question_card` is the same card for an `ask_user` question
(`SessionApprovals` is the `QuestionHost` of `client.questions.SessionQuestions`); one question at a time
(`approval_lock`). Every change of the mode or the rules is logged whole (`PermissionsChanged`, the last
one wins), so `session/load` restores it (`restore`).

Must not: decide a call itself (the policy does, `permissions.policy`), or log anything but the permission
state.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel, PermissionOutcome, SessionPlace, ToolCallUpdate, Update
from acp_bridge.common.errors import InvalidParams, quoted
from acp_bridge.history.session_log import LogEvent, PermissionsChanged
from acp_bridge.mapping import WireContext
from acp_bridge.permissions import permission_log
from acp_bridge.permissions.gate import AlwaysScopes
from acp_bridge.permissions.permission_log import RecordedPermissions, permissions_record
from acp_bridge.permissions.policy import MODES, ModeId, PolicyConfig
from acp_bridge.permissions.rules_store import ProjectPermissions, ProjectRules
from acp_bridge.permissions.scope import Rule
from acp_bridge.session.prompt_slot import PromptSlot
from registry_core import ToolExecution


class ApprovalsHost(SessionPlace, Protocol):
    """What the approvals need of their session (`session.Session` is one)."""

    @property
    def wire(self) -> WireContext: ...

    def record(self, event: LogEvent) -> None: ...

    def send(self, update: Update) -> None: ...


class SessionApprovals:
    """One session's permission state and the questions it asks (see the module docstring)."""

    def __init__(
        self,
        host: ApprovalsHost,
        slot: PromptSlot,
        policy: PolicyConfig,
        project_rules: ProjectRules | None,
        *,
        recording: bool,
    ) -> None:
        self._host = host
        self._slot = slot
        self._policy = policy
        self._recording = recording
        self.permissions: RecordedPermissions
        if project_rules is not None:
            self.permissions = ProjectPermissions(policy, host.cwd, host.roots, self._log, project_rules)
        else:
            self.permissions = RecordedPermissions(policy, host.cwd, host.roots, on_change=self._log)
        self.approval_lock = asyncio.Lock()

    @property
    def id(self) -> str:
        return self._host.id

    @property
    def channel(self) -> ClientChannel:
        return self._host.channel

    async def ask_user(
        self, execution: ToolExecution, reason: str | None, scopes: AlwaysScopes
    ) -> PermissionOutcome:
        """`GateHost.ask_user`: the call's card and the answers `scopes` allow, as a permission request."""
        turn = self._slot.turn
        if turn is not None:
            tool_call = await turn.permission_tool_call(execution, reason)
        else:
            tool_call = mapping.permission_tool_call(
                self._host.wire, execution.call_id, execution.name, execution.arguments, None, reason
            )
        options = mapping.permission_options(
            scopes.allow or scopes.reject,
            offer_always=scopes.allow is not None,
            reject_label=scopes.reject,
            server_label=scopes.server,
            remembered_for=scopes.remembered_for,
        )
        return await self._host.channel.request_permission(self._host.id, tool_call, options)

    async def question_card(self, execution: ToolExecution) -> ToolCallUpdate:
        """`QuestionHost`: an `ask_user` call's card, as the `toolCall` of a permission request."""
        turn = self._slot.turn
        if turn is not None:
            return await turn.permission_tool_call(execution, None)
        return mapping.permission_tool_call(
            self._host.wire, execution.call_id, execution.name, execution.arguments, None, None
        )

    # --- changes the user makes -------------------------------------------------------------------

    def set_mode(self, mode_id: str) -> ModeId:
        """Switch the permission mode (logged when it changed) and send `current_mode_update`; returns the
        mode. Raises InvalidParams for an unknown mode id."""
        if mode_id not in MODES:
            raise InvalidParams(f"unknown mode {quoted(mode_id)}; available: {', '.join(MODES)}")
        mode: ModeId = MODES[mode_id].id
        changed = mode != self.permissions.mode
        self.permissions.mode = mode
        if changed:
            self._log()
        self._host.send(mapping.mode_update(mode))
        return mode

    def forget_rules(self, number: int | None = None) -> list[Rule]:
        """Forget rule `number` (1-based, as `/permissions` numbers them), or every rule; returns what was
        forgotten (nothing for a number no rule has)."""
        if number is None:
            every = list(self.permissions.rules)
            self.permissions.forget()
            return every
        rule = self.permissions.revoke(number - 1)
        return [rule] if rule is not None else []

    def restore(self, stored: PermissionsChanged, *, announce: bool = True) -> None:
        """Apply the permission state a loaded log ended with, announce the mode, and tell the user what
        came back that a new session would not have (`announce` False: a resumed session, which shows
        no conversation to add a note to; its mode is in the response)."""
        restored = permission_log.restore(self.permissions, stored)
        if isinstance(self.permissions, ProjectPermissions):
            self.permissions.adopt_project_rules()
        if not announce:
            return
        if restored.mode is not None:
            self._host.send(mapping.mode_update(restored.mode))
        if restored.rules or restored.dropped or restored.mode not in (None, self._policy.mode):
            # A paragraph of its own: the client may join it to the agent's last replayed words.
            self._host.send(mapping.agent_message_chunk("\n\n" + restored.note()))

    def _log(self) -> None:
        """The user changed the mode or the remembered rules: log the whole state (the last one wins)."""
        if self._recording:
            self._host.record(permissions_record(self.permissions))
