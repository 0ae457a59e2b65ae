"""Property tests (hypothesis) of `SessionPermissions.decide` on real temporary directories with real
symlinks, the files and links changing between decisions:

- no sequence of remembered rules, modes, `--allow-tool` settings and symlink swaps ever lets a `read`,
  `write`, `edit`, `glob` or `grep` outside the workspace run without asking (except in `full_access`);
  `glob` and `grep` are run for real whenever allowed, and nothing they return may come from outside;
- an allowed `write`/`edit` never lands in `.git` (by name or through a link), outside `full_access`;
- a path with a NUL byte is denied, in every mode;
- a rule made from command A allows command B only if B is A, or B is what A's label says: the same
  argv prefix, the same working directory, and nothing dangerous for its program (the dangers are written
  here from the threat list, independently of the policy's own tables).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_bridge.permissions.policy import PolicyConfig, SessionPermissions
from acp_bridge.permissions.scope import Scope
from presenters.glob import glob_tool
from presenters.grep import grep_tool
from registry_core import Agent, ToolExecutionInput, ToolRegistry, ToolSuccess

OUTSIDE_MARK = "OUTSIDE-SECRET"
MODES = ("default", "accept_edits", "plan", "full_access")
FILE_TOOLS = ("read", "write", "edit")


@dataclass
class World:
    workspace: str  # real path
    outside: str  # real path
    registry: ToolRegistry


@contextmanager
def world() -> Iterator[World]:
    """ws/ with files, a .git directory and links in and out; outside/ beside it holding marked files."""
    with tempfile.TemporaryDirectory(prefix="acp-perm-prop-") as tmp:
        base = Path(os.path.realpath(tmp))
        ws, out = base / "ws", base / "outside"
        for d in (ws / "src", ws / ".git", ws / "sub", out / "dir"):
            d.mkdir(parents=True)
        for f in ("notes.txt", "src/app.py", ".git/config", "swap", "sub/b.txt"):
            (ws / f).write_text("inside\n")
        for f in ("secret.txt", "dir/x.conf"):
            (out / f).write_text(OUTSIDE_MARK + "\n")
        links = {
            "in_link": ws / "src" / "app.py",
            "out_file": out / "secret.txt",
            "out_dir": out,
            "git_alias": ws / ".git",
            "dangling": out / "new.txt",
        }
        for name, target in links.items():
            (ws / name).symlink_to(target)
        registry = ToolRegistry()
        registry.register(glob_tool())
        registry.register(grep_tool(backend="python"))
        yield World(str(ws), str(out), registry)


# --- path shapes -------------------------------------------------------------------------------------

SEGMENTS = [
    "..", ".", "src", "sub", "out_dir", "out_file", "in_link", "git_alias", "swap", "dangling", "secret.txt",
    "notes.txt", "config", ".git", ".GIT", "dir", "outside", "ws", "*", "**", "*.conf", "x\x00y",
]  # fmt: skip
FIXED = [
    "notes.txt", "src/app.py", "in_link", "out_file", "out_dir/secret.txt", "out_dir", "dangling",
    "git_alias/config", ".git/config", "../outside/secret.txt", "{out}/secret.txt", "{ws}/notes.txt",
    "{ws}/out_dir/dir", "~", "~/x", "sub/../../outside/dir/x.conf", "/etc/pass*", "/etc/**/*.conf",
    "../outside/*", "out_dir/*", "out_dir/**", "swap", "swap/x.conf", "swap/*", "a\x00b", "{ws}/../outside",
]  # fmt: skip
shapes = st.one_of(
    st.sampled_from(FIXED),
    st.tuples(
        st.sampled_from(["", "", "/", "~/", "{out}/", "{ws}/"]),
        st.lists(st.sampled_from(SEGMENTS), min_size=1, max_size=4).map("/".join),
    ).map("".join),
)


def _place(shape: str, w: World) -> str:
    return shape.replace("{out}", w.outside).replace("{ws}", w.workspace)


def _inside(real: str, w: World) -> bool:
    return real == w.workspace or real.startswith(w.workspace + os.sep)


def _lands(shape: str, w: World) -> str:
    """Where a file tool opening `shape` lands: named as the tools resolve it, then the OS follows links."""
    named = os.path.normpath(os.path.join(w.workspace, os.path.expanduser(shape)))
    return os.path.realpath(named)


def _touches_git(shape: str, w: World) -> bool:
    named = os.path.normpath(os.path.join(w.workspace, os.path.expanduser(shape)))
    real = os.path.realpath(named)
    return any(
        ".git" in os.path.relpath(p, w.workspace).lower().split(os.sep)
        for p in (named, real)
        if _inside(p, w)
    )


def _run(w: World, tool: str, args: dict[str, Any]) -> Any:
    agent = Agent(id="prop", cwd=w.workspace, roots=(w.workspace,))
    result = asyncio.run(w.registry.execute(ToolExecutionInput("c1", tool, args, agent=agent)))
    return result.value if isinstance(result, ToolSuccess) else None


def _search_leaks(w: World, tool: str, args: dict[str, Any]) -> list[str]:
    """Run the real search; what it returned from outside the workspace (empty: nothing)."""
    value = _run(w, tool, args)
    if value is None:
        return []
    if tool == "glob":
        # A name listed from a directory outside (a link named inside is only a name; its directory counts).
        return [p for p in value["paths"] if not _inside(os.path.realpath(os.path.dirname(p)), w)]
    leaks = [f["path"] for f in value["files"] if not _inside(os.path.realpath(f["path"]), w)]
    leaks += [ln["text"] for f in value["files"] for ln in f["lines"] if OUTSIDE_MARK in ln["text"]]
    return leaks


# --- steps -------------------------------------------------------------------------------------------

tools = st.sampled_from(("read", "write", "edit", "glob", "grep"))


def _args(tool: str, shape: str, extra: str | None) -> dict[str, Any]:
    if tool in FILE_TOOLS:
        return {"file_path": shape, "content": "x\n", "old_string": "inside", "new_string": "x"}
    if tool == "glob":
        return {"pattern": shape} if extra is None else {"pattern": shape, "path": extra}
    args: dict[str, Any] = {"pattern": f"{OUTSIDE_MARK}|inside", "output_mode": "content"}
    if extra is not None:
        args["glob"] = extra
    return {**args, "path": shape}


calls = st.tuples(tools, shapes, st.none() | shapes)
steps = st.one_of(
    st.tuples(st.just("remember"), calls),  # "always allow" exactly this call
    st.tuples(st.just("remember_tool"), tools),  # "always allow every `tool` call"
    st.tuples(st.just("swap"), st.sampled_from(["out_file", "out_dir", "in_file", "git", "file", "dir"])),
    st.tuples(st.just("mode"), st.sampled_from(MODES)),
    st.tuples(st.just("check"), calls),
)


def _swap(w: World, kind: str) -> None:
    """Replace ws/swap by a link (out of the workspace, to an inside file, to .git), a file or a dir."""
    swap = Path(w.workspace) / "swap"
    if swap.is_symlink() or swap.is_file():
        swap.unlink()
    elif swap.is_dir():
        for child in swap.iterdir():
            child.unlink()
        swap.rmdir()
    targets = {
        "out_file": Path(w.outside) / "secret.txt",
        "out_dir": Path(w.outside) / "dir",
        "in_file": Path(w.workspace) / "notes.txt",
        "git": Path(w.workspace) / ".git",
    }
    if kind in targets:
        swap.symlink_to(targets[kind])
    elif kind == "file":
        swap.write_text("inside\n")
    else:
        swap.mkdir()
        (swap / "x.conf").write_text("inside\n")


@settings(max_examples=250, deadline=None)
@given(
    allow_tools=st.sets(st.sampled_from(("read", "write", "edit", "glob", "grep"))),
    script=st.lists(steps, min_size=1, max_size=12),
)
def test_no_rule_mode_or_symlink_swap_lets_a_file_or_search_call_reach_outside_without_asking(
    allow_tools: set[str], script: list[tuple[str, Any]]
) -> None:
    with world() as w:
        perms = SessionPermissions(
            PolicyConfig(allow_tools=frozenset(allow_tools)), w.workspace, (w.workspace,)
        )
        for action, what in script:
            if action == "remember":
                tool, shape, extra = what
                args = _args(tool, _place(shape, w), extra and _place(extra, w))
                perms.remember(perms.scope_for(tool, args), allow=True)
            elif action == "remember_tool":
                perms.remember(Scope(what, "tool"), allow=True)
            elif action == "swap":
                _swap(w, what)
            elif action == "mode":
                perms.mode = what
            else:
                _check(w, perms, *what)


def _check(w: World, perms: SessionPermissions, tool: str, shape: str, extra: str | None) -> None:
    shape = _place(shape, w)
    extra = extra and _place(extra, w)
    args = _args(tool, shape, extra)
    decision = perms.decide(tool, args)
    names_files = tool in ("glob", "grep") and extra is not None  # glob's path, grep's glob filter
    if "\x00" in shape or (names_files and "\x00" in (extra or "")):
        assert decision.kind == "deny", (tool, args, decision)
        return
    if decision.kind != "allow" or perms.mode == "full_access":
        return
    if tool in FILE_TOOLS:
        assert _inside(_lands(shape, w), w), (tool, shape, decision)
        if tool != "read":
            assert not _touches_git(shape, w), (tool, shape, decision)
    else:
        assert _search_leaks(w, tool, args) == [], (tool, args, decision)


# --- commands ----------------------------------------------------------------------------------------

# What the threat list says must never ride on a prefix rule, per program (independent of the policy).
RUNS_OR_DESTROYS = {
    "find", "xargs", "awk", "gawk", "sed", "env", "sudo", "doas", "nice", "timeout", "nohup",
    "setsid", "exec", "eval", "command", "builtin", "rm", "mv", "cp", "dd", "chmod", "chown", "truncate",
    "shred", "npx",
}  # fmt: skip
# Dangerous as the word right after the program (a sub-command, or a global option before it).
DANGEROUS_FIRST = {
    "git": {"config", "clean", "reset", "push", "checkout", "-c", "-C", "--no-pager", "--exec-path=x"},
    "npm": {"exec", "install", "x", "--prefix"},
    "go": {"generate"},
    "cargo": {"install"},
}  # fmt: skip
# Dangerous anywhere after the program.
DANGEROUS_FOR = {
    "git": {"-c", "--config", "--output=/tmp/x", "--ext-diff", "--upload-pack=x", "--exec-path=x"},
    "npm": {"--script-shell=x", "--prefix"},
    "make": {"-f", "--eval=x", "CC=x"},
    "rg": {"--pre", "--pre=x"},
    "go": {"-toolexec=x"},
    "cargo": {"--config"},
}  # fmt: skip
# An interpreter runs the script (or `-m` module) it is given, with that one's own arguments: only another
# option before it (inline code: -c, -e) is dangerous.
INTERPRETERS = {"python3", "perl"}
EVERYWHERE = {"/etc", "~/.ssh", "/", "$(id)", "`id`", ";", "&&", "|", ">", "out.txt>", "$HOME", "*", "*.py"}
UP = "../x"  # outside when the command runs in the workspace root, inside from `sub`
PROGRAMS = [
    "git",
    "npm",
    "make",
    "rg",
    "go",
    "cargo",
    "ls",
    "cat",
    "pytest",
    *INTERPRETERS,
    *RUNS_OR_DESTROYS,
]
WORDS = [
    "status", "log", "test", "run", "build", "src", "a.txt", "app.py", "-la", "--oneline", "--", "--watch",
    "-q", "-v", "x", *{w for ws in (*DANGEROUS_FOR.values(), *DANGEROUS_FIRST.values()) for w in ws},
    *EVERYWHERE, UP, "-exec", "-delete",
    "-c", "-e", "-m",
]  # fmt: skip
# Commands people approve, and random ones, each followed by random words.
BASES = [
    "git log", "git status", "git diff", "git --no-pager log", "npm test", "npm run build", "make test",
    "rg foo", "python3 app.py", "python3 -m pytest", "perl script.pl", "ls -la", "cat a.txt", "pytest -q",
    "go test", "cargo test", "find . -name x", "awk x a.txt", "sed -n 1p a.txt", "rm -rf build",
]  # fmt: skip
commands = st.tuples(
    st.sampled_from(BASES) | st.sampled_from(PROGRAMS), st.lists(st.sampled_from(WORDS), max_size=3)
).map(lambda pw: " ".join([pw[0], *pw[1]]))
workdirs = st.sampled_from([None, ".", "sub", "/", "..", "~"])


def _dangerous(command: str, workdir: str, w: World) -> bool:
    words = command.split()
    up_is_outside = not _inside(os.path.normpath(os.path.join(workdir, UP)), w)
    return (
        words[0] in RUNS_OR_DESTROYS
        or (up_is_outside and UP in words)
        or (words[0] in INTERPRETERS and len(words) > 1 and words[1].startswith("-") and words[1] != "-m")
        or any(w in EVERYWHERE or any(c in w for c in ";&|>$`") for w in words)
        or (len(words) > 1 and words[1] in DANGEROUS_FIRST.get(words[0], ()))
        or any(w in DANGEROUS_FOR.get(words[0], ()) for w in words[1:])
    )


def _same_dir(a: str | None, b: str | None, cwd: str) -> bool:
    return os.path.realpath(os.path.join(cwd, a or ".")) == os.path.realpath(os.path.join(cwd, b or "."))


@settings(max_examples=600, deadline=None)
@given(approved=commands, later=commands, suffix=st.lists(st.sampled_from(WORDS), max_size=3),
       approved_in=workdirs, later_in=workdirs, derive=st.booleans())  # fmt: skip
def test_a_command_rule_never_covers_a_command_outside_its_shown_scope(
    approved: str,
    later: str,
    suffix: list[str],
    approved_in: str | None,
    later_in: str | None,
    derive: bool,
) -> None:
    if derive:  # most interesting: the approved command with more words after it
        later = " ".join([approved, *suffix])
    with world() as w:
        perms = SessionPermissions(PolicyConfig(), w.workspace, (w.workspace,))
        first = (
            {"command": approved} if approved_in is None else {"command": approved, "workdir": approved_in}
        )
        scope = perms.scope_for("bash", first)
        perms.remember(scope, allow=True)
        second = {"command": later} if later_in is None else {"command": later, "workdir": later_in}
        label = scope.label()
        # The label says what is covered: the exact command, or `prefix` commands.
        if scope.kind == "exact":
            assert label.startswith(f"the command `{approved}`")
        else:
            assert isinstance(scope.value, tuple)
            assert label.startswith(f"`{shlex.join(scope.value)}` commands")
            assert shlex.split(approved)[: len(scope.value)] == list(scope.value)
        if perms.decide("bash", second).kind != "allow":
            return
        assert _same_dir(approved_in, later_in, w.workspace), (approved_in, later_in)
        assert _inside(os.path.realpath(os.path.join(w.workspace, os.path.expanduser(later_in or "."))), w)
        if later.strip() == approved.strip():
            return
        assert scope.kind == "prefix", (approved, later, label)
        assert isinstance(scope.value, tuple)
        assert shlex.split(later)[: len(scope.value)] == list(scope.value), (approved, later)
        workdir = os.path.realpath(os.path.join(w.workspace, later_in or "."))
        assert not _dangerous(later, workdir, w), (approved, later, label)
