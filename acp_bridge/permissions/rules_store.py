"""Remembered "always" rules that outlive their session: kept per project (`--remember project`), listed
with numbers by `/permissions` and revoked one by one (`/forget N`) or all (`/forget`).

A project is a session's cwd. Its rules live in `<state dir>/rules/<digest of the cwd>.json`
(`{"cwd", "rules": [...]}`, each rule as the session log stores it, `permission_log.rule_to_json`),
replaced atomically on every change. A session of that project starts with them; an "always" answer in
any of its sessions is added at once (read, merged, written back, so two sessions of one project do not
undo each other), and a revoked rule is removed from the file too. A stored rule comes back only as
today's policy would offer it (`permission_log.rule_from_json`), as with a reloaded session.

`describe` is the numbered listing of `/permissions` (the numbers `/forget N` takes), for both kinds of
session; `listing` is the same as data, for clients with a rules view.

Must not: decide anything (`permissions` does), or raise into a turn: an unreadable or unwritable file is
logged and the session goes on with what it has.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from acp_bridge.permissions.permission_log import RecordedPermissions, rule_from_json, rule_to_json
from acp_bridge.permissions.policy import MODES, PolicyConfig, SessionPermissions
from acp_bridge.permissions.scope import Rule, Scope

log = logging.getLogger(__name__)

REMEMBERED_FOR_PROJECT = "this project"


class ProjectRules:
    """The rule files of every project, under one directory (created on first write)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_of(self, cwd: str) -> Path:
        digest = hashlib.sha256(os.path.normpath(cwd).encode("utf-8", "surrogateescape")).hexdigest()
        return self.root / f"{digest[:32]}.json"

    def load(self, cwd: str, permissions: SessionPermissions) -> list[Rule]:
        """The project's rules, each rebuilt as today's policy would offer it (the others dropped)."""
        raw = self._read(cwd)
        rules: list[Rule] = []
        for item in raw:
            rule = rule_from_json(item, permissions)
            if rule is None:
                log.warning("project rule not restored: %.200r", item)
                continue
            rules = [r for r in rules if r.scope != rule.scope] + [rule]
        return rules

    def add(self, cwd: str, rule: Rule) -> None:
        stored = rule_to_json(rule)
        kept = [r for r in self._read(cwd) if not _same_scope(r, stored)]
        self._write(cwd, [*kept, stored])

    def remove(self, cwd: str, rules: list[Rule]) -> None:
        doomed = [rule_to_json(r) for r in rules]
        self._write(cwd, [r for r in self._read(cwd) if r not in doomed])

    def _read(self, cwd: str) -> list[Any]:
        try:
            raw = json.loads(self.path_of(cwd).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("the rules of project %s are unreadable: %s", cwd, exc)
            return []
        rules = raw.get("rules") if isinstance(raw, dict) else None
        return list(rules) if isinstance(rules, list) else []

    def _write(self, cwd: str, rules: list[Any]) -> None:
        path = self.path_of(cwd)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temp.write_text(json.dumps({"cwd": cwd, "rules": rules}, ensure_ascii=False), encoding="utf-8")
            os.replace(temp, path)
        except OSError as exc:
            log.warning("the rules of project %s were not saved: %s", cwd, exc)


def _same_scope(stored: Any, other: dict[str, Any]) -> bool:
    return isinstance(stored, dict) and stored.get("scope") == other["scope"]


class ProjectPermissions(RecordedPermissions):
    """A session's permissions whose "always" answers last for its project: they start with the
    project's rules, and every remembered, revoked or forgotten rule changes the project's file too."""

    def __init__(
        self,
        config: PolicyConfig,
        cwd: str,
        roots: tuple[str, ...],
        on_change: Callable[[], None],
        store: ProjectRules,
    ) -> None:
        super().__init__(config, cwd, roots, on_change)
        self.store = store
        self.remembered_for = REMEMBERED_FOR_PROJECT
        self.replace_rules(store.load(cwd, self))

    def adopt_project_rules(self) -> None:
        """Add the project's current rules to the ones a reloaded session came back with."""
        rules = list(self.rules)
        for rule in self.store.load(self.cwd, self):
            rules = [r for r in rules if r.scope != rule.scope] + [rule]
        self.replace_rules(rules)

    def remember(self, scope: Scope, allow: bool) -> Rule:
        rule = super().remember(scope, allow)
        self.store.add(self.cwd, rule)
        return rule

    def forget(self) -> int:
        gone = list(self.rules)
        count = super().forget()
        self.store.remove(self.cwd, gone)
        return count

    def revoke(self, index: int) -> Rule | None:
        rule = super().revoke(index)
        if rule is not None:
            self.store.remove(self.cwd, [rule])
        return rule


def describe(permissions: SessionPermissions) -> str:
    """`/permissions`: the mode and the remembered rules, numbered for `/forget N`."""
    mode = MODES[permissions.mode]
    lines = [f"Mode: **{mode.name}**: {mode.description}"]
    if permissions.rules:
        lines.append(f"Remembered for {permissions.remembered_for} (`/forget N` revokes one, `/forget` all):")
        lines += [f"{n}. {rule.describe()}" for n, rule in enumerate(permissions.rules, 1)]
    else:
        lines.append(f"No remembered rules in {permissions.remembered_for}.")
    return "\n".join(lines)


def listing(permissions: SessionPermissions) -> dict[str, Any]:
    """The rules as data (the `_acpBridge/listRules` answer): numbered as `/permissions` numbers them."""
    return {
        "mode": permissions.mode,
        "rememberedFor": permissions.remembered_for,
        "rules": [
            {
                "number": n,
                "description": rule.describe(),
                "allow": rule.allow,
                "tool": rule.scope.tool,
                "scope": rule.scope.label(),
            }
            for n, rule in enumerate(permissions.rules, 1)
        ],
    }
