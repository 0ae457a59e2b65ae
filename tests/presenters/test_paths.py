"""Path rules: resolution against the cwd, display paths with the `..` segment rule, roots."""

from __future__ import annotations

import os
from pathlib import Path

from presenters.paths import (
    display_path,
    is_inside_roots,
    relative_inside,
    resolve,
    session_cwd,
    session_roots,
)
from registry_core import Agent


def test_resolve() -> None:
    assert resolve("a/../b.txt", "/w") == "/w/b.txt"
    assert resolve("/abs//x/./y", "/w") == "/abs/x/y"
    assert resolve("~/f", "/w") == os.path.expanduser("~/f")


def test_display_path_segment_rule() -> None:
    assert display_path("/w/src/a.py", "/w") == "src/a.py"
    assert display_path("/w", "/w") == "."
    assert display_path("/w/..cache/x", "/w") == "..cache/x"
    assert display_path("/w/../x", "/w") == "/x"
    assert display_path("/w2/a", "/w") == "/w2/a"
    assert display_path("rel/a", "/w") == "rel/a"
    assert display_path("/any/path", None) == "/any/path"


def test_roots_follow_symlinks(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "inner").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (root / "link").symlink_to(tmp_path / "out")

    assert is_inside_roots(str(root / "inner" / "new.txt"), [str(root)])
    assert is_inside_roots(str(root / "..x"), [str(root)])
    assert not is_inside_roots(str(root / "link" / "f.txt"), [str(root)])
    assert not is_inside_roots(str(tmp_path / "rootish"), [str(root)])
    assert is_inside_roots(str(tmp_path / "out" / "f"), [str(root), str(tmp_path / "out")])


def test_relative_inside_is_decided_on_segments() -> None:
    assert relative_inside("/w/src/a.py", "/w") == "src/a.py"
    assert relative_inside("/w", "/w") == "."
    assert relative_inside("/w/..cache", "/w") == "..cache"
    assert relative_inside("/w2/a", "/w") is None
    assert relative_inside("/x", "/w") is None
    assert relative_inside("/etc/hosts", "/") == "etc/hosts"


def test_roots_spelled_through_links_and_resolved_once(tmp_path: Path) -> None:
    # The one rule the permission policy uses too: a path spelled through a link outside every root is
    # outside (asked about) even when the link points inside; a root that is itself a link works under
    # either spelling; `real_roots` saves resolving the roots on every call.
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    (tmp_path / "door").symlink_to(real)
    assert is_inside_roots(str(alias / "src" / "a.py"), [str(alias)])
    assert is_inside_roots(str(real / "src" / "a.py"), [str(alias)])
    assert not is_inside_roots(str(tmp_path / "door" / "src" / "a.py"), [str(alias)])
    assert is_inside_roots(str(alias / "src"), [str(alias)], [str(real)])
    assert not is_inside_roots(str(tmp_path / "elsewhere"), [str(alias)], [str(real)])


def test_session_defaults(tmp_path: Path) -> None:
    assert session_cwd(None) == os.getcwd()
    assert session_roots(None) == (os.getcwd(),)
    agent = Agent(id="a", cwd=str(tmp_path))
    assert session_roots(agent) == (str(tmp_path),)
    assert session_roots(Agent(id="a", cwd=str(tmp_path), roots=("/r1", "/r2"))) == ("/r1", "/r2")
