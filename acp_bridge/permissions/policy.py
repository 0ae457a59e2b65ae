"""Who decides whether a tool call may run: the session's mode, its remembered rules, and the user.

Three parts:
- the policy (pure): `SessionPermissions.decide(tool, args)` → `Decision` allow / deny / ask, from the CLI
  policy, the session mode and the rules the user chose "always" for. Every non-default decision carries a
  `note` saying what decided it, so no denial or auto-approval is ever silent. `version` counts what may
  change a decision, so the turn can keep the one it made for a card;
- `Scope`: what an "always" answer covers. bash: the command's argv prefix (`npm test`, `python3 app.py`)
  or only the exact command (`command_scope`), in the directory it ran in; file tools: the tool and the
  file as resolved (symlinks followed); web_fetch: the host and port (`localhost:8000` never covers
  `localhost:6379`); other tools: the tool. An allow rule covers a call exactly when the call's own scope
  equals the rule's, so it never covers more than its label says; a reject rule also covers every command
  starting with its prefix and the file as named;
- `PermissionGate`: the registry's pre-execute listener and its `ApprovalService`. An ask becomes one
  question to the session's client (one at a time per session, re-decided after waiting, since an "always"
  answer may have covered it); the answer maps to allowed / denied (with the reason the model sees) /
  cancelled. An unknown option, a malformed answer or a transport failure denies. Nested calls (a Code
  Mode program's) are decided and asked about like any other, and move and note their own cards.

The order of `decide` is the security argument: deny-listed tools, unusable paths (a NUL byte: denied),
reject rules, plan mode; then, unless the session is in `full_access`, every path a call touches (a file
tool's file, a search's root including a glob pattern's literal prefix, a command's working directory) is
judged as it resolves now, symlinks followed: outside the workspace roots, or a change to a file that makes
later commands run code (`protected_paths`), asks, and no rule, `--allow-tool` or `accept_edits` can answer
that question in advance (the prompt offers no "Always allow"). Only then allow rules, `--ask-tool`,
`--allow-tool`, `full_access`, and the mode's defaults.

Must not: know the ACP wire (the host builds the request), block other sessions, raise for any argument
(an impossible path is a denial), or let a pending question outlive a cancelled turn (the pipeline cancels
the waiting task).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from acp_bridge.client.channel import ALLOW_SERVER_OPTION, PermissionOutcome
from acp_bridge.common.errors import ConnectionClosed, RemoteError
from acp_bridge.common.settings import MODES as MODES
from acp_bridge.common.settings import Mode as Mode
from acp_bridge.common.settings import ModeId as ModeId
from acp_bridge.permissions.command_scope import command_prefix, reject_prefix
from acp_bridge.permissions.protected_paths import protected_reason
from presenters import glob as glob_presenter
from presenters import grep as grep_presenter
from presenters.paths import Located, display_path, locate, relative_inside, resolve
from registry_core import ALLOW, ApprovalAnswer, Ask, Deny, PreToolDecision, ToolExecution

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
    "bash": "execute",  # `run_in_background` included: the same command, the same scope and rules
    # bg: they act only on the session's own background commands (read its output, stop one).
    "bash_output": "safe",
    "kill_bash": "safe",
    "web_fetch": "fetch",
    "todo_write": "safe",
    "ask_user": "safe",  # it only asks the user a question: nothing to approve first
    "run_code": "safe",  # Code Mode: the program acts only through its calls, each decided on its own
}

# How long an "always" answer lasts, as the options and denials name it: this session, unless the
# session's permissions say otherwise (`rules_store.ProjectPermissions`: "this project").
REMEMBERED_FOR_SESSION = "this session"

_PATH_KEYS = ("file_path", "path")
# The arguments that name files, per tool (default `_PATH_KEYS`): none of them may hold a NUL byte.
_NAMING_KEYS: Mapping[str, tuple[str, ...]] = {"glob": ("pattern", "path"), "grep": ("path", "glob")}

# Tools whose arguments can move what they read away from `file_path`/`path`: every path they search.
_SEARCHED_PATHS: Mapping[str, Callable[[Mapping[str, Any], str], tuple[str, ...]]] = {
    "glob": glob_presenter.searched_paths,
    "grep": grep_presenter.searched_paths,
}


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """The deployment's policy (CLI flags): the initial mode and per-tool overrides."""

    mode: ModeId = "default"
    allow_tools: frozenset[str] = frozenset()
    ask_tools: frozenset[str] = frozenset()
    deny_tools: frozenset[str] = frozenset()
    classes: Mapping[str, ToolClass] = field(default_factory=lambda: dict(DEFAULT_CLASSES))


