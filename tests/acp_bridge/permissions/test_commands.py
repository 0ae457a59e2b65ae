"""What an "always" answer for a `bash` command covers: never a command more dangerous than the one
approved. Programs that run other programs or destroy data get exact-command rules; a prefix rule never
covers a command adding a dangerous option, a path outside the workspace, or another working directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_bridge import mapping
from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions


@pytest.fixture
def perms(tmp_path: Path) -> SessionPermissions:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (workspace / "out").symlink_to(tmp_path / "outside")
    return SessionPermissions(PolicyConfig(), str(workspace), (str(workspace),))


def _bash(command: str, workdir: str | None = None) -> dict[str, Any]:
    return {"command": command} if workdir is None else {"command": command, "workdir": workdir}


def _allow_always(perms: SessionPermissions, command: str, workdir: str | None = None) -> str:
    scope = perms.scope_for("bash", _bash(command, workdir))
    perms.remember(scope, allow=True)
    return scope.label()


# The examples, and the other programs that run programs or destroy data: exact rules only.
@pytest.mark.parametrize(
    ("approved", "dangerous"),
    [
        ("find . -name x", "find . -exec rm {} +"),
        ("find . -name x", "find . -delete"),
        ("awk '{print $1}' a.txt", "awk 'BEGIN{system(\"id\")}'"),
        ("sed -n 1p a.txt", "sed -i s/a/b/ a.txt"),
        ("xargs echo", "xargs rm"),
        ("gawk -F: -f fields.awk a.txt", "gawk -f evil.awk a.txt"),
        ("doas ls", "doas rm -rf /"),
        ("dd if=a.img of=b.img", "dd if=/dev/zero of=a.txt"),
        ("env", "env rm -rf x"),
        ("sudo ls", "sudo rm -rf /"),
        ("timeout 5 ls", "timeout 5 rm -rf x"),
        ("nohup ls", "nohup rm -rf x"),
        ("rm -rf build", "rm -rf target"),
        ("mv a b", "mv a ../c"),
        ("cp a b", "cp a .git/hooks/pre-commit"),
        ("chmod +x run.sh", "chmod -R 777 ."),
        ("git --no-pager log", "git config core.fsmonitor ./x"),
        ("git --no-pager log", "git --no-pager -c core.pager=./x log"),
        ("git config user.name", "git config core.hooksPath ."),
        ("git -C sub status", "git -C sub config core.pager ./x"),
        ("npm exec jest", "npm exec evil-package"),
        ("npx jest", "npx evil-package"),
        ("make", "make install"),
        ("curl -s http://127.0.0.1/", "curl -o run.sh http://127.0.0.1/"),
    ],
)
def test_programs_that_run_programs_or_destroy_data_get_exact_command_rules_only(
    perms: SessionPermissions, approved: str, dangerous: str
) -> None:
    label = _allow_always(perms, approved)
    assert label == f"the command `{approved}`"
    assert perms.decide("bash", _bash(approved)).kind == "allow"
    assert perms.decide("bash", _bash(dangerous)).kind == "ask"


@pytest.mark.parametrize(
    ("approved", "prefix", "covered", "not_covered"),
    [
        ("git log", "git log", "git log --oneline -5", "git log --output=/tmp/x"),
        ("git log", "git log", "git log -p", "git log --out=x"),  # git accepts abbreviations
        ("git log", "git log", "git log --stat", "git log -c core.pager=x"),
        ("git log", "git log", "git log -- '*.py'", "git log *"),  # `*` may expand to a file `--output=x`
        ("git diff", "git diff", "git diff --stat", "git diff --ext-diff"),
        ("git diff", "git diff", "git diff HEAD~1", "git diff --textconv"),
        ("git grep foo", "git grep", "git grep bar", "git grep -Ovim foo"),
        ("git fetch", "git fetch", "git fetch origin", "git fetch --upload-pack=./x origin"),
        ("rg foo", "rg", "rg -n bar src", "rg --pre ./x foo"),
        ("fd conf", "fd", "fd -e py", "fd -x rm"),
        ("sort a.txt", "sort", "sort -r a.txt", "sort -o a.txt b.txt"),
        ("make test", "make test", "make test -j4", "make test -f evil.mk"),
        ("make test", "make test", "make test -k", "make test install"),
        ("npm test", "npm test", "npm test -- --watch", "npm test --script-shell=./x"),
        ("npm run build", "npm run build", "npm run build -- --prod", "npm run build --prefix ../x"),
        ("cargo test", "cargo test", "cargo test --release", "cargo test --config build.rustc-wrapper=x"),
        ("go test ./...", "go test", "go test -v ./...", "go test -toolexec=./x ./..."),
        ("uv run pytest", "uv run pytest", "uv run pytest -q", "uv run pytest --with evil"),
        ("ls -la", "ls", "ls src", "ls /"),
        ("ls -la", "ls", "ls -R sub", "ls ~/.ssh"),
        ("ls -la", "ls", "ls sub/..", "ls ../.."),
        ("ls -la", "ls", "ls sub", "ls out/"),  # `out` is a symlink out of the workspace
        ("cat a.txt", "cat", "cat sub/b.txt", "cat .git/config"),
        ("python3 app.py", "python3 app.py", "python3 app.py --verbose", "python3 app.py /etc/passwd"),
        ("python -m pytest", "python -m pytest", "python -m pytest -x", "python -m pytest --rootdir=/ t"),
        ("python -m pip list", "python -m pip list", "python -m pip list -o", "python -m pip install x"),
        ("pytest -q", "pytest", "pytest tests/a.py", "pytest --rootdir=/ tests"),
    ],
)
def test_a_prefix_rule_never_covers_a_command_with_a_dangerous_option_or_an_outside_path(
    perms: SessionPermissions, approved: str, prefix: str, covered: str, not_covered: str
) -> None:
    label = _allow_always(perms, approved)
    assert label == f"`{prefix}` commands"
    assert perms.decide("bash", _bash(covered)).kind == "allow", covered
    assert perms.decide("bash", _bash(not_covered)).kind == "ask", not_covered


def test_a_rule_keeps_the_working_directory_it_was_made_in(perms: SessionPermissions) -> None:
    label = _allow_always(perms, "make test")
    assert label == "`make test` commands"
    assert perms.decide("bash", _bash("make test", "sub")).kind == "ask"
    assert perms.decide("bash", _bash("make test", ".")).kind == "allow"  # the session cwd itself
    sub_label = _allow_always(perms, "make test", "sub")
    assert sub_label == "`make test` commands in sub"
    assert perms.decide("bash", _bash("make test -j2", "sub")).kind == "allow"


@pytest.mark.parametrize("workdir", ["/", "..", "out", "~"])
def test_a_working_directory_outside_the_workspace_always_asks(
    perms: SessionPermissions, workdir: str
) -> None:
    _allow_always(perms, "ls")
    perms.remember(perms.scope_for("bash", _bash("ls", workdir)), allow=True)
    for mode in ("default", "accept_edits"):
        perms.mode = mode  # type: ignore[assignment]
        decision = perms.decide("bash", _bash("ls", workdir))
        assert (decision.kind, decision.offer_always) == ("ask", False)
        assert "outside the workspace" in (decision.reason or "")
    perms.mode = "full_access"
    assert perms.decide("bash", _bash("ls", workdir)).kind == "allow"


def test_always_reject_stays_broad_where_always_allow_is_exact(perms: SessionPermissions) -> None:
    allow_scope = perms.scope_for("bash", _bash("rm -f build.log"))
    reject_scope = perms.reject_scope_for("bash", _bash("rm -f build.log"))
    names = [
        o["name"] for o in mapping.permission_options(allow_scope.label(), reject_label=reject_scope.label())
    ]
    assert "Always allow the command `rm -f build.log` (this session)" in names
    assert "Always reject `rm` commands (this session)" in names
    perms.remember(reject_scope, allow=False)
    decision = perms.decide("bash", _bash("rm -rf target", "sub"))
    assert decision.kind == "deny"
    assert "always reject `rm` commands" in (decision.reason or "")
