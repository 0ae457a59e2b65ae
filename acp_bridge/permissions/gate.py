"""The permission gate: the registry's pre-execute listener and its `ApprovalService`.

`PermissionGate.listener` turns the policy's decision for a call (`policy.decide`, through its session)
into the pipeline's allow / deny / ask. An ask becomes one question to the session's client (one at a time
per session, re-decided after waiting, since an "always" answer may have covered it), offering the options
`AlwaysScopes` describes: allow once, always allow (only when a rule may cover the call), an MCP tool's
"always allow" for its whole server, reject, always reject. The answer maps to allowed (an "always" one
remembered as a rule) / denied (with the reason the model sees) / cancelled. An option not offered, a
malformed answer or a transport failure denies. Nested calls (a Code Mode program's) are decided and asked
about like any other, and move and note their own cards.

Must not: know the ACP wire (the host builds the request and its options), block other sessions, or let a
pending question outlive a cancelled turn (the pipeline cancels the waiting task).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from acp_bridge.client.channel import ALLOW_SERVER_OPTION, PermissionOutcome
from acp_bridge.common.errors import ConnectionClosed, RemoteError
from acp_bridge.permissions.policy import Decision, SessionPermissions
from acp_bridge.permissions.scope import REMEMBERED_FOR_SESSION, Scope
from registry_core import ALLOW, ApprovalAnswer, Ask, Deny, PreToolDecision, ToolExecution

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AlwaysScopes:
    """What the "always" answers of one question would cover, as the labels the user reads: `allow` is
    None when no rule may cover the call (the question then offers no "Always allow")."""

    allow: str | None
    reject: str
    server: str | None = None  # an MCP tool's wider answer: every tool of its server
    remembered_for: str = REMEMBERED_FOR_SESSION  # how long an "always" answer lasts, in words


class GateHost(Protocol):
    """What the gate needs from a session (implemented by `session.manager.Session`)."""

    @property
    def permissions(self) -> SessionPermissions: ...

    @property
    def approval_lock(self) -> asyncio.Lock: ...

    def decide(self, execution: ToolExecution) -> Decision:
        """The policy's decision for the call (top-level or nested): `permissions.decide`, or the same
        decision already made for its card when nothing it depends on changed since
        (`SessionPermissions.version`)."""
        ...

    def on_decision(self, execution: ToolExecution, decision: Decision) -> None:
        """Record what decided a call (its card note) and move the card's status (pending / in_progress)."""
        ...

    async def ask_user(
        self, execution: ToolExecution, reason: str | None, scopes: AlwaysScopes
    ) -> PermissionOutcome:
        """Show the call to the user, "always" answers covering `scopes`; wait for the answer (raises as
        ClientChannel.request_permission)."""
        ...

    def cancel_turn(self, why: str) -> None: ...


