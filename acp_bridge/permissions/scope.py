"""What an "always" answer covers (`Scope`), the rule it becomes (`Rule`), and the words both are shown in.

Per kind of tool: bash, the command's argv prefix (`npm test`, `python3 app.py`) or only the exact command
(`command_scope`), in the directory it ran in; file tools, the tool and the file as resolved (symlinks
followed); web_fetch, the host and port (`localhost:8000` never covers `localhost:6379`); an MCP tool, that
tool of its server, or every tool of the server (`external`); other tools, the tool.

**Invariant:** an allow rule never covers more than its label says. It covers a call exactly when the
call's own scope equals the rule's (`Scope.key()`: the policy keeps its allow rules in a dict by it, so the
check is one lookup). A reject rule may cover more (`covering_reject`): rejecting more than was asked is
safe.

Must not: decide anything (`policy` does), nor touch the file system: the scopes are computed by
`call_facts`, from paths already resolved.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, Protocol

# How long an "always" answer lasts, as the options and denials name it: this session, unless the
# session's permissions say otherwise (`rules_store.ProjectPermissions`: "this project").
REMEMBERED_FOR_SESSION = "this session"

ScopeKind = Literal["prefix", "exact", "path", "host", "tool", "server"]
ScopeKey = tuple[str, ScopeKind, "tuple[str, ...] | str", "str | None"]


@dataclass(frozen=True, slots=True)
class Scope:
    """What one "always" answer covers. `value` is an argv prefix, a command, a file's real path, a
    `host:port`, or an MCP tool's server.
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
        if self.kind == "server":
            return f"every tool of MCP server `{self.display or self.value}`"
        if self.kind == "tool" and self.value:  # an MCP tool: its value names the server
            return f"every `{self.display or self.tool}` call"
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


class CallScope(Protocol):
    """What a reject rule is matched against: the call's own scope key, the file as named and the command
    (`call_facts.CallFacts`)."""

    @property
    def key(self) -> ScopeKey: ...

    @property
    def named(self) -> str | None: ...

    @property
    def command(self) -> str | None: ...


def covering_reject(rejects: Iterable[Rule], tool: str, call: CallScope) -> Rule | None:
    """The first of `rejects` that covers a call of `tool`: broader than an allow rule on purpose, a prefix
    rule covers every command starting with its prefix, and a path rule the file as named too."""
    argv: tuple[str, ...] | None = None
    for rule in rejects:
        scope = rule.scope
        if scope.tool != tool:
            continue
        if scope.kind == "tool":
            return rule
        if scope.kind == "prefix" and call.command is not None:
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
