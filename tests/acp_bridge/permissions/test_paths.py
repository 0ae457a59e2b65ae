"""The permission policy's path side, on real files and real symlinks: every path a call touches is judged
as it resolves now, before any remembered rule, `--allow-tool` or `accept_edits`; search patterns cannot
move a search out of the workspace; files that make later commands run code always ask; an impossible
path is a denial, never an exception."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge import mapping
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and, beside it, a directory outside it holding a secret."""
    workspace = tmp_path / "ws"
    outside = tmp_path / "outside"
    (workspace / "src").mkdir(parents=True)
    outside.mkdir()
    (workspace / "notes.txt").write_text("notes\n")
    (workspace / "src" / "app.py").write_text("print(1)\n")
    (outside / "secret.txt").write_text("secret\n")
    (outside / "app.conf").write_text("x\n")
    return workspace, outside


def _perms(workspace: Path, **config: Any) -> SessionPermissions:
    return SessionPermissions(PolicyConfig(**config), str(workspace), (str(workspace),))


def _always_allow(perms: SessionPermissions, tool: str, args: dict[str, Any]) -> None:
    perms.remember(perms.scope_for(tool, args), allow=True)


# --- item 1: the workspace test comes before any rule, on the path as it resolves now ---------------


@pytest.mark.parametrize("tool", ["write", "edit", "read"])
def test_a_file_rule_does_not_follow_the_file_once_it_is_a_symlink_out_of_the_workspace(
    world: tuple[Path, Path], tool: str
) -> None:
    workspace, outside = world
    perms = _perms(workspace)
    args = {"file_path": "notes.txt", "content": "x", "old_string": "n", "new_string": "m"}
    _always_allow(perms, tool, args)
    assert perms.decide(tool, args).kind == "allow"
    (workspace / "notes.txt").unlink()
    (workspace / "notes.txt").symlink_to(outside / "secret.txt")
    decision = perms.decide(tool, args)
    assert decision.kind == "ask"
    assert "outside the workspace" in (decision.reason or "")
    assert "symbolic link" in (decision.reason or "")
    assert not decision.offer_always


def test_a_file_rule_covers_its_file_by_any_spelling_but_not_the_file_its_name_later_links_to(
    world: tuple[Path, Path],
) -> None:
    workspace, _ = world
    perms = _perms(workspace)
    _always_allow(perms, "write", {"file_path": "notes.txt"})
    assert perms.decide("write", {"file_path": str(workspace / "src" / ".." / "notes.txt")}).kind == "allow"
    (workspace / "notes.txt").unlink()
    (workspace / "notes.txt").symlink_to(workspace / "src" / "app.py")
    assert perms.decide("write", {"file_path": "notes.txt"}).kind == "ask"  # the rule named notes.txt


@pytest.mark.parametrize("mode", ["default", "accept_edits", "plan"])
def test_outside_the_workspace_asks_in_every_mode_but_full_access_even_for_allow_tool(
    world: tuple[Path, Path], mode: str
) -> None:
    workspace, outside = world
    perms = _perms(workspace, mode=mode, allow_tools=frozenset({"read", "write", "glob"}))
    for tool in ("read", "write"):
        decision = perms.decide(tool, {"file_path": str(outside / "secret.txt")})
        assert (decision.kind, decision.offer_always) == ("ask", False) or decision.kind == "deny"
    assert perms.decide("glob", {"pattern": "*", "path": str(outside)}).kind == "ask"
    full = _perms(workspace, mode="full_access")
    assert full.decide("write", {"file_path": str(outside / "secret.txt")}).kind == "allow"


def test_a_call_no_rule_may_cover_is_asked_without_an_always_allow_option(world: tuple[Path, Path]) -> None:
    workspace, outside = world
    perms = _perms(workspace)
    args = {"file_path": str(outside / "secret.txt")}
    decision = perms.decide("read", args)
    options = mapping.permission_options(
        perms.scope_for("read", args).label(), offer_always=decision.offer_always
    )
    assert [o["kind"] for o in options] == ["allow_once", "reject_once", "reject_always"]


# --- item 3: a glob pattern cannot move the search out of the workspace -------------------------------


@pytest.mark.parametrize(
    "pattern",
    ["/etc/pass*", "../outside/*", "/etc/**/*.conf", "../outside/secret.txt", "src/../../outside/*.conf"],
)
def test_a_glob_pattern_that_replaces_the_search_root_outside_asks_and_one_inside_does_not(
    world: tuple[Path, Path], pattern: str
) -> None:
    workspace, _ = world
    for inside in ("**/*.py", "src/*.py", "src/**", "*.{txt,md}", "./notes.txt", "src/../*.txt"):
        assert _perms(workspace).decide("glob", {"pattern": inside}).kind == "allow", inside
    for mode in ("default", "accept_edits", "plan"):
        perms = _perms(workspace, mode=mode, allow_tools=frozenset({"glob"}))
        _always_allow(perms, "glob", {"pattern": "*"})
        decision = perms.decide("glob", {"pattern": pattern})
        assert decision.kind == "ask", (mode, pattern)
        assert "outside the workspace" in (decision.reason or "")


