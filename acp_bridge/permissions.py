"""Who decides whether a tool call may run: the session's mode, its remembered rules, and the user.

Three parts:
- the policy (pure): `SessionPermissions.decide(tool, args)` → `Decision` allow / deny / ask, from the CLI
  policy, the session mode and the rules the user chose "always" for. Every non-default decision carries a
  `note` saying what decided it, so no denial or auto-approval is ever silent. Paths are judged by
  `presenters.paths` (the tools' own rules: `..` segments, symlinks resolved below a root); `version`
  counts what may change a decision, so the turn can keep the one it made for a card;
- `Scope`: what an "always" answer covers. bash: the command's prefix (`npm test`, `python3 app.py`; a
  compound command such as `a && b` only itself); file tools: the tool and the absolute path; web_fetch:
  the host and port (`localhost:8000` never covers `localhost:6379`); other tools: the tool;
- `PermissionGate`: the registry's pre-execute listener and its `ApprovalService`. An ask becomes one
  question to the session's client (one at a time per session, re-decided after waiting, since an "always"
  answer may have covered it); the answer maps to allowed / denied (with the reason the model sees) /
  cancelled. An unknown option, a malformed answer or a transport failure denies. Nested calls (a Code
  Mode program's) are decided and asked about like any other, and move and note their own cards.

Must not: know the ACP wire (the host builds the request), block other sessions, or let a pending question
outlive a cancelled turn (the pipeline cancels the waiting task).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from presenters.paths import display_path, is_inside_roots, resolve
from registry_core import ALLOW, ApprovalAnswer, Ask, Deny, PreToolDecision, ToolExecution

from .channel import PermissionOutcome
from .errors import ConnectionClosed, RemoteError
from .settings import MODES as MODES
from .settings import Mode as Mode
from .settings import ModeId as ModeId

log = logging.getLogger(__name__)

# --- modes ----------------------------------------------------------------------------------------
# The modes themselves live in `settings` (the command line lists them without loading the core).

ToolClass = Literal["read", "edit", "execute", "fetch", "safe"]

# How the built-in tools are treated. A tool missing here asks (fail safe) unless the policy allows it.
DEFAULT_CLASSES: Mapping[str, ToolClass] = {
    "read": "read",
    "grep": "read",
    "glob": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",
    "web_fetch": "fetch",
    "todo_write": "safe",
    "run_code": "safe",  # Code Mode: the program acts only through its calls, each decided on its own
}

_PATH_KEYS = ("file_path", "path")


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """The deployment's policy (CLI flags): the initial mode and per-tool overrides."""

    mode: ModeId = "default"
    allow_tools: frozenset[str] = frozenset()
    ask_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()
    classes: Mapping[str, ToolClass] = field(default_factory=lambda: dict(DEFAULT_CLASSES))


# --- scopes and rules -------------------------------------------------------------------------------

# Tools whose first argument is a sub-command worth keeping in a prefix (`npm test`, `git status`).
_SUBCOMMAND_TOOLS = frozenset(
    {
        "npm", "pnpm", "yarn", "bun", "npx", "git", "cargo", "go", "make", "uv", "pip", "pip3",
        "poetry", "docker", "kubectl", "dotnet", "mvn", "gradle", "./gradlew", "deno", "rustup", "brew",
    }
)  # fmt: skip
_RUN_VERBS = frozenset({"run", "exec", "x", "run-script"})
# Interpreters: the prefix keeps the script (`python3 app.py`), never the bare interpreter.
_INTERPRETERS = frozenset(
    {"python", "python3", "node", "ruby", "perl", "bash", "sh", "zsh", "php", "lua", "Rscript"}
)
_SHELL_OPERATORS = ("&&", "||", ";", "|", "`", "$(", ">", "<", "\n", "&", "${")


def command_prefix(command: str) -> tuple[str, ...] | None:
    """The argv prefix an "always" answer for `command` covers, or None when only the exact command may be
    covered (compound commands, redirections, substitutions, env assignments, unparsable quoting)."""
    if any(op in command for op in _SHELL_OPERATORS):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or "=" in argv[0]:
        return None
    first = argv[0]
    n = 1
    if first in _INTERPRETERS:
        if len(argv) == 1:
            return None
        if argv[1] == "-m" and len(argv) >= 3:
            n = 3  # python -m pytest
        elif argv[1].startswith("-"):
            return None  # python -c CODE: no safe generalisation
        else:
            n = 2  # python3 app.py
    elif first in _SUBCOMMAND_TOOLS and len(argv) > 1 and not argv[1].startswith("-"):
        n = 3 if argv[1] in _RUN_VERBS and len(argv) > 2 else 2
    return tuple(argv[:n])


def _host_and_port(url: str) -> str | None:
    """`host:port` of a URL, lower-cased, with the port its scheme implies when absent; None without a
    host. An unreadable port keeps the authority as written, so the scope covers that spelling only."""
    parts = urlsplit(url.strip())
    host = parts.hostname
    if not host:
        return None
    try:
        port = parts.port
    except ValueError:
        return parts.netloc.lower()
    if port is None:
        port = {"http": 80, "https": 443}.get(parts.scheme.lower())
    shown = f"[{host}]" if ":" in host else host
    return shown if port is None else f"{shown}:{port}"


