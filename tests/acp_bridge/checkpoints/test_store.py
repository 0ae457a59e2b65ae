"""The shadow store and its bounds on real files with real git: what a snapshot holds (large files,
protected paths, nested repositories and ignored files left out), a user's `GIT_*` environment that never
reaches our git, a command that rewrites thousands of files costing a bounded card, and the prune."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from acp_bridge.checkpoints import file_changes
from acp_bridge.checkpoints.prune import prune
from acp_bridge.checkpoints.store import MAX_FILE_BYTES, ShadowStore


def _files(store: ShadowStore, tree: str) -> list[str]:
    out = subprocess.run(
        ["git", f"--git-dir={store.git_dir}", "ls-tree", "-r", "--name-only", "-z", tree],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    return sorted(p.decode() for p in out.split(b"\0") if p)


def test_a_snapshot_leaves_out_large_protected_ignored_and_nested_repository_files(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "nested").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root / "nested")], check=True)  # a repository of its own
    (root / "nested" / "inner.txt").write_text("inner\n")
    (root / "big.bin").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (root / ".envrc").write_text("export A=1\n")
    (root / ".gitignore").write_text("out/\n")
    (root / "out").mkdir()
    (root / "out" / "build.txt").write_text("built\n")
    (root / "keep.txt").write_text("kept\n")
    os.symlink(root / "keep.txt", root / "link.txt")
    store = ShadowStore(str(root), tmp_path / "store")
    tree = store.snapshot()
    assert _files(store, tree) == [".gitignore", "keep.txt"]
    assert store.snapshot() == tree  # nothing changed: the same tree
    (root / "keep.txt").write_bytes(b"y" * (MAX_FILE_BYTES + 1))  # grew past the bound: no longer recorded
    assert _files(store, store.snapshot()) == [".gitignore"]
    assert sorted(os.listdir(root)) == [
        ".envrc",
        ".gitignore",
        "big.bin",
        "keep.txt",
        "link.txt",
        "nested",
        "out",
    ]


def test_the_users_git_environment_never_reaches_our_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_repo = tmp_path / "user"
    user_repo.mkdir()
    subprocess.run(["git", "init", "-q", str(user_repo)], check=True)
    index = user_repo / ".git" / "index"
    monkeypatch.setenv("GIT_DIR", str(user_repo / ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(index))
    # The store reads its environment when its module loads: a fresh process sees this one.
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    script = (
        "from pathlib import Path; from acp_bridge.checkpoints.store import ShadowStore; "
        f"print(ShadowStore({str(root)!r}, Path({str(tmp_path / 'store')!r})).snapshot())"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert len(done.stdout.strip()) == 40
    assert not index.exists()  # nothing was added to the user's repository
    assert (tmp_path / "store" / "HEAD").exists()


def test_a_command_rewriting_thousands_of_files_costs_a_bounded_card() -> None:
    changes = [
        file_changes.Changed(f"/w/f{k}.txt", ("old\n" * 400).encode(), ("new\n" * 400).encode())
        for k in range(5000)
    ]
    value = file_changes.meta_value(changes)
    assert value["total"] == 5000
    assert len(value["files"]) == file_changes.MAX_SHOWN_FILES
    assert len(json.dumps(value)) < file_changes.MAX_DIFF_CHARS + 20_000
    note = file_changes.model_note(changes, "/w")
    assert note.endswith(", and 4980 more]") and len(note) < 1000
    binary = file_changes.meta_value([file_changes.Changed("/w/x.bin", b"\0\1", b"\0\2")])
    assert binary["files"] == [{"path": "/w/x.bin", "action": "modified", "note": "binary file"}]


def test_prune_keeps_the_recent_sessions_and_deletes_the_rest(tmp_path: Path) -> None:
    base = tmp_path / "checkpoints"
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    store = ShadowStore(str(root), base / "roots" / "r1")
    tree = store.snapshot()
    sessions = base / "sessions"
    sessions.mkdir(parents=True)
    for k in range(4):
        journal = sessions / f"s{k}.jsonl"
        journal.write_text(json.dumps({"kind": "call", "before": {str(root): tree}, "after": {}}) + "\n")
        os.utime(journal, (time.time() - k * 60, time.time() - k * 60))
    old = sessions / "ancient.jsonl"
    old.write_text("{}\n")
    os.utime(old, (time.time() - 40 * 86400,) * 2)
    assert prune(base, keep_sessions=2, keep_days=30) == 3
    assert sorted(p.name for p in sessions.iterdir()) == ["s0.jsonl", "s1.jsonl"]
    assert (base / "roots" / "r1").exists()  # still named by a kept journal
    for journal in sessions.iterdir():
        journal.unlink()
    (sessions / "other.jsonl").write_text("{}\n")
    os.utime(sessions / "other.jsonl", (time.time() - 40 * 86400,) * 2)
    assert prune(base) == 1
    assert not (base / "roots" / "r1").exists()  # no journal names it any more