def test_a_search_through_a_symlinked_directory_out_of_the_workspace_asks(world: tuple[Path, Path]) -> None:
    workspace, outside = world
    (workspace / "vendor").symlink_to(outside)
    perms = _perms(workspace)
    assert perms.decide("glob", {"pattern": "vendor/*.conf"}).kind == "ask"
    assert perms.decide("glob", {"pattern": "*.conf", "path": "vendor"}).kind == "ask"
    assert perms.decide("grep", {"pattern": "secret", "path": "vendor"}).kind == "ask"
    assert perms.decide("grep", {"pattern": "x", "path": "../outside"}).kind == "ask"
    # grep's `glob` filters files below its root (matched relative to it): it cannot move the search.
    assert perms.decide("grep", {"pattern": "x", "glob": "../outside/*"}).kind == "allow"


# --- item 4: files that make later commands run code always ask -----------------------------------


PROTECTED = [
    ".git/config",
    ".git/hooks/pre-commit",
    "sub/module/.git/config",
    "bare.git/hooks/post-checkout",
    ".envrc",
    ".env",
    ".env.local",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".vscode/launch.json",
    ".idea/workspace.xml",
    ".husky/pre-commit",
    ".pre-commit-config.yaml",
    ".github/workflows/ci.yml",
    ".gitlab-ci.yml",
    ".npmrc",
    ".yarnrc.yml",
    ".cargo/config.toml",
    "bunfig.toml",
    "lefthook.yml",
    "project.code-workspace",
    ".venv/lib/python3.11/site-packages/evil.pth",
    ".GIT/CONFIG",  # a case-insensitive file system opens .git/config
    ".g\u200cit/config",  # HFS+ ignores the zero-width non-joiner: .git/config there
]


@pytest.mark.parametrize("rel", PROTECTED)
def test_a_change_to_a_file_that_makes_commands_run_code_asks_even_with_a_rule_or_accept_edits(
    world: tuple[Path, Path], rel: str
) -> None:
    workspace, _ = world
    for mode in ("default", "accept_edits"):
        perms = _perms(workspace, mode=mode, allow_tools=frozenset({"write"}))
        args = {"file_path": rel, "content": "x"}
        _always_allow(perms, "write", args)
        decision = perms.decide("write", args)
        assert (decision.kind, decision.offer_always) == ("ask", False), (mode, rel)
        assert "run code" in (decision.reason or "")
        assert perms.decide("read", {"file_path": rel}).kind == "allow"  # reading it arms nothing
    assert _perms(workspace, mode="full_access").decide("write", {"file_path": rel}).kind == "allow"


def test_project_files_the_projects_own_commands_run_are_ordinary_edits_unlike_hook_files(
    world: tuple[Path, Path],
) -> None:
    workspace, _ = world
    perms = _perms(workspace, mode="accept_edits")
    for rel in ("package.json", "Makefile", "pyproject.toml", "src/app.py", ".gitignore", "docs/env.md"):
        assert perms.decide("write", {"file_path": rel}).kind == "allow", rel
    for rel in (".husky/pre-commit", ".git/hooks/pre-push", ".envrc"):
        assert perms.decide("write", {"file_path": rel}).kind == "ask", rel


def test_a_protected_file_reached_through_a_symlinked_directory_still_asks(world: tuple[Path, Path]) -> None:
    workspace, _ = world
    (workspace / ".git" / "hooks").mkdir(parents=True)
    (workspace / "cfg").symlink_to(workspace / ".git")  # cfg/config is .git/config
    (workspace / "hook").symlink_to(workspace / ".git" / "hooks" / "pre-commit")
    perms = _perms(workspace, mode="accept_edits")
    assert perms.decide("edit", {"file_path": "cfg/config"}).kind == "ask"
    assert perms.decide("write", {"file_path": "hook"}).kind == "ask"
    assert perms.decide("write", {"file_path": "cfg/hooks/post-merge"}).kind == "ask"


def test_a_file_written_through_a_dot_git_symlink_to_an_ordinary_directory_still_asks(
    world: tuple[Path, Path],
) -> None:
    workspace, _ = world
    (workspace / "store").mkdir()
    (workspace / ".git").symlink_to(workspace / "store")  # git reads .git/config, i.e. store/config
    perms = _perms(workspace, mode="accept_edits")
    assert perms.decide("write", {"file_path": ".git/config"}).kind == "ask"


# --- item 10 (policy): an impossible path is that call's denial, never an exception -------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"file_path": "a.txt\x00.md"}),
        ("write", {"file_path": "notes.txt\x00", "content": "x"}),
        ("edit", {"file_path": "\x00", "old_string": "a", "new_string": "b"}),
        ("glob", {"pattern": "src\x00/*.py"}),
        ("glob", {"pattern": "*.py", "path": "sr\x00c"}),
        ("glob", {"pattern": "*/x\x00y"}),  # in the wildcard part: no file can match, and it says so
        ("grep", {"pattern": "x", "glob": "*.p\x00y"}),
        ("grep", {"pattern": "x", "path": "~\x00"}),
        ("bash", {"command": "ls", "workdir": "src\x00"}),
        ("bash", {"command": "cat a\x00b"}),
        ("read", {"file_path": "\ud800.txt"}),  # a lone surrogate: JSON can carry it, no file name can
    ],
)
def test_an_impossible_path_is_denied_with_a_reason_in_every_mode(
    world: tuple[Path, Path], tool: str, args: dict[str, Any]
) -> None:
    workspace, _ = world
    for mode in ("default", "accept_edits", "plan", "full_access"):
        perms = _perms(workspace, mode=mode)
        decision = perms.decide(tool, args)
        assert decision.kind == "deny", (mode, tool, args)
        assert decision.reason and decision.note
        perms.scope_for(tool, args)  # what the question would show never raises either
