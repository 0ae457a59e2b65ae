"""`locate`: where a path lands inside the roots, symlinks below the root followed, as the permission policy
judges it: its real path, that path below the real root, and the path as named below its root."""

from __future__ import annotations

from pathlib import Path

import pytest

from presenters.paths import Located, locate


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace reached through a symlink (like macOS /tmp), and a directory outside it."""
    real = tmp_path / "real-ws"
    (real / "src").mkdir(parents=True)
    (real / ".git").mkdir()
    (real / "src" / "app.py").write_text("x\n")
    (tmp_path / "ws").symlink_to(real)
    (tmp_path / "outside").mkdir()
    return tmp_path / "ws", tmp_path / "outside"


def test_a_path_below_a_symlinked_root_lands_below_its_real_path(roots: tuple[Path, Path]) -> None:
    ws, _ = roots
    real = str(ws.resolve())
    assert locate(str(ws / "src" / "app.py"), [str(ws)]) == Located(
        f"{real}/src/app.py", "src/app.py", "src/app.py"
    )
    assert locate(str(ws / "new" / "file.txt"), [str(ws)]) == Located(
        f"{real}/new/file.txt", "new/file.txt", "new/file.txt"
    )
    assert locate(str(ws), [str(ws)]) == Located(real, ".", ".")
    assert locate(f"{real}/src", [str(ws)]) == Located(
        f"{real}/src", "src", "src"
    )  # spelled as the real root


def test_a_link_below_the_root_is_followed_and_both_names_are_kept(roots: tuple[Path, Path]) -> None:
    ws, outside = roots
    (ws / "cfg").symlink_to(ws / ".git")
    (ws / "away").symlink_to(outside)
    real = str(ws.resolve())
    assert locate(str(ws / "cfg" / "config"), [str(ws)]) == Located(
        f"{real}/.git/config", ".git/config", "cfg/config"
    )
    assert locate(str(ws / "away" / "x"), [str(ws)]) is None
    assert locate(str(ws / ".." / "outside"), [str(ws)]) is None


def test_an_impossible_path_raises_value_error_for_the_caller_to_judge(roots: tuple[Path, Path]) -> None:
    ws, _ = roots
    with pytest.raises(ValueError):
        locate(str(ws / "a\x00b"), [str(ws)])