# --- scopes and rules -------------------------------------------------------------------------------


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


ScopeKind = Literal["prefix", "exact", "path", "host", "tool", "server"]
ScopeKey = tuple[str, ScopeKind, "tuple[str, ...] | str", "str | None"]


@dataclass(frozen=True, slots=True)
class Scope:
    """What one "always" answer covers. `value` is an argv prefix, a command, a file's real path or a
    `host:port`.
    `workdir`: for a command, the real directory it runs in when that is not the session's cwd (a rule
    made there covers commands run there only). Equality (and hashing) ignore the display fields."""

    tool: str
    kind: ScopeKind
    value: tuple[str, ...] | str = ""
    display: str = field(default="", compare=False)  # the value as shown (relative to the session cwd)
    workdir: str | None = None
    workdir_display: str = field(default="", compare=False)

    def key(self) -> ScopeKey:
        """What equality compares: the rule index's key."""
        return (self.tool, self.kind, self.value, self.workdir)

    def label(self) -> str:
        if self.kind == "server" or (self.kind == "tool" and self.value):
            return _external_label(self)
        where = f" in {self.workdir_display or self.workdir}" if self.workdir is not None else ""
        if self.kind == "prefix":
            assert isinstance(self.value, tuple)
            return f"`{shlex.join(self.value)}` commands{where}"
        if self.kind == "exact":
            return f"the command `{self.value}`{where}"
        if self.kind == "path":
            return f"`{self.tool}` on {self.display or self.value}"
        if self.kind == "host":
            return f"`{self.tool}` from {self.value}"
        return f"every `{self.tool}` call"


@dataclass(frozen=True, slots=True)
class Rule:
    scope: Scope
    allow: bool

    def describe(self) -> str:
        return f"always {'allow' if self.allow else 'reject'} {self.scope.label()}"


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

# The tool classes whose calls cannot change what a later decision sees on disk (a symlink's target).
_NO_DISK_EFFECTS: frozenset[ToolClass | None] = frozenset({"read", "safe", "fetch"})


@dataclass(slots=True)
class _Call:
    """What the policy knows about one call, computed once per decision."""

    # What an "always" answer would cover, as `Scope.key()` (built without a Scope: decide is hot).
    key: ScopeKey
    named: str | None = None  # the file (or directory) as named, absolute
    command: str | None = None
    outside: str | None = None  # a path the call touches that lands outside every root, as named
    protected: str | None = None  # why a file the call changes makes later commands run code
    invalid: str | None = None  # why the call cannot be judged at all


class _Unusable(ValueError):
    """A path no file can have."""


