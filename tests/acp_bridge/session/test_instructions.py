"""The parts of the system prompt that need no bridge: instructions files read within their bounds and only
inside the roots, the folders a path lies in, the git probe on real repositories, the template's blocks
and fields, and the client's `systemPrompt` as ACP shapes it."""

from __future__ import annotations

import os
import subprocess
from datetime import date
from pathlib import Path

import pytest

from acp_bridge.common.errors import InvalidParams
from acp_bridge.session import environment, instructions
from acp_bridge.session.client_prompt import ClientSystemPrompt, read_client_prompt
from acp_bridge.session.environment import parse_status, probe_environment
from acp_bridge.session.instructions import MAX_FILE_BYTES, MAX_TOTAL_BYTES
from acp_bridge.session.prompt_context import touched_folders
from acp_bridge.session.system_prompt import (
    CODE_MODE_ONLY,
    MCP,
    build,
    compose,
    estimate_tokens,
    select_blocks,
    template_text,
)

EVERY_TOOL = {
    "read",
    "write",
    "edit",
    "bash",
    "grep",
    "glob",
    "web_fetch",
    "todo_write",
    "ask_user",
    "run_code",
    "task",
}


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=T", "-c", "user.email=t@example.com", *args],
        cwd=cwd, check=True, capture_output=True,
    )  # fmt: skip


# --- files ---------------------------------------------------------------------------------------------


def test_agents_md_wins_and_each_alternative_is_used_in_its_order(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "copilot-instructions.md").write_text("copilot")
    assert instructions.find_in_folder(str(tmp_path)) == str(tmp_path / ".github" / "copilot-instructions.md")
    (tmp_path / "GEMINI.md").write_text("gemini")
    assert instructions.find_in_folder(str(tmp_path)) == str(tmp_path / "GEMINI.md")
    (tmp_path / "CLAUDE.md").write_text("claude")
    assert instructions.find_in_folder(str(tmp_path)) == str(tmp_path / "CLAUDE.md")
    (tmp_path / "AGENTS.md").write_text("agents")
    (read,) = instructions.session_files([str(tmp_path)], include_user=False)
    assert (read.name, read.alternative, read.text) == ("AGENTS.md", False, "agents")


def test_a_long_file_is_cut_on_a_character_and_a_line_with_a_note(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text(("a" + "é" * 99 + "\n") * 400)  # 200 bytes a line (the cut falls inside an é)
    (read,) = instructions.session_files([str(tmp_path)], include_user=False)
    assert read.truncated and read.size == 80_000
    kept, note = read.text.split("\n\n[", 1)
    assert len(kept.encode()) <= MAX_FILE_BYTES and kept.endswith("é") and "\ufffd" not in kept
    assert kept.count("\n") == MAX_FILE_BYTES // 200 - 1  # whole lines only
    assert (
        note
        == f"This file is 80,000 bytes; only its first 32 KiB are included here. Read {agents} for the rest.]"
    )


def test_the_files_of_the_system_prompt_share_one_budget(tmp_path: Path) -> None:
    roots = []
    for name in ("one", "two", "three"):
        root = tmp_path / name
        root.mkdir()
        (root / "AGENTS.md").write_text("x" * 30_000)
        roots.append(str(root))
    one, two, three = instructions.session_files(roots, include_user=False)
    assert not one.truncated and not two.truncated
    assert three.truncated and len(three.text.split("\n\n[")[0]) == MAX_TOTAL_BYTES - 60_000


def test_a_link_out_of_the_workspace_is_named_not_read_and_one_inside_is_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("the key")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").symlink_to(secret)
    (skipped,) = instructions.session_files([str(ws)], include_user=False)
    assert skipped.text == "" and skipped.skipped == f"it links to {secret}, outside the workspace"
    (ws / "AGENTS.md").unlink()
    (ws / "rules.md").write_text("inside")
    (ws / "AGENTS.md").symlink_to(ws / "rules.md")
    (followed,) = instructions.session_files([str(ws)], include_user=False)
    assert followed.text == "inside" and followed.skipped is None


def test_a_fifo_named_agents_md_does_not_hang_the_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "AGENTS.md")
    read = instructions.read_file(
        str(tmp_path / "AGENTS.md"), "root", str(tmp_path), real_roots=[str(tmp_path)]
    )
    assert read.skipped == "it is not a regular file"


