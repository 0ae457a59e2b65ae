"""The kernel's change notification under a snapshot (`watch.TreeWatch`), on real files with real git and
real `bash`: whatever a command does to the tree, a store that asks the watch records exactly the tree a
store that walks it records (tree ids are content hashes, so equal ids are equal trees); a snapshot where
nothing changed runs no git; one where a file changed looks only at that path; and every case the watch
cannot follow (too many folders, too many changes, a moved folder, a `.gitignore` edit, no inotify) falls
back to the walk and stays exact."""

from __future__ import annotations

import fcntl
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge.checkpoints import store as store_module
from acp_bridge.checkpoints import watch
from acp_bridge.checkpoints.inotify import Inotify
from acp_bridge.checkpoints.store import MAX_FILE_BYTES, ShadowStore

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify is Linux's")


class Spy:
    """The git commands a store runs (their first arguments)."""

    def __init__(self, store: ShadowStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, ...]] = []
        real = store._git

        def counting(*args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
            self.calls.append(args)
            return real(*args, stdin=stdin, check=check)

        monkeypatch.setattr(store, "_git", counting)


def _walking(root: Path, where: Path) -> ShadowStore:
    store = ShadowStore(str(root), where)
    store._watching = False
    return store


def _bash(root: Path, script: str) -> None:
    subprocess.run(["bash", "-c", script], cwd=root, check=True, capture_output=True)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[tuple[Path, ShadowStore, ShadowStore]]:
    root = tmp_path / "root"
    for d in ("a", "a/b", "c", "build"):
        (root / d).mkdir(parents=True)
    for rel in ("top.txt", "a/one.py", "a/b/two.py", "c/three.md", "build/out.o"):
        (root / rel).write_text(f"{rel}\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    watched, walking = ShadowStore(str(root), tmp_path / "w"), _walking(root, tmp_path / "k")
    yield root, watched, walking
    watched._drop_watch()


# Each step: a shell command, and whether the watch can follow it (False: it must fall back to a walk).
STEPS = [
    ("echo more >> a/one.py", True),
    ("printf '' > c/three.md", True),
    ("mkdir -p n/e/w && echo fresh > n/e/w/deep.py && echo x > n/top.py", True),
    ("echo later > n/e/w/later.py", True),
    ("rm a/b/two.py", True),
    ("chmod +x a/one.py", True),
    ("mv top.txt renamed.txt", True),
    ("echo noise > debug.log && echo built > build/more.o", True),
    ("mkdir -p build/deep/er && echo x > build/deep/er/y.o", True),
    ("rm -rf n/e", True),
    ("ln -s /etc outside && ln -s a/one.py link.py", True),
    ("mkdir -p sub && git init -q sub && echo inner > sub/inner.txt", True),
    (f"head -c {MAX_FILE_BYTES + 1} /dev/zero > big.bin", True),
    ("mv a moved", False),
    ("echo moved2 >> moved/one.py", True),
    ("echo 'c/' >> .gitignore", False),
    ("echo after > c/three.md && echo kept > new.txt", True),
    ("rm -rf moved n", True),
]


def test_the_watch_records_the_tree_a_walk_records_whatever_a_command_does(
    tree: tuple[Path, ShadowStore, ShadowStore],
) -> None:
    root, watched, walking = tree
    assert watched.snapshot() == walking.snapshot()
    for command, followed in STEPS:
        followed_before = watched._watch
        assert followed_before is not None, "the watch should be running before: " + command
        _bash(root, command)
        assert watched.snapshot() == walking.snapshot(), command
        # A step the watch can follow keeps the same watch; one it cannot starts a new one.
        assert (watched._watch is followed_before) is followed, command


def test_a_snapshot_looks_only_at_what_changed_and_runs_no_git_when_nothing_did(
    tree: tuple[Path, ShadowStore, ShadowStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, watched, walking = tree
    first = watched.snapshot()
    spy = Spy(watched, monkeypatch)
    assert watched.snapshot() == first
    assert spy.calls == []
    (root / "a" / "one.py").write_text("changed\n")
    assert watched.snapshot() == walking.snapshot() != first
    listing = [c for c in spy.calls if c[0] == "ls-files"]
    assert listing and listing[0][-2:] == ("--", ":(literal)a/one.py")


def test_a_path_with_pathspec_magic_is_taken_literally(tree: tuple[Path, ShadowStore, ShadowStore]) -> None:
    root, watched, walking = tree
    watched.snapshot()
    (root / "a" / "*.py").write_text("a star\n")  # as a pattern, it would match a/one.py too
    (root / ":(top)x").write_text("magic\n")
    assert watched.snapshot() == walking.snapshot()
    assert watched._watch is not None


def test_too_many_changes_at_once_fall_back_to_a_walk_and_a_new_watch(
    tree: tuple[Path, ShadowStore, ShadowStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, watched, walking = tree
    watched.snapshot()
    monkeypatch.setattr(watch, "MAX_NAMED_PATHS", 3)
    spent = watched._watch
    _bash(root, "for i in $(seq 20); do echo $i > c/f$i.txt; done")
    assert watched.snapshot() == walking.snapshot()
    assert watched._watch is not None and watched._watch is not spent
    (root / "c" / "f3.txt").write_text("again\n")
    assert watched.snapshot() == walking.snapshot()


def test_a_tree_with_more_folders_than_the_bound_is_walked(
    tree: tuple[Path, ShadowStore, ShadowStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, watched, walking = tree
    monkeypatch.setattr(watch, "MAX_WATCHED_DIRS", 2)
    assert watched.snapshot() == walking.snapshot()
    assert watched._watch is None and watched._watching is False
    (root / "a" / "b" / "two.py").write_text("changed\n")
    assert watched.snapshot() == walking.snapshot()


def test_ignored_folders_are_not_watched(tree: tuple[Path, ShadowStore, ShadowStore]) -> None:
    _, watched, _ = tree
    watched.snapshot()
    assert watched._watch is not None
    assert sorted(watched._watch._dirs.values()) == ["", "a", "a/b", "c"]


def test_a_bridge_keeps_watches_for_the_roots_it_used_last_and_walks_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "MAX_WATCHED_ROOTS", 2)
    monkeypatch.setattr(store_module, "_watched", OrderedDict())
    roots = [tmp_path / f"r{k}" for k in range(3)]
    pairs = []
    for k, root in enumerate(roots):
        root.mkdir()
        (root / "f.txt").write_text(f"{k}\n")
        pairs.append((ShadowStore(str(root), tmp_path / f"w{k}"), _walking(root, tmp_path / f"k{k}")))
    try:
        for watched, walking in pairs:
            assert watched.snapshot() == walking.snapshot()
        # The third took the watch of the first, the least recently used; the first walks, then takes one.
        assert [w._watch is not None for w, _ in pairs] == [False, True, True]
        for k, (watched, walking) in enumerate(pairs):
            (roots[k] / "f.txt").write_text("changed\n")
            assert watched.snapshot() == walking.snapshot()
        assert sum(w._watch is not None for w, _ in pairs) == 2
    finally:
        for watched, _ in pairs:
            watched._drop_watch()


def test_the_inotify_descriptor_is_not_inherited_by_a_tools_process() -> None:
    notify = Inotify()
    try:
        assert fcntl.fcntl(notify._fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC
        assert notify.read() == []  # non-blocking: nothing queued, no wait
    finally:
        notify.close()


def test_without_inotify_every_snapshot_walks_and_stays_exact(
    tree: tuple[Path, ShadowStore, ShadowStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, watched, walking = tree
    monkeypatch.setattr(watch, "_inotify", lambda: None)
    assert watched.snapshot() == walking.snapshot()
    _bash(root, "echo x >> a/one.py && rm c/three.md")
    assert watched.snapshot() == walking.snapshot()
    assert watched._watch is None


_OPS = st.sampled_from(
    [
        "echo $RANDOM >> a/one.py",
        "mkdir -p x/y && echo $RANDOM > x/y/z.txt",
        "rm -rf x",
        "rm -f c/three.md",
        "echo back > c/three.md",
        "mkdir -p x && mv x x2",
        "rm -rf x2",
        "touch a/b/empty.txt",
        "echo log > a/b/run.log",
        "chmod -x a/one.py",
        "chmod +x a/one.py",
        "mkdir -p build/q && touch build/q/r",
    ]
)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.lists(_OPS, min_size=1, max_size=3), min_size=1, max_size=6))
def test_any_sequence_of_commands_records_what_a_walk_records(
    tmp_path_factory: pytest.TempPathFactory, steps: list[list[str]]
) -> None:
    base = tmp_path_factory.mktemp("seq")
    root = base / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "c").mkdir()
    (root / "a" / "one.py").write_text("one\n")
    (root / "c" / "three.md").write_text("three\n")
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    watched, walking = ShadowStore(str(root), base / "w"), _walking(root, base / "k")
    try:
        assert watched.snapshot() == walking.snapshot()
        for batch in steps:
            _bash(root, " ; ".join(batch))
            assert watched.snapshot() == walking.snapshot(), batch
    finally:
        watched._drop_watch()