class SessionPermissions:
    """One session's mode and remembered rules. `decide` is pure given this state and the file system.

    `version` counts the changes that may alter a decision: a rule remembered or forgotten, the mode
    switched, or a call that may change the file system settled (`settled`: a `bash` that made a symlink
    moves a later read outside the workspace). A decision made at version N stands while the version is N.
    """

    def __init__(self, config: PolicyConfig, cwd: str, roots: tuple[str, ...]) -> None:
        self.config = config
        # The session's MCP tools (registered by `acp_bridge.mcp`): see "external tools" below.
        self.external_tools: dict[str, ExternalTool] = {}
        self._mode: ModeId = config.mode
        self.version = 0
        self.cwd = cwd
        self.roots = tuple(os.path.normpath(r) for r in (roots or (cwd,)))
        # Resolved once: roots do not move during a session, and every path is checked against them.
        self.real_roots = tuple(os.path.realpath(r) for r in self.roots)
        self.real_cwd = os.path.realpath(cwd)
        self._rules: tuple[Rule, ...] = ()
        self._allowed: dict[ScopeKey, Decision] = {}  # allow rules by scope, with the decision they give
        self._rejects: list[Rule] = []
        # What an "always" answer lasts for, as the options and denials name it.
        self.remembered_for = REMEMBERED_FOR_SESSION

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
        if self.config.classes.get(tool) not in _NO_DISK_EFFECTS:
            self.version += 1

    # --- facts about a call ------------------------------------------------------------------------

    def _resolve(self, value: str, cwd: str) -> str:
        if "\x00" in value:
            raise _Unusable(f"{value!r} contains a NUL byte, which no file name can contain")
        return resolve(value, cwd)

    def _locate(self, path: str) -> Located | None:
        if "\x00" in path:
            raise _Unusable(f"{path!r} contains a NUL byte, which no file name can contain")
        return locate(path, self.roots, self.real_roots, normalised=True)

    def _examine(self, tool: str, cls: ToolClass | None, args: Any) -> _Call:
        external = self.external_tools.get(tool)
        if external is not None:
            return _Call(external.tool_scope(tool).key())
        if not isinstance(args, Mapping):
            return _Call((tool, "tool", "", None))
        try:
            if cls == "execute" and isinstance(args.get("command"), str):
                return self._examine_command(tool, args)
            if cls == "read" or cls == "edit":
                return self._examine_files(tool, cls, args)
        except _Unusable as exc:
            return _Call((tool, "tool", "", None), invalid=str(exc))
        except ValueError as exc:  # an unencodable name (a lone surrogate), "~\0" for expanduser
            return _Call((tool, "tool", "", None), invalid=f"a path in its arguments is not usable ({exc})")
        if cls == "fetch" and isinstance(args.get("url"), str):
            host = _host_and_port(args["url"])
            if host:
                return _Call((tool, "host", host, None))
        return _Call((tool, "tool", "", None))

    def _examine_files(self, tool: str, cls: ToolClass, args: Mapping[str, Any]) -> _Call:
        for name in _NAMING_KEYS.get(tool, _PATH_KEYS):
            value = args.get(name)
            if isinstance(value, str) and "\x00" in value:
                raise _Unusable(f"its {name} {value!r} contains a NUL byte, which no file name can contain")
        named = None
        for name in _PATH_KEYS:
            value = args.get(name)
            if isinstance(value, str) and value:
                named = self._resolve(value, self.cwd)
                break
        search = _SEARCHED_PATHS.get(tool)
        touched: tuple[str, ...]
        if search is not None:
            touched = search(args, self.cwd)
        elif named is not None:
            touched = (named,)
        else:
            return _Call((tool, "tool", "", None))
        real, outside, protected = named, None, None
        for path in touched:
            located = self._locate(path)
            if located is None:
                outside = outside or path
                continue
            if path == named:
                real = located.real
            if cls == "edit" and protected is None:
                protected = protected_reason(located.rel)
                if protected is None and located.named_rel != located.rel:
                    protected = protected_reason(located.named_rel)
        scope: ScopeKey = (tool, "tool", "", None) if real is None else (tool, "path", real, None)
        return _Call(scope, named, None, outside, protected)

    def _examine_command(self, tool: str, args: Mapping[str, Any]) -> _Call:
        command = args["command"].strip()
        if "\x00" in command:
            raise _Unusable("the command contains a NUL byte, which no command line can carry")
        value = args.get("workdir")
        named = self._resolve(value, self.cwd) if isinstance(value, str) and value else self.cwd
        located = self._locate(named)
        call = _Call((tool, "tool", "", None), named, command)
        if located is None:
            call.outside = named
        real = located.real if located is not None else named
        workdir = None if real == self.real_cwd else real
        prefix = command_prefix(command, lambda argument: self._argument_ok(argument, named))
        if prefix is None:
            call.key = (tool, "exact", command, workdir)
        else:
            call.key = (tool, "prefix", prefix, workdir)
        return call

    def _argument_ok(self, argument: str, workdir: str) -> bool:
        """Whether a command argument may appear in a command a prefix rule covers: not a path outside the
        workspace (absolute, `~`, `..`, or through a symlink), nor a file that makes commands run code."""
        if "\x00" in argument:
            return False
        if argument.startswith("~") and os.path.expanduser(argument) == argument:
            return False  # `~-`, `~+`, `~nobody`: the shell's meaning, not one we can judge
        try:
            located = locate(resolve(argument, workdir), self.roots, self.real_roots)
        except ValueError:
            return False
        if located is None or protected_reason(located.rel) is not None:
            return False
        return located.named_rel == located.rel or protected_reason(located.named_rel) is None

    def scope_for(self, tool: str, args: Any) -> Scope:
        """What an "always" answer for this call would cover, with its display fields for the label."""
        external = self.external_tools.get(tool)
        if external is not None:
            return external.tool_scope(tool)
        tool, kind, value, workdir = self._examine(tool, self.config.classes.get(tool), args).key
        scope = Scope(tool, kind, value, workdir=workdir)
        if scope.kind == "path":
            assert isinstance(scope.value, str)
            return dataclasses.replace(scope, display=self._display(scope.value))
        if scope.workdir is not None:
            return dataclasses.replace(scope, workdir_display=self._display(scope.workdir))
        return scope

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

    def _display(self, real: str) -> str:
        rel = relative_inside(real, self.real_cwd)
        return rel if rel is not None else display_path(real, self.cwd)

    def _reject_rule_for(self, tool: str, call: _Call) -> Rule | None:
        argv: tuple[str, ...] | None = None
        for rule in self._rejects:
            scope = rule.scope
            if scope.tool != tool:
                continue
            if scope.kind == "tool":
                return rule
            if scope.kind == "prefix" and call.command is not None:
                # Broader than an allow rule on purpose: every command starting with the prefix.
                if argv is None:
                    try:
                        argv = tuple(shlex.split(call.command))
                    except ValueError:
                        argv = ()
                if argv[: len(scope.value)] == scope.value:
                    return rule
            elif scope.kind == "exact":
                if call.command == scope.value:
                    return rule
            elif scope.kind == "path":
                if scope.value in (call.key[2], call.named):
                    return rule
            elif scope.key() == call.key:
                return rule
        return None

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
            rule = self._reject_rule_for(tool, call)
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
                return Decision("ask", self._outside_reason(call), offer_always=False)
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

    def _outside_reason(self, call: _Call) -> str:
        path = call.outside or ""
        through = "" if self._spelled_outside(path) else " (through a symbolic link)"
        if call.command is not None:
            return f"The command would run in {path}, outside the workspace{through}."
        return f"{path} is outside the workspace{through}."

    def _spelled_outside(self, path: str) -> bool:
        return all(relative_inside(path, root) is None for root in (*self.roots, *self.real_roots))

    def _plan_safe(self, tool: str) -> bool:
        """An MCP tool that says it only reads (`readOnlyHint`) may run in plan mode; it still asks."""
        external = self.external_tools.get(tool)
        return external is not None and external.read_only

    def server_scope_for(self, tool: str) -> Scope | None:
        """The wider "always" an MCP tool's question also offers: every tool of its server."""
        external = self.external_tools.get(tool)
        return external.server_scope(tool) if external is not None else None

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