def test_changes_name_what_is_new_changed_and_removed(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("one")
    before = instructions.session_files([str(tmp_path)], include_user=False)
    assert instructions.session_stamps([str(tmp_path)], include_user=False) == instructions.stamps(before)
    (tmp_path / "AGENTS.md").write_text("two!")
    after = instructions.session_files([str(tmp_path)], include_user=False)
    assert instructions.changes(before, after) == [f"`{tmp_path}/AGENTS.md` changed"]
    (tmp_path / "AGENTS.md").unlink()
    (tmp_path / "CLAUDE.md").write_text("three")
    moved = instructions.session_files([str(tmp_path)], include_user=False)
    assert instructions.changes(after, moved) == [
        f"`{tmp_path}/CLAUDE.md` is new",
        f"`{tmp_path}/AGENTS.md` was removed",
    ]


def test_the_folders_a_path_lies_in_stop_at_its_root(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    roots = [str(root)]
    a, b = str(root / "a"), str(root / "a" / "b")
    assert instructions.folders_between(str(root / "a" / "b" / "f.py"), roots, itself=False) == [a, b]
    assert instructions.folders_between(b, roots, itself=True) == [a, b]
    assert instructions.folders_between(b, roots, itself=False) == [a]
    assert instructions.folders_between(str(root / "f.py"), roots, itself=False) == []
    assert instructions.folders_between(str(root), roots, itself=True) == []
    assert instructions.folders_between(str(tmp_path / "elsewhere" / "f.py"), roots, itself=False) == []
    assert instructions.folders_between(str(tmp_path / "ws-twin" / "x"), roots, itself=True) == []


def test_nested_files_skip_what_was_given_unless_it_changed(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "AGENTS.md").write_text("pkg rules")
    # A file looked in as a folder (a `path` argument may name either) simply has no instructions.
    folders = [str(tmp_path / "pkg"), str(tmp_path / "pkg" / "AGENTS.md")]
    (found,) = instructions.nested_files(folders, [str(tmp_path)], {}, MAX_TOTAL_BYTES)
    assert (found.folder, found.text) == (str(tmp_path / "pkg"), "pkg rules")
    given = {found.path: found.stamp}
    assert instructions.nested_files(folders, [str(tmp_path)], given, MAX_TOTAL_BYTES) == []
    (tmp_path / "pkg" / "AGENTS.md").write_text("pkg rules, revised")
    (again,) = instructions.nested_files(folders, [str(tmp_path)], given, MAX_TOTAL_BYTES)
    assert again.text == "pkg rules, revised"
    (spent,) = instructions.nested_files(folders, [str(tmp_path)], {}, 0)
    assert spent.skipped == "the 64 KiB for instructions were used up"


def test_the_folders_a_call_works_in(tmp_path: Path) -> None:
    ws = str(tmp_path)
    pkg, core = os.path.join(ws, "pkg"), os.path.join(ws, "pkg", "core")
    assert touched_folders("read", {"file_path": "pkg/core/m.py"}, ws, [ws]) == [pkg, core]
    assert touched_folders("read", {"file_path": "m.py"}, ws, [ws]) == []  # no thread hop for these
    assert touched_folders("glob", {"pattern": "core/*.py", "path": "pkg"}, ws, [ws]) == [pkg, core]
    assert touched_folders("grep", {"pattern": "x"}, ws, [ws]) == []
    assert touched_folders("bash", {"command": "make", "workdir": "pkg"}, ws, [ws]) == [pkg]
    assert touched_folders("mcp__fs__list", {"path": "pkg/core"}, ws, [ws]) == [pkg, core]
    assert touched_folders("read", {"file_path": "/etc/passwd"}, ws, [ws]) == []
    assert touched_folders("read", {"file_path": "bad\x00name"}, ws, [ws]) == []
    assert touched_folders("read", "not an object", ws, [ws]) == []


# --- the environment -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "branch", "tracking", "total"),
    [
        ("## main...origin/main [ahead 2, behind 1]\n M a.py\n?? b.py\n", "main",
         "ahead 2, behind 1, upstream origin/main", 2),
        ("## No commits yet on trunk\n?? x\n", "trunk", "no commits yet", 1),
        ("## HEAD (no branch)\n", None, "detached HEAD", 0),
        ("## topic\n", "topic", "", 0),
    ],
)  # fmt: skip
def test_the_branch_line_and_the_entries_are_read(
    output: str, branch: str | None, tracking: str, total: int
) -> None:
    state = parse_status(output)
    assert (state.repository, state.branch, state.tracking, state.total) == (True, branch, tracking, total)


def test_the_probe_reads_a_real_repository_and_says_what_is_not_one(tmp_path: Path) -> None:
    repo, plain = tmp_path / "repo", tmp_path / "plain"
    repo.mkdir()
    plain.mkdir()
    _git(repo, "init", "-q", "-b", "work")
    (repo / "tracked.txt").write_text("1")
    _git(repo, "add", "tracked.txt")
    _git(repo, "commit", "-q", "-m", "one")
    (repo / "tracked.txt").write_text("2")
    for i in range(environment.GIT_STATUS_LINES + 3):
        (repo / f"new{i:02}.txt").write_text("")
    env = probe_environment([str(repo), str(plain), str(tmp_path / "gone")], today=date(2030, 1, 2))
    assert env.today == "2030-01-02"
    work, not_one, gone = env.git
    assert (work.branch, work.total, work.entries[0]) == (
        "work",
        environment.GIT_STATUS_LINES + 4,
        " M tracked.txt",
    )
    assert len(work.entries) == environment.GIT_STATUS_LINES
    assert (not_one.repository, not_one.note) == (False, "not a git repository")
    assert gone.note == "the folder does not exist"
    assert not (repo / ".git" / "index.lock").exists()
    text = build(env, set())
    assert f"Working directory: `{repo}`; git: on branch `work`" in text
    assert "and 4 more" in text and f"`{plain}`; not a git repository" in text


def test_without_git_the_probe_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    (state,) = probe_environment([str(tmp_path)]).git
    assert state.note == "git is not installed, so its state is unknown"


# --- the template --------------------------------------------------------------------------------------


def test_blocks_are_kept_for_the_tools_the_session_has_and_comments_dropped() -> None:
    template = (
        "A $$5\n<!--\ndoc\n-->\n<!-- when: bash grep -->\nshell\n<!-- end -->\n"
        "<!-- when: mcp -->\nmcp\n<!-- end -->\nZ\n"
    )
    assert select_blocks(template, {"grep"}) == "A $$5\nshell\nZ\n"
    assert select_blocks(template, {MCP}) == "A $$5\nmcp\nZ\n"


def test_the_template_fills_every_field_and_stays_within_its_size() -> None:
    env = probe_environment(["/nonexistent/ws"], today=date(2030, 1, 2))
    full = compose(build(env, EVERY_TOOL | {MCP}), None)
    assert "$" not in full and "<!--" not in full
    assert estimate_tokens(full) <= 3_000
    for tool in EVERY_TOOL:
        assert f"`{tool}`" in full, tool
    bare = build(env, {"read"})
    assert "`bash` runs" not in bare and "`run_code`" not in bare and "MCP" not in bare
    assert "reached only from a `run_code` program" in build(env, {"run_code", CODE_MODE_ONLY})
    # Every `when:` names a tool or one of the two other names.
    names = {n for line in template_text().splitlines() if "<!-- when:" in line for n in line.split()[2:-1]}
    assert names <= EVERY_TOOL | {MCP, CODE_MODE_ONLY}


# --- the client's systemPrompt -------------------------------------------------------------------------


def test_the_client_system_prompt_shapes() -> None:
    text = [{"type": "text", "text": "Be terse."}, {"type": "text", "text": "Use British spelling.\n"}]
    assert read_client_prompt(None) is None
    assert read_client_prompt({"content": text}) == ClientSystemPrompt(
        "append", "Be terse.\n\nUse British spelling."
    )
    assert read_client_prompt({"mode": "override", "content": text[:1]}) == ClientSystemPrompt(
        "override", "Be terse."
    )
    assert read_client_prompt(text[:1]) == ClientSystemPrompt(
        "append", "Be terse."
    )  # an earlier draft's list
    assert read_client_prompt({"content": [{"type": "text", "text": "  \n"}]}) is None
    for bad in (
        {"mode": "prepend", "content": text},
        {"mode": "append"},
        "text",
        {"content": [{"type": "image"}]},
    ):
        with pytest.raises(InvalidParams):
            read_client_prompt(bad)
    with pytest.raises(InvalidParams, match="over 256 KiB"):
        read_client_prompt({"content": [{"type": "text", "text": "x" * 300_000}]})
