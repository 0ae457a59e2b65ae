"""Path rules: resolution against the cwd, display paths with the `..` segment rule, roots."""

from __future__ import annotations

import os
from pathlib import Path

from presenters.paths import display_path, is_inside_roots, resolve, session_cwd, session_roots
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


def test_session_defaults(tmp_path: Path) -> None:
    assert session_cwd(None) == os.getcwd()
    assert session_roots(None) == (os.getcwd(),)
    agent = Agent(id="a", cwd=str(tmp_path))
    assert session_roots(agent) == (str(tmp_path),)
    assert session_roots(Agent(id="a", cwd=str(tmp_path), roots=("/r1", "/r2"))) == ("/r1", "/r2")