ScopeKind = Literal["prefix", "exact", "path", "host", "tool"]


@dataclass(frozen=True, slots=True)
class Scope:
    """What one "always" answer covers. `value` is an argv prefix, a command, an absolute path or a
    `host:port`."""

    tool: str
    kind: ScopeKind
    value: tuple[str, ...] | str = ""
    display: str = ""  # the value as shown to people (a path relative to the session cwd)

    def label(self) -> str:
        if self.kind == "prefix":
            assert isinstance(self.value, tuple)
            return f"`{shlex.join(self.value)}` commands"
        if self.kind == "exact":
            return f"the command `{self.value}`"
        if self.kind == "path":
            return f"`{self.tool}` on {self.display or self.value}"
        if self.kind == "host":
            return f"`{self.tool}` from {self.value}"
        return f"every `{self.tool}` call"

    def matches(self, other: Scope | None, command: str | None = None) -> bool:
        if other is None or other.tool != self.tool:
            return False
        if self.kind == "prefix":
            if command is None or any(op in command for op in _SHELL_OPERATORS):
                return False
            try:
                argv = tuple(shlex.split(command))
            except ValueError:
                return False
            assert isinstance(self.value, tuple)
            return argv[: len(self.value)] == self.value
        if self.kind == "exact":
            return command is not None and command.strip() == self.value
        if self.kind == "tool":
            return True
        return other.kind == self.kind and other.value == self.value


@dataclass(frozen=True, slots=True)
class Rule:
    scope: Scope
    allow: bool

    def describe(self) -> str:
        return f"always {'allow' if self.allow else 'reject'} {self.scope.label()}"


@dataclass(frozen=True, slots=True)
class Decision:
    """`reason`: for deny, what the model and the card see; for ask, shown with the question.
    `note`: what decided it, shown on the card (None for the unremarkable default)."""

    kind: Literal["allow", "deny", "ask"]
    reason: str | None = None
    note: str | None = None


# The tool classes whose calls cannot change what a later decision sees on disk (a symlink's target).
_NO_DISK_EFFECTS: frozenset[ToolClass | None] = frozenset({"read", "safe", "fetch"})


class SessionPermissions:
    """One session's mode and remembered rules. `decide` is pure given this state and the file system.

    `version` counts the changes that may alter a decision: a rule remembered or forgotten, the mode
    switched, or a call that may change the file system settled (`settled`: a `bash` that made a symlink
    moves a later read outside the workspace). A decision made at version N stands while the version is N.
    """

    def __init__(self, config: PolicyConfig, cwd: str, roots: tuple[str, ...]) -> None:
        self.config = config
        self._mode: ModeId = config.mode
        self.version = 0
        self.cwd = cwd
        self.roots = tuple(os.path.normpath(r) for r in (roots or (cwd,)))
        # Resolved once: roots do not move during a session, and every read is checked against them.
        self.real_roots = tuple(os.path.realpath(r) for r in self.roots)
        self.rules: list[Rule] = []

    @property
    def mode(self) -> ModeId:
        return self._mode

    @mode.setter
    def mode(self, mode: ModeId) -> None:
        self._mode = mode
        self.version += 1

    def settled(self, tool: str) -> None:
        """A call of `tool` ended: decisions made before it are stale if it may have changed the disk."""
        if self.config.classes.get(tool) not in _NO_DISK_EFFECTS:
            self.version += 1

    # --- facts about a call ------------------------------------------------------------------------

    def _path_of(self, args: Any) -> str | None:
        if not isinstance(args, Mapping):
            return None
        for key in _PATH_KEYS:
            value = args.get(key)
            if isinstance(value, str) and value:
                return resolve(value, self.cwd)
        return None

    def scope_for(self, tool: str, args: Any) -> Scope:
        cls = self.config.classes.get(tool)
        if cls == "execute" and isinstance(args, Mapping) and isinstance(args.get("command"), str):
            command = args["command"].strip()
            prefix = command_prefix(command)
            if prefix is None:
                return Scope(tool, "exact", command)
            return Scope(tool, "prefix", prefix)
        if cls in ("read", "edit"):
            path = self._path_of(args)
            if path is not None:
                return Scope(tool, "path", path, display_path(path, self.cwd))
        if cls == "fetch" and isinstance(args, Mapping) and isinstance(args.get("url"), str):
            host = _host_and_port(args["url"])
            if host:
                return Scope(tool, "host", host)
        return Scope(tool, "tool")

    def _rule_for(self, tool: str, args: Any) -> Rule | None:
        if not self.rules:
            return None
        scope = self.scope_for(tool, args)
        command = args.get("command") if isinstance(args, Mapping) else None
        command = command if isinstance(command, str) else None
        # A reject rule wins over an allow rule covering the same call.
        for want_allow in (False, True):
            for rule in self.rules:
                if rule.allow == want_allow and rule.scope.matches(scope, command):
                    return rule
        return None

    # --- the decision --------------------------------------------------------------------------------

    def decide(self, tool: str, args: Any) -> Decision:
        config = self.config
        mode = MODES[self._mode]
        cls = config.classes.get(tool)
        if tool in config.deny_tools:
            return Decision("deny", f"`{tool}` is disabled by the bridge's policy (--deny-tool {tool}).")
        rule = self._rule_for(tool, args)
        if rule is not None and not rule.allow:
            text = f"Denied by your session rule: {rule.describe()}."
            return Decision("deny", text, text)
        if self._mode == "plan" and cls in (None, "edit", "execute", "fetch"):
            text = (
                f"Denied: the session is in {mode.name} mode, so `{tool}` cannot run. "
                "Switch the session mode to let it run."
            )
            return Decision("deny", text, text)
        if rule is not None:
            return Decision("allow", note=f"Allowed by your session rule: {rule.describe()}.")
        if tool in config.ask_tools:
            return Decision("ask")
        if tool in config.allow_tools:
            # The user configured this for every session; a note on every card would be noise.
            return Decision("allow")
        if self._mode == "full_access":
            return Decision("allow", note=f"Allowed: the session is in {mode.name} mode.")
        path = self._path_of(args)
        if cls in ("read", "safe"):
            if cls == "read" and path is not None and not is_inside_roots(path, self.roots, self.real_roots):
                return Decision("ask", f"{path} is outside the workspace.")
            return Decision("allow")
        if cls == "edit":
            outside = path is not None and not is_inside_roots(path, self.roots, self.real_roots)
            if outside:
                return Decision("ask", f"{path} is outside the workspace.")
            if self._mode == "accept_edits":
                return Decision("allow", note=f"Allowed: {mode.name} mode (inside the workspace).")
            return Decision("ask")
        return Decision("ask")

    def remember(self, scope: Scope, allow: bool) -> Rule:
        rule = Rule(scope, allow)
        # The newest answer for the same scope replaces an older one.
        self.rules = [r for r in self.rules if r.scope != scope] + [rule]
        self.version += 1
        return rule

    def forget(self) -> int:
        count = len(self.rules)
        self.rules = []
        self.version += 1
        return count

    def describe(self) -> str:
        mode = MODES[self.mode]
        lines = [f"Mode: **{mode.name}**: {mode.description}"]
        if self.rules:
            lines.append("Remembered for this session:")
            lines += [f"- {r.describe()}" for r in self.rules]
        else:
            lines.append("No remembered rules in this session.")
        return "\n".join(lines)


