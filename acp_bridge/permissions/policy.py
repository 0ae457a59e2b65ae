"""The permission decision: `SessionPermissions.decide(tool, args)` → `Decision` allow / deny / ask, from the
CLI policy, the session mode and the rules the user chose "always" for. Pure given the session's state and
the file system. Every non-default decision carries a `note` saying what decided it, so no denial or
auto-approval is ever silent. `version` counts what may change a decision, so the turn can keep the one it
made for a card.

The order of `decide` is the security argument: deny-listed tools, unusable paths (a NUL byte: denied),
reject rules, plan mode; then, unless the session is in `full_access`, every path a call touches (a file
tool's file, a search's root including a glob pattern's literal prefix, a command's working directory) is
judged as it resolves now, symlinks followed (`call_facts`): outside the workspace roots, or a change to a
file that makes later commands run code (`protected_paths`), asks, and no rule, `--allow-tool` or
`accept_edits` can answer that question in advance (the prompt offers no "Always allow"). Only then allow
rules (a rule covers a call exactly when the call's own scope equals it: `scope`), `--ask-tool`,
`--allow-tool`, `full_access`, and the mode's defaults.

Must not: know the ACP wire or ask anyone (`gate` turns an ask into a question), or raise for any argument
(an impossible path is a denial).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from acp_bridge.common.settings import MODES as MODES
from acp_bridge.common.settings import ModeId as ModeId
from acp_bridge.permissions.call_facts import CallFacts, Workspace
from acp_bridge.permissions.command_scope import reject_prefix
from acp_bridge.permissions.external import ExternalTool
from acp_bridge.permissions.scope import REMEMBERED_FOR_SESSION, Rule, Scope, ScopeKey, covering_reject
from acp_bridge.permissions.tool_classes import DEFAULT_CLASSES, NO_DISK_EFFECTS, ToolClass
from presenters.paths import display_path

# The modes themselves live in `settings` (the command line lists them without loading the core).


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """The deployment's policy (CLI flags): the initial mode and per-tool overrides."""

    mode: ModeId = "default"
    allow_tools: frozenset[str] = frozenset()
    ask_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()
    classes: Mapping[str, ToolClass] = field(default_factory=lambda: dict(DEFAULT_CLASSES))


@dataclass(frozen=True, slots=True)
class Decision:
    """`reason`: for deny, what the model and the card see; for ask, shown with the question.
    `note`: what decided it, shown on the card (None for the unremarkable default). `offer_always`: for
    an ask, whether an "Always allow" answer could cover the call (not for a path outside the workspace
    or a file that makes commands run code: those ask every time)."""

    kind: Literal["allow", "deny", "ask"]
    reason: str | None = None
    note: str | None = None
    offer_always: bool = True


_ALLOWED = Decision("allow")
_ASKED = Decision("ask")


