"""`glob` end to end: patterns, newest first, the cap, ignore and hidden rules, and its cards; plus the
glob and ignore-rule translation it shares with grep's Python backend."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]
import pytest

from presenters.ignore import compile_glob, parse_rules, rules_decision
from registry_core import CancelController, GenericCallView, GenericResultView, SearchResultView

from .conftest import Session, text_of


def touch(root: Path, name: str, mtime: int) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(name)
    os.utime(path, (mtime, mtime))
    return path


async def test_finds_newest_first_with_relative_display_and_absolute_card(session: Session) -> None:
    root = session.cwd
    touch(root, "old.py", 1_000)
    touch(root, "src/new.py", 3_000)
    touch(root, "src/deep/mid.py", 2_000)
    touch(root, "src/notes.md", 4_000)
    args = {"pattern": "**/*.py"}

    result = await session.run("glob", args)

    assert text_of(result) == "src/new.py\nsrc/deep/mid.py\nold.py"
    card = session.result_card("glob", args, result)
    assert isinstance(card, SearchResultView) and card.shape == "paths"
    assert card.paths == (str(root / "src/new.py"), str(root / "src/deep/mid.py"), str(root / "old.py"))
    assert card.total == 3 and not card.truncated and card.title == 'Find "**/*.py"'


async def test_single_star_stays_in_its_directory_and_path_narrows(session: Session) -> None:
    touch(session.cwd, "top.py", 1)
    touch(session.cwd, "pkg/inner.py", 2)
    touch(session.cwd, "pkg/sub/leaf.py", 3)

    top = await session.run("glob", {"pattern": "*.py"})
    in_pkg = await session.run("glob", {"pattern": "*.py", "path": "pkg"})
    prefixed = await session.run("glob", {"pattern": "pkg/**/*.{py,txt}"})

    absolute = await session.run("glob", {"pattern": f"{session.cwd}/pkg/**/*.py", "path": "/"})
    upward = await session.run("glob", {"pattern": "../work/pkg/*.py"})

    assert text_of(top) == "top.py"
    assert text_of(in_pkg) == "pkg/inner.py"
    assert text_of(prefixed) == "pkg/sub/leaf.py\npkg/inner.py"
    assert text_of(absolute) == "pkg/sub/leaf.py\npkg/inner.py"
    assert text_of(upward) == "pkg/inner.py"


async def test_cap_of_100_with_total_and_truncated(session: Session) -> None:
    for i in range(130):
        touch(session.cwd, f"many/f{i:03d}.txt", 10_000 + i)
    args = {"pattern": "many/*.txt"}

    result = await session.run("glob", args)

    assert result.meta["total"] == 130 and result.meta["truncated"] is True
    assert len(result.meta["paths"]) == 100
    assert result.meta["paths"][0].endswith("f129.txt")
    assert "Showing the 100 most recently modified of 130 files" in text_of(result)


async def test_ignored_and_hidden_files_are_skipped_unless_named(session: Session) -> None:
    root = session.cwd
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("dist/\n")
    touch(root, "dist/bundle.js", 1)
    touch(root, "app.js", 2)
    touch(root, ".github/workflows/ci.yml", 3)
    touch(root, ".config.js", 4)

    js = await session.run("glob", {"pattern": "**/*.js"})
    workflows = await session.run("glob", {"pattern": ".github/**/*.yml"})
    dotted = await session.run("glob", {"pattern": "**/.*.js"})

    assert text_of(js) == "app.js"
    assert text_of(workflows) == ".github/workflows/ci.yml"
    assert text_of(dotted) == ".config.js"


async def test_no_match_missing_dir_and_cards(session: Session) -> None:
    none = await session.run("glob", {"pattern": "*.zig"})
    missing = await session.run("glob", {"pattern": "*", "path": "nope"})

    assert text_of(none).startswith("No files match '*.zig'")
    assert missing.error is not None and missing.error.code == "NOT_FOUND"
    failed = session.result_card("glob", {"pattern": "*", "path": "nope"}, missing)
    assert isinstance(failed, GenericResultView)
    assert session.call_card("glob", {"pattern": "*.md", "path": "/w/docs"}) == GenericCallView(
        title='Find "*.md" in /w/docs', kind="search"
    )


HAS_RG = shutil.which("rg") is not None


def build_tree(root: Path) -> None:
    """Ignore files at two levels, re-included and hidden files, symbolic links, odd names."""
    files = {
        ".gitignore": "dist/\n*.log\n!keep.log\n!.keep.py\n/rootonly.py\n",
        ".ignore": "*.tmp\n",
        "a.py": "", "b.py": "", "c.txt": "", "keep.log": "", "app.log": "", "x.tmp": "", "rootonly.py": "",
        ".x.py": "", ".keep.py": "", ".hid/h.py": "", ".github/workflows/ci.yml": "",
        "dist/bundle.py": "", "src/a.py": "", "src/b.txt": "", "src/rootonly.py": "", "src/a,b.txt": "",
        "src/sub/.gitignore": "gen*.py\n!gen_keep.py\n", "src/sub/gen1.py": "", "src/sub/gen_keep.py": "",
        "src/sub/deep/z.py": "", "ünï/ß.py": "",
    }  # fmt: skip
    for mtime, (name, body) in enumerate(sorted(files.items()), start=1_000):
        touch(root, name, mtime % 1_007)  # ties too: then by path
        (root / name).write_text(body)
        os.utime(root / name, (mtime % 1_007, mtime % 1_007))
    (root / ".git").mkdir()
    (root / ".git" / "config.py").write_text("")
    (root / "link.py").symlink_to(root / "a.py")
    (root / "srclink").symlink_to(root / "src")


GLOB_CASES = [
    "**/*.py", "*.py", "src/**/*.{py,txt}", "**/.*.py", ".github/**/*.yml", "**", "src/**", "**/[ab].py",
    "**/*.log", "**/?.py", "src/*", "**/gen*.py", "*.{py,log}", "**/a,b.txt", "**/.*", ".*/**",
    "src/sub/*.py", "ünï/*.py", "**/*.tmp", "**/z.py",
]  # fmt: skip


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not on PATH: nothing to compare the Python walk with")
@pytest.mark.parametrize("pattern", GLOB_CASES)
async def test_both_backends_agree(make_session: Any, pattern: str) -> None:
    fast, slow = make_session(grep_backend="ripgrep"), make_session(grep_backend="python")
    build_tree(fast.cwd)

    with_rg = await fast.run("glob", {"pattern": pattern})
    walked = await slow.run("glob", {"pattern": pattern})

    assert not with_rg.is_error and not walked.is_error
    assert with_rg.value == walked.value
    assert with_rg.meta["total"] == len(with_rg.meta["paths"])  # the tree holds fewer than 100


async def test_the_tree_is_filtered_as_ripgrep_would(make_session: Any) -> None:
    session = make_session(grep_backend="python")
    build_tree(session.cwd)

    result = await session.run("glob", {"pattern": "**/*.py"})

    shown = sorted(str(Path(p).relative_to(session.cwd)) for p in result.meta["paths"])
    assert shown == [".keep.py", "a.py", "b.py", "src/a.py", "src/rootonly.py", "src/sub/deep/z.py",
                     "src/sub/gen_keep.py", "ünï/ß.py"]  # fmt: skip


async def test_the_total_counts_every_match_beyond_the_cap(make_session: Any) -> None:
    session = make_session()
    for i in range(250):
        touch(session.cwd, f"d{i % 3}/f{i:03d}.py", 5_000 + i)

    result = await session.run("glob", {"pattern": "**/*.py"})

    assert result.meta["total"] == 250 and len(result.meta["paths"]) == 100
    assert "Showing the 100 most recently modified of 250 files" in text_of(result)
    card = session.result_card("glob", {"pattern": "**/*.py"}, result)
    assert isinstance(card, SearchResultView) and card.total == 250 and card.truncated


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("ripgrep", marks=pytest.mark.skipif(not HAS_RG, reason="ripgrep is not on PATH")),
        "python",
    ],
)
async def test_the_newest_hundred_of_many_with_ties_broken_by_path(make_session: Any, backend: str) -> None:
    # Many matches are stat'ed in pieces, in parallel: the newest 100 of them all, and the total, must not
    # depend on how they were split. Seven distinct times: the newest 200 files tie, their paths decide.
    session = make_session(grep_backend=backend)
    made = [touch(session.cwd, f"d{i % 14:02d}/f{i:04d}.py", 10_000 + (i * 3) % 7) for i in range(1_400)]
    touch(session.cwd, "d00/other.txt", 20_000)
    newest = sorted(made, key=lambda path: (-path.stat().st_mtime, str(path)))[:100]

    result = await session.run("glob", {"pattern": "**/*.py"})

    assert list(result.meta["paths"]) == [str(path) for path in newest]
    assert result.meta["total"] == 1_400 and result.meta["truncated"] is True


async def test_a_cancelled_glob_answers_cancelled_and_leaves_no_ripgrep(
    make_session: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An `rg` that lists some files, then never ends: the call is cancelled while the listing runs.
    session = make_session(grep_backend="ripgrep")
    listed = [touch(session.cwd, f"f{i:04d}.py", 1_000 + i) for i in range(1_500)]
    (tmp_path / "paths").write_bytes(b"".join(bytes(path) + b"\0" for path in listed))
    fake = tmp_path / "bin" / "rg"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\ncat '{tmp_path / 'paths'}'\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    controller = CancelController()
    sleeping: list[psutil.Process] = []

    async def cancel_while_listing() -> None:
        while not sleeping:
            await asyncio.sleep(0.01)
            sleeping.extend(p for p in psutil.Process().children(recursive=True) if p.name() == "sleep")
        controller.cancel()

    canceller = asyncio.ensure_future(cancel_while_listing())
    result = await session.run("glob", {"pattern": "**/*.py"}, signal=controller.signal)
    await canceller

    assert result.error is not None and result.error.code == "CANCELLED"
    assert not [p for p in sleeping if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


@pytest.mark.parametrize(
    ("pattern", "path", "anchored", "matches"),
    [
        ("*.py", "a.py", None, True),
        ("*.py", "x/a.py", None, True),  # gitignore style: a name at any depth
        ("*.py", "x/a.py", True, False),  # glob tool: relative to the root
        ("src/*.py", "x/src/a.py", None, False),
        ("**/foo", "a/b/foo", None, True),
        ("foo/**", "foo/a/b", None, True),
        ("foo/**", "foo", None, False),
        ("a/**/b", "a/b", None, True),
        ("a/**/b", "a/x/y/b", None, True),
        ("*.{ts,tsx}", "z/a.tsx", None, True),
        ("{a,b{c,d}}.txt", "bd.txt", True, True),
        ("/build", "x/build", None, False),
        ("[!ab].txt", "c.txt", None, True),
        ("[!ab].txt", "a.txt", None, False),
        ("?.md", "ab.md", None, False),
        (r"\*.md", "*.md", None, True),
    ],
)
def test_glob_translation(pattern: str, path: str, anchored: bool | None, matches: bool) -> None:
    assert bool(compile_glob(pattern, anchored=anchored).match(path)) is matches


def test_ignore_rules_last_match_wins_and_dir_only() -> None:
    rules = parse_rules("# comment\n*.log\n!keep.log\nbuild/\n\\#literal\n")
    decide: Any = rules_decision
    assert decide(rules, "a.log", False) is True
    assert decide(rules, "keep.log", False) is False
    assert decide(rules, "build", True) is True
    assert decide(rules, "build", False) is None  # "build/" only matches directories
    assert decide(rules, "#literal", False) is True
    assert decide(rules, "other.txt", False) is None