def permission_options(scope: Scope) -> list[dict[str, Any]]:
    """The four ACP PermissionOptions; the option id equals its kind. "Always" names show the scope."""
    label = scope.label()
    return [
        {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "allow_always", "name": f"Always allow {label} (this session)", "kind": "allow_always"},
        {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        {
            "optionId": "reject_always",
            "name": f"Always reject {label} (this session)",
            "kind": "reject_always",
        },
    ]


# --- the gate: pre-execute listener + approval service ---------------------------------------------


class GateHost(Protocol):
    """What the gate needs from a session (implemented by `sessions.Session`)."""

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
        self, execution: ToolExecution, reason: str | None, options: list[dict[str, Any]]
    ) -> PermissionOutcome:
        """Show the call to the user, wait for the answer (raises as ClientChannel.request_permission)."""
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
            try:
                outcome = await host.ask_user(execution, reason, permission_options(scope))
            except (RemoteError, ConnectionClosed, ValueError) as exc:
                log.warning("permission request for %s failed: %s", execution.call_id, exc)
                return ApprovalAnswer(
                    "denied",
                    f"`{tool}` was denied: the permission request failed ({exc}), so it did not run.",
                )
            return self._answer(host, execution, scope, outcome)

    def _answer(
        self, host: GateHost, execution: ToolExecution, scope: Scope, outcome: PermissionOutcome
    ) -> ApprovalAnswer:
        tool = execution.name
        if outcome.outcome == "cancelled":
            # ACP: a client answers "cancelled" when the turn is being cancelled; end it as such.
            host.cancel_turn("the permission request was cancelled")
            return ApprovalAnswer("cancelled", f"`{tool}` was cancelled while waiting for approval.")
        option = outcome.option_id
        if option == "allow_once":
            self._on_decision(host, execution, Decision("allow"))
            return ApprovalAnswer("allowed-once")
        if option == "allow_always":
            rule = host.permissions.remember(scope, allow=True)
            self._on_decision(host, execution, Decision("allow", note=f"You chose: {rule.describe()}."))
            return ApprovalAnswer("allowed-once")
        said = f" The user said: {outcome.feedback}" if outcome.feedback else ""
        if option == "reject_once":
            return ApprovalAnswer("denied", f"The user rejected this `{tool}` call.{said}")
        if option == "reject_always":
            rule = host.permissions.remember(scope, allow=False)
            return ApprovalAnswer(
                "denied",
                f"The user rejected this `{tool}` call and chose to {rule.describe()} in this session.{said}",
            )
        log.warning("unknown permission option %r for %s", option, execution.call_id)
        return ApprovalAnswer(
            "denied", f"`{tool}` was denied: the client answered with an unknown option {option!r}."
        )