@dataclass(frozen=True, slots=True)
class AlwaysScopes:
    """What the "always" answers of one question would cover, as the labels the user reads: `allow` is
    None when no rule may cover the call (the question then offers no "Always allow")."""

    allow: str | None
    reject: str
    server: str | None = None  # an MCP tool's wider answer: every tool of its server
    remembered_for: str = REMEMBERED_FOR_SESSION  # how long an "always" answer lasts, in words


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


# --- external tools (MCP servers) -----------------------------------------------------------------
# A session's MCP tools are registered here by `acp_bridge.mcp` as they come and go. They ask by default
# (no class), whatever their annotations say: annotations are the server's claims. `readOnlyHint: true`
# only lets a tool run in plan mode (still asking). An "always" answer covers the one tool of the one
# server (scope kind "tool", its value the server), or every tool of the server when the user picks that
# option (scope kind "server").


@dataclass(frozen=True, slots=True)
class ExternalTool:
    """An MCP tool as the policy sees it: its server, and whether it says it only reads."""

    server: str
    tool: str
    read_only: bool = False

    def tool_scope(self, name: str) -> Scope:
        return Scope(name, "tool", self.server, f"{self.server}: {self.tool}")

    def server_scope(self, name: str) -> Scope:
        return Scope(f"mcp server {self.server}", "server", self.server, self.server)


def _external_label(scope: Scope) -> str:
    if scope.kind == "server":
        return f"every tool of MCP server `{scope.display or scope.value}`"
    return f"every `{scope.display or scope.tool}` call"


def _server_scope_matches(rule: Scope, call: Scope | None) -> bool:
    """A server rule covers the calls of its server's tools (whose tool scope names the server)."""
    return call is not None and call.kind == "tool" and bool(call.value) and call.value == rule.value
