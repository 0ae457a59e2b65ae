"""A session's permission choices in its log: the mode and the remembered "always" rules, so `session/load`
restores them with the conversation.

Every change the user makes (a mode switch, an "always" answer, `/forget`) appends one
`session_log.PermissionsChanged` holding the whole state (stored as `{"type": "permissions", "mode",
"rules": [{"allow", "scope": {...}}]}`); the last one wins on load. A scope is written field by field and
read back leniently: unknown fields are ignored (a log written by a newer version), missing ones take
their defaults, and a rule that cannot be rebuilt, or whose scope today's policy would no longer offer
for the same command, is dropped rather than restored wider than the user chose (a prefix rule such as
`rm` commands, once the policy narrows `rm` to exact commands, is not brought back).

Must not: change what `permissions` decides; it only stores and restores what the user chose.
"""

from __future__ import annotations

import dataclasses
import logging
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

from acp_bridge.history.session_log import PermissionsChanged
from acp_bridge.permissions.policy import MODES, ModeId, PolicyConfig, SessionPermissions
from acp_bridge.permissions.scope import Rule, Scope, ScopeKind

log = logging.getLogger(__name__)


class RecordedPermissions(SessionPermissions):
    """`SessionPermissions` that call `on_change` after each change of the remembered rules (the gate
    remembers an "always" answer itself; mode switches go through the session, which records them)."""

    def __init__(
        self, config: PolicyConfig, cwd: str, roots: tuple[str, ...], on_change: Callable[[], None]
    ) -> None:
        super().__init__(config, cwd, roots)
        self._on_change = on_change

    def remember(self, scope: Scope, allow: bool) -> Rule:
        rule = super().remember(scope, allow)
        self._on_change()
        return rule

    def forget(self) -> int:
        count = super().forget()
        if count:
            self._on_change()
        return count

    def revoke(self, index: int) -> Rule | None:
        """Forget the rule at `index` (0-based, in `rules` order); None when there is no such rule."""
        if not 0 <= index < len(self.rules):
            return None
        rule = self.rules[index]
        self.replace_rules(self.rules[:index] + self.rules[index + 1 :])
        self._on_change()
        return rule


def _to_json(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_to_json(item) for item in value]
    return value


def _from_json(value: Any) -> Any:
    # Scopes are frozen and hashable: every JSON array comes back as a tuple; no scope field is an object.
    if isinstance(value, list):
        return tuple(_from_json(item) for item in value)
    if isinstance(value, Mapping):
        raise TypeError("a scope field cannot be an object")
    return value


def rule_to_json(rule: Rule) -> dict[str, Any]:
    # Fields at their default are left out, so a log stays readable by a version that lacks them.
    scope = {
        f.name: _to_json(getattr(rule.scope, f.name))
        for f in dataclasses.fields(rule.scope)
        if f.default is dataclasses.MISSING or getattr(rule.scope, f.name) != f.default
    }
    return {"allow": rule.allow, "scope": scope}


def rule_from_json(raw: object, permissions: SessionPermissions) -> Rule | None:
    """The rule `raw` describes, or None when it cannot be rebuilt as it was shown to the user."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("allow"), bool):
        return None
    fields = raw.get("scope")
    if not isinstance(fields, Mapping):
        return None
    known = {f.name for f in dataclasses.fields(Scope)}
    try:
        scope = Scope(**{name: _from_json(value) for name, value in fields.items() if name in known})
    except TypeError:  # a field this version requires is missing
        return None
    if not isinstance(scope.tool, str) or scope.kind not in get_args(ScopeKind):
        return None
    if scope.kind == "prefix":
        value = scope.value
        if not isinstance(value, tuple) or not value or not all(isinstance(v, str) for v in value):
            return None
        # Kept only when the policy would offer this very scope for the command it covers today.
        args = {"command": shlex.join(value)}
        if scope.workdir is not None:
            args["workdir"] = scope.workdir
        if permissions.scope_for(scope.tool, args) != scope:
            return None
    elif not isinstance(scope.value, str):
        return None
    return Rule(scope, raw["allow"])


def permissions_record(permissions: SessionPermissions) -> PermissionsChanged:
    return PermissionsChanged(permissions.mode, tuple(rule_to_json(rule) for rule in permissions.rules))


def permissions_event(permissions: SessionPermissions) -> dict[str, Any]:
    """`permissions_record` in its stored form."""
    return permissions_record(permissions).to_json()


@dataclass(frozen=True, slots=True)
class Restored:
    """What `restore` applied: the mode (None when the stored one is unknown here), the rules, and how
    many stored rules were dropped."""

    mode: ModeId | None
    rules: tuple[Rule, ...]
    dropped: int

    def note(self) -> str:
        """A short message for the user saying what came back with the session."""
        lines = ["Restored with this session:"]
        if self.mode is not None:
            lines.append(f"- permission mode: **{MODES[self.mode].name}**")
        lines += [f"- {rule.describe()}" for rule in self.rules]
        if self.dropped:
            lines.append(
                f"- {self.dropped} remembered rule{'s' if self.dropped != 1 else ''} not restored "
                "(no longer offered as stored); you will be asked again"
            )
        return "\n".join(lines)


def restore(permissions: SessionPermissions, stored: PermissionsChanged | Mapping[str, Any]) -> Restored:
    """Apply a logged permission state (the record, or its stored form) to a freshly made session's
    permissions."""
    event = stored if isinstance(stored, PermissionsChanged) else PermissionsChanged.from_json(stored)
    mode = event.mode
    restored_mode: ModeId | None = None
    if isinstance(mode, str) and mode in MODES:
        restored_mode = MODES[mode].id
        permissions.mode = restored_mode
    elif mode is not None:
        log.warning("stored permission mode %r is unknown here; keeping %s", mode, permissions.mode)
    rules: list[Rule] = []
    dropped = 0
    for raw in event.rules:
        rule = rule_from_json(raw, permissions)
        if rule is None:
            log.warning("stored permission rule not restored: %.200r", raw)
            dropped += 1
            continue
        # As `remember` does: a later answer for the same scope replaces an earlier one.
        rules = [r for r in rules if r.scope != rule.scope] + [rule]
    permissions.replace_rules(rules)
    return Restored(restored_mode, tuple(rules), dropped)
