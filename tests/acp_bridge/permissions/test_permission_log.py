"""`permission_log`: a session's mode and rules written to its log and read back, leniently but never wider
than the user chose. (The whole round trip through a restarted bridge is in test_bridge_store.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acp_bridge.permissions.permission_log import RecordedPermissions, permissions_event, restore
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions


def _permissions(tmp_path: Path) -> SessionPermissions:
    return SessionPermissions(PolicyConfig(), str(tmp_path), (str(tmp_path),))


def _stored(mode: str, *scopes: dict[str, Any], allow: bool = True) -> dict[str, Any]:
    return {"type": "permissions", "mode": mode, "rules": [{"allow": allow, "scope": s} for s in scopes]}


def test_every_rule_kind_and_the_mode_survive_a_round_trip_through_json(tmp_path: Path) -> None:
    changes: list[int] = []
    live = RecordedPermissions(PolicyConfig(), str(tmp_path), (str(tmp_path),), lambda: changes.append(1))
    live.mode = "accept_edits"
    for tool, args in [
        ("bash", {"command": "npm test --watch"}),
        ("bash", {"command": "make && make install"}),
        ("write", {"file_path": "notes.txt"}),
        ("web_fetch", {"url": "https://example.org/x"}),
        ("todo_write", {}),
    ]:
        live.remember(live.scope_for(tool, args), allow=tool != "web_fetch")
    assert len(changes) == 5  # each remembered rule is a change to log
    event = json.loads(json.dumps(permissions_event(live)))

    fresh = _permissions(tmp_path)
    version = fresh.version
    restored = restore(fresh, event)
    assert (restored.mode, restored.dropped) == ("accept_edits", 0)
    assert fresh.mode == "accept_edits" and fresh.rules == live.rules
    assert fresh.version > version  # decisions made before the restore are stale
    assert "always reject `web_fetch` from example.org" in restored.note()


def test_unknown_fields_are_ignored_and_missing_ones_take_their_defaults(tmp_path: Path) -> None:
    fresh = _permissions(tmp_path)
    scope = {"tool": "bash", "kind": "prefix", "value": ["git", "status"], "added_later": {"x": 1}}
    restored = restore(fresh, _stored("default", scope))
    assert restored.dropped == 0
    assert [r.describe() for r in fresh.rules] == ["always allow `git status` commands"]


def test_a_rule_that_cannot_be_rebuilt_as_shown_is_dropped_and_counted(tmp_path: Path) -> None:
    fresh = _permissions(tmp_path)
    unusable = [
        {"kind": "tool"},  # no tool
        {"tool": "bash", "kind": "everything"},  # a kind this version does not have
        {"tool": "bash", "kind": "exact", "value": ["not", "a", "string"]},
        {"tool": "write", "kind": "path", "value": {"nested": "object"}},
        # A prefix the policy does not offer (a bare interpreter would cover every script).
        {"tool": "bash", "kind": "prefix", "value": ["python3"]},
        {"tool": "read", "kind": "prefix", "value": ["cat"]},  # not a command tool
    ]
    restored = restore(fresh, _stored("plan", *unusable, {"tool": "todo_write", "kind": "tool"}))
    assert restored.dropped == len(unusable)
    assert [r.describe() for r in fresh.rules] == ["always allow every `todo_write` call"]
    assert fresh.mode == "plan"
    assert "6 remembered rules not restored" in restored.note()


def test_an_unknown_mode_keeps_the_configured_one(tmp_path: Path) -> None:
    fresh = _permissions(tmp_path)
    restored = restore(fresh, {"type": "permissions", "mode": "yolo", "rules": "not a list"})
    assert restored.mode is None and fresh.mode == "default" and fresh.rules == ()