class PermissionGate:
    """Registered on the session manager's registry: `listener` first in the pre-execute waterfall, and
    `self` as its approval service. Nested calls (a tool calling tools) are decided like any other, so a
    composite tool cannot launder a call past the policy; the host is told each decision, for the call's
    card (a nested call has one when its program's host shows it); a call of no known session passes
    through."""

    def __init__(self, lookup: Callable[[str], GateHost | None]) -> None:
        self._lookup = lookup

    def _host(self, execution: ToolExecution) -> GateHost | None:
        if execution.agent is None:
            return None
        return self._lookup(execution.agent.id)

    @staticmethod
    def _decide(host: GateHost, execution: ToolExecution) -> Decision:
        return host.decide(execution)

    @staticmethod
    def _on_decision(host: GateHost, execution: ToolExecution, decision: Decision) -> None:
        host.on_decision(execution, decision)

    async def listener(
        self, execution: ToolExecution, next_: Callable[[], Awaitable[PreToolDecision]]
    ) -> PreToolDecision:
        host = self._host(execution)
        if host is None:
            return await next_()
        decision = self._decide(host, execution)
        self._on_decision(host, execution, decision)
        if decision.kind == "deny":
            return Deny(decision.reason or f"`{execution.name}` was denied by policy.")
        if decision.kind == "ask":
            return Ask(decision.reason)
        return ALLOW

    async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
        host = self._host(execution)
        tool = execution.name
        if host is None:
            return ApprovalAnswer("denied", f"`{tool}` needs approval, but its session is gone.")
        async with host.approval_lock:
            # Re-decide: while this call waited, an "always" answer may have covered it.
            decision = self._decide(host, execution)
            if decision.kind != "ask":
                self._on_decision(host, execution, decision)
                if decision.kind == "allow":
                    return ApprovalAnswer("allowed-once")
                return ApprovalAnswer("denied", decision.reason)
            scope = host.permissions.scope_for(tool, execution.arguments)
            reject_scope = host.permissions.reject_scope_for(tool, execution.arguments)
            server_scope = host.permissions.server_scope_for(tool)
            scopes = AlwaysScopes(
                scope.label() if decision.offer_always else None,
                reject_scope.label(),
                server_scope.label() if server_scope is not None and decision.offer_always else None,
                host.permissions.remembered_for,
            )
            try:
                outcome = await host.ask_user(execution, reason, scopes)
            except (RemoteError, ConnectionClosed, ValueError) as exc:
                log.warning("permission request for %s failed: %s", execution.call_id, exc)
                return ApprovalAnswer(
                    "denied",
                    f"`{tool}` was denied: the permission request failed ({exc}), so it did not run.",
                )
            offered = frozenset(
                {"allow_once", "reject_once", "reject_always"}
                | ({"allow_always"} if scopes.allow is not None else set())
                | ({ALLOW_SERVER_OPTION} if scopes.server is not None else set())
            )
            return self._answer(host, execution, (scope, reject_scope), outcome, offered)

    def _answer(
        self,
        host: GateHost,
        execution: ToolExecution,
        scopes: tuple[Scope, Scope],
        outcome: PermissionOutcome,
        offered: frozenset[str],
    ) -> ApprovalAnswer:
        """`scopes`: what "always allow" and "always reject" cover."""
        tool = execution.name
        scope, reject_scope = scopes
        if outcome.outcome == "cancelled":
            # ACP: a client answers "cancelled" when the turn is being cancelled; end it as such.
            host.cancel_turn("the permission request was cancelled")
            return ApprovalAnswer("cancelled", f"`{tool}` was cancelled while waiting for approval.")
        picked = outcome.option_id
        # An answer we did not offer (e.g. "always" for a call no rule may cover) is an unknown one.
        option = picked if picked in offered else None
        if option == "allow_once":
            self._on_decision(host, execution, Decision("allow"))
            return ApprovalAnswer("allowed-once")
        if option == ALLOW_SERVER_OPTION:
            server_scope = host.permissions.server_scope_for(tool)
            scope = server_scope if server_scope is not None else scope
            option = "allow_always"
        if option == "allow_always":
            rule = host.permissions.remember(scope, allow=True)
            self._on_decision(host, execution, Decision("allow", note=f"You chose: {rule.describe()}."))
            return ApprovalAnswer("allowed-once")
        said = f" The user said: {outcome.feedback}" if outcome.feedback else ""
        if option == "reject_once":
            return ApprovalAnswer("denied", f"The user rejected this `{tool}` call.{said}")
        if option == "reject_always":
            rule = host.permissions.remember(reject_scope, allow=False)
            return ApprovalAnswer(
                "denied",
                f"The user rejected this `{tool}` call and chose to {rule.describe()} in "
                f"{host.permissions.remembered_for}.{said}",
            )
        log.warning("unknown permission option %r for %s", picked, execution.call_id)
        return ApprovalAnswer(
            "denied",
            f"`{tool}` was denied: the client answered with an unknown option {picked!r} (not one offered).",
        )