class SessionPermissions:
    """One session's mode and remembered rules. `decide` is pure given this state and the file system.

    `version` counts the changes that may alter a decision: a rule remembered or forgotten, the mode
    switched, or a call that may change the file system settled (`settled`: a `bash` that made a symlink
    moves a later read outside the workspace). A decision made at version N stands while the version is N.
    """

    def __init__(self, config: PolicyConfig, cwd: str, roots: tuple[str, ...]) -> None:
        self.config = config
        # The session's MCP tools, registered by `acp_bridge.mcp` (`external`).
        self.external_tools: dict[str, ExternalTool] = {}
        self._mode: ModeId = config.mode
        self.version = 0
        self.workspace = Workspace(cwd, roots)
        self._rules: tuple[Rule, ...] = ()
        self._allowed: dict[ScopeKey, Decision] = {}  # allow rules by scope, with the decision they give
        self._rejects: list[Rule] = []
        # What an "always" answer lasts for, as the options and denials name it.
        self.remembered_for = REMEMBERED_FOR_SESSION

    @property
    def cwd(self) -> str:
        """The session's working directory: relative paths in a call's arguments resolve against it."""
        return self.workspace.cwd

    @property
    def mode(self) -> ModeId:
        return self._mode

    @mode.setter
    def mode(self, mode: ModeId) -> None:
        self._mode = mode
        self.version += 1

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The remembered rules, oldest first (change them with `remember` and `forget` only: the policy
        keeps an index of them)."""
        return self._rules

    def settled(self, tool: str) -> None:
        """A call of `tool` ended: decisions made before it are stale if it may have changed the disk."""
        if self.config.classes.get(tool) not in NO_DISK_EFFECTS:
            self.version += 1

    def _examine(self, tool: str, cls: ToolClass | None, args: Any) -> CallFacts:
        external = self.external_tools.get(tool)
        if external is not None:
            return CallFacts(external.tool_scope(tool).key())
        return self.workspace.examine(tool, cls, args)

    # --- what an "always" answer covers ---------------------------------------------------------------

    def scope_for(self, tool: str, args: Any) -> Scope:
        """What an "always" answer for this call would cover, with its display fields for the label."""
        external = self.external_tools.get(tool)
        if external is not None:
            return external.tool_scope(tool)
        call = self.workspace.examine(tool, self.config.classes.get(tool), args)
        return self.workspace.shown_scope(call.key)

    def reject_scope_for(self, tool: str, args: Any) -> Scope:
        """What an "always reject" answer for this call covers: for a command, its program (and
        sub-command or script) wherever it runs, even where "always allow" would cover only the exact
        command; otherwise what `scope_for` says."""
        scope = self.scope_for(tool, args)
        if scope.kind not in ("prefix", "exact"):
            return scope
        assert isinstance(args, Mapping)
        command = args["command"].strip()
        prefix = reject_prefix(command)
        if prefix is None:
            return Scope(tool, "exact", command)
        return Scope(tool, "prefix", prefix)

    def server_scope_for(self, tool: str) -> Scope | None:
        """The wider "always" an MCP tool's question also offers: every tool of its server."""
        external = self.external_tools.get(tool)
        return external.server_scope(tool) if external is not None else None

    # --- the decision --------------------------------------------------------------------------------

    def decide(self, tool: str, args: Any) -> Decision:
        config = self.config
        mode = MODES[self._mode]
        cls = config.classes.get(tool)
        if tool in config.deny_tools:
            return Decision("deny", f"`{tool}` is disabled by the bridge's policy (--deny-tool {tool}).")
        call = self._examine(tool, cls, args)
        if call.invalid is not None:
            text = f"Denied: this `{tool}` call cannot run: {call.invalid}."
            return Decision("deny", text, text)
        if self._rejects:
            rule = covering_reject(self._rejects, tool, call)
            if rule is not None:
                text = f"Denied by your session rule: {rule.describe()}."
                return Decision("deny", text, text)
        if self._mode == "plan" and cls in (None, "edit", "execute", "fetch") and not self._plan_safe(tool):
            text = (
                f"Denied: the session is in {mode.name} mode, so `{tool}` cannot run. "
                "Switch the session mode to let it run."
            )
            return Decision("deny", text, text)
        full_access = self._mode == "full_access"
        if not full_access:
            # Before any rule, `--allow-tool` or accept_edits: these ask every time.
            if call.outside is not None:
                return Decision("ask", self.workspace.outside_reason(call), offer_always=False)
            if call.protected is not None:
                shown = display_path(call.named or "", self.cwd)
                reason = f"Changing {shown} always asks: {call.protected} can make later commands run code."
                return Decision("ask", reason, offer_always=False)
        if self._allowed:
            allowed = self._allowed.get(call.key)
            if allowed is None and tool in self.external_tools:
                allowed = self._allowed.get(self.external_tools[tool].server_scope(tool).key())
            if allowed is not None:
                return allowed
        if tool in config.ask_tools:
            return _ASKED
        if tool in config.allow_tools:
            # The user configured this for every session; a note on every card would be noise.
            return _ALLOWED
        if full_access:
            return Decision("allow", note=f"Allowed: the session is in {mode.name} mode.")
        if cls == "read" or cls == "safe":
            return _ALLOWED
        if cls == "edit" and self._mode == "accept_edits":
            return Decision("allow", note=f"Allowed: {mode.name} mode (inside the workspace).")
        return _ASKED

    def _plan_safe(self, tool: str) -> bool:
        """An MCP tool that says it only reads (`readOnlyHint`) may run in plan mode; it still asks."""
        external = self.external_tools.get(tool)
        return external is not None and external.read_only

    # --- the remembered rules ------------------------------------------------------------------------

    def remember(self, scope: Scope, allow: bool) -> Rule:
        rule = Rule(scope, allow)
        # The newest answer for the same scope replaces an older one.
        self._rules = (*(r for r in self._rules if r.scope != scope), rule)
        self._index()
        self.version += 1
        return rule

    def replace_rules(self, rules: Sequence[Rule]) -> None:
        """Put back rules remembered earlier (a reloaded session's), replacing the current ones."""
        self._rules = tuple(rules)
        self._index()
        self.version += 1

    def forget(self) -> int:
        count = len(self._rules)
        self._rules = ()
        self._index()
        self.version += 1
        return count

    def _index(self) -> None:
        # An allow rule is found by its scope's key alone, so it covers exactly what its label says.
        self._allowed = {
            r.scope.key(): Decision("allow", note=f"Allowed by your session rule: {r.describe()}.")
            for r in self._rules
            if r.allow
        }
        self._rejects = [r for r in self._rules if not r.allow]

    def describe(self) -> str:
        mode = MODES[self.mode]
        lines = [f"Mode: **{mode.name}**: {mode.description}"]
        if self.rules:
            lines.append("Remembered for this session:")
            lines += [f"- {r.describe()}" for r in self.rules]
        else:
            lines.append("No remembered rules in this session.")
        return "\n".join(lines)
