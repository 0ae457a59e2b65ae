"""`grep` end to end on a fixture tree, with ripgrep and with the pure-Python backend: both must give the
same results (ignore files, hidden files, binary files, globs, modes, context, limits), plus errors and
cards."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from registry_core import GenericCallView, GenericResultView, SearchResultView, thaw

from .conftest import Session, text_of

HAS_RG = shutil.which("rg") is not None
BACKENDS = [
    pytest.param("ripgrep", marks=pytest.mark.skipif(not HAS_RG, reason="ripgrep is not on PATH")),
    "python",
]


def build_tree(root: Path) -> None:
    files = {
        ".gitignore": "build/\n*.log\n!keep.log\n/rootonly.txt\nnode_modules/\n",
        ".ignore": "*.tmp\n",
        "src/a.py": "import os\n\ndef hello():\n    return 'Hello'\n\nprint(hello())\n",
        "src/b.txt": "say hello\nsay HELLO\nnothing\n",
        "src/rootonly.txt": "hello from src\n",
        "src/sub/.gitignore": "generated.py\n",
        "src/sub/generated.py": "hello = 1\n",
        "src/sub/c.py": "".join(f"line {i}\n" for i in range(1, 30)).replace("line 15", "hello 15"),
        "build/out.py": "hello\n",
        "node_modules/pkg/index.js": "hello\n",
        "app.log": "hello\n",
        "keep.log": "hello kept\n",
        "rootonly.txt": "hello root\n",
        "x.tmp": "hello tmp\n",
        ".hidden/secret.py": "hello secret\n",
        ".env": "HELLO=1\n",
        "ünï.txt": "hello ünïcode\n",
        "crlf.txt": "hello\r\nworld\r\n",
        "bom.txt": "\ufeffhello bom\n",
    }
    for name, body in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    (root / ".git").mkdir()
    (root / "bin.dat").write_bytes(b"hello\x00binary\n")
    (root / "link.py").symlink_to(root / "src/a.py")


@pytest.fixture
def tree(session: Session) -> Session:
    build_tree(session.cwd)
    return session


async def grep(make_session: Any, backend: str, args: dict[str, Any]) -> Any:
    session = make_session(grep_backend=backend)
    if not (session.cwd / "src").exists():
        build_tree(session.cwd)
    return session, await session.run("grep", args)


CASES: list[dict[str, Any]] = [
    {"pattern": "hello"},
    {"pattern": "hello", "-i": True},
    {"pattern": "hello", "output_mode": "content"},
    {"pattern": "hello", "output_mode": "content", "-i": True, "-n": False},
    {"pattern": "hello", "output_mode": "count", "-i": True},
    {"pattern": "hello 15", "output_mode": "content", "-C": 2},
    {"pattern": "line 1[0-9]", "output_mode": "content", "-A": 1, "-B": 3},
    {"pattern": "hello", "glob": "*.py"},
    {"pattern": "hello", "glob": "*.{py,txt}", "output_mode": "count"},
    {"pattern": "hello", "glob": "src/**/*.py"},
    {"pattern": "hello", "glob": "!*.txt"},
    {"pattern": "hello", "glob": "*.log"},
    {"pattern": "hello", "path": "src"},
    {"pattern": "^say", "path": "src/b.txt", "output_mode": "content"},
    {"pattern": "line", "output_mode": "content", "head_limit": 5, "-A": 2},
    {"pattern": "hello|line", "head_limit": 3},
    {"pattern": r"\bhello\b$", "output_mode": "content"},
    {"pattern": "nomatchanywhere"},
]


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not on PATH: nothing to compare the Python backend with")
@pytest.mark.parametrize("args", CASES, ids=[str(i) for i in range(len(CASES))])
async def test_both_backends_agree(make_session: Any, args: dict[str, Any]) -> None:
    _, fast = await grep(make_session, "ripgrep", args)
    _, slow = await grep(make_session, "python", args)

    assert not fast.is_error and not slow.is_error, (fast.error, slow.error)
    assert fast.meta["backend"] == "ripgrep" and slow.meta["backend"] == "python"
    assert {**thaw(fast.value), "backend": None} == {**thaw(slow.value), "backend": None}
    assert text_of(fast) == text_of(slow)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_files_with_matches_respects_ignore_and_hidden_rules(make_session: Any, backend: str) -> None:
    session, result = await grep(make_session, backend, {"pattern": "hello", "-i": True})

    shown = text_of(result).splitlines()
    assert shown == [
        "Found 8 files",
        "bom.txt",
        "crlf.txt",
        "keep.log",
        "src/a.py",
        "src/b.txt",
        "src/rootonly.txt",
        "src/sub/c.py",
        "ünï.txt",
    ]
    paths = [f["path"] for f in result.meta["files"]]
    assert paths[0] == str(session.cwd / "bom.txt")  # absolute in meta and cards


@pytest.mark.parametrize("backend", BACKENDS)
async def test_content_mode_text_context_and_card(make_session: Any, backend: str) -> None:
    args = {"pattern": "hello 15", "output_mode": "content", "-C": 1, "path": "src"}
    session, result = await grep(make_session, backend, args)

    assert text_of(result) == "src/sub/c.py-14-line 14\nsrc/sub/c.py:15:hello 15\nsrc/sub/c.py-16-line 16"
    card = session.result_card("grep", args, result)
    assert isinstance(card, SearchResultView) and card.shape == "matches"
    assert card.title == 'Search "hello 15" in src'
    assert card.total == 1 and not card.truncated
    assert [(m.path, [(x.number, x.text) for x in m.lines]) for m in card.matches] == [
        (str(session.cwd / "src/sub/c.py"), [(15, "hello 15")])
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_head_limit_truncates_and_says_so(make_session: Any, backend: str) -> None:
    args = {"pattern": "line", "output_mode": "content", "head_limit": 4, "glob": "*.py"}
    session, result = await grep(make_session, backend, args)

    assert result.meta["truncated"] is True and result.meta["total"] == 28
    assert result.meta["total_files"] == 1
    assert [x["number"] for f in result.meta["files"] for x in f["lines"]] == [1, 2, 3, 4]
    assert "(28 matching lines in 1 file; showing the first 4 in 1 file." in text_of(result)
    card = session.result_card("grep", args, result)
    assert isinstance(card, SearchResultView) and card.truncated and card.total == 28 and card.files == 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("output_mode", ["content", "files_with_matches", "count"])
async def test_totals_are_the_searchs_not_what_is_shown(
    make_session: Any, backend: str, output_mode: str
) -> None:
    # Three files of 150 matching lines each: the first 200 lines shown are in two of them.
    session = make_session(grep_backend=backend)
    for name in ("c.txt", "a.txt", "b.txt"):
        (session.cwd / name).write_text("".join(f"needle {i}\nhay\n" for i in range(150)))
    limit = {"content": 200, "files_with_matches": 2, "count": 2}[output_mode]
    args = {"pattern": "needle", "output_mode": output_mode, "head_limit": limit}

    result = await session.run("grep", args)

    meta = result.meta
    assert meta["total_files"] == 3 and meta["truncated"] is True
    assert [Path(f["path"]).name for f in meta["files"]] == ["a.txt", "b.txt"]
    if output_mode == "content":
        assert meta["total"] == 450
        assert [len(f["lines"]) for f in meta["files"]] == [150, 50]
        assert text_of(result).endswith(
            "(450 matching lines in 3 files; showing the first 200 in 2 files. Narrow the search with path "
            "or glob, or raise head_limit.)"
        )
        card = session.result_card("grep", args, result)
        assert isinstance(card, SearchResultView)
        assert (card.total, card.files, card.truncated) == (450, 3, True)
    else:
        assert meta["total"] == 3
        assert "(Showing 2 of 3 files;" in text_of(result)
    if output_mode == "count":
        assert text_of(result).splitlines()[:2] == ["a.txt:150", "b.txt:150"]
        assert "450 matching lines in 3 files." in text_of(result)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_many_files_in_any_order_come_back_in_path_order(make_session: Any, backend: str) -> None:
    # Enough files that ripgrep's threads finish them out of order; nested names where path order and
    # string order differ ("a/b" before "a-b").
    session = make_session(grep_backend=backend)
    names = [f"d{i % 7}/f{i:03d}.txt" for i in range(300)] + ["a/b.txt", "a-b.txt", "a.txt"]
    for name in names:
        path = session.cwd / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n" * 3)
    expected = sorted(names, key=lambda n: n.split("/"))

    listed = await session.run("grep", {"pattern": "needle", "head_limit": 5000})
    content = await session.run("grep", {"pattern": "needle", "output_mode": "content", "head_limit": 30})

    assert [display(session, f["path"]) for f in listed.meta["files"]] == expected
    assert [display(session, f["path"]) for f in content.meta["files"]] == expected[:10]
    assert content.meta["total"] == 3 * len(names) and content.meta["total_files"] == len(names)


def display(session: Session, path: str) -> str:
    return str(Path(path).relative_to(session.cwd))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_count_mode_card_carries_counts(make_session: Any, backend: str) -> None:
    args = {"pattern": "hello", "output_mode": "count", "-i": True, "path": "src", "glob": "*.txt"}
    session, result = await grep(make_session, backend, args)

    assert text_of(result).splitlines()[:2] == ["src/b.txt:2", "src/rootonly.txt:1"]
    card = session.result_card("grep", args, result)
    assert isinstance(card, SearchResultView)
    assert [(Path(m.path).name, m.count) for m in card.matches] == [("b.txt", 2), ("rootonly.txt", 1)]
    assert card.title == 'Search "hello" in src (*.txt)'


@pytest.mark.parametrize("backend", BACKENDS)
async def test_invalid_regex_is_a_clear_error(make_session: Any, backend: str) -> None:
    session, result = await grep(make_session, backend, {"pattern": "foo(bar"})

    assert result.error is not None and result.error.code == "INVALID_REGEX"
    assert result.error.message.startswith("Invalid regular expression 'foo(bar'")
    assert "with a backslash" in result.error.message
    card = session.result_card("grep", {"pattern": "foo(bar"}, result)
    assert isinstance(card, GenericResultView)


@pytest.mark.skipif(not HAS_RG, reason="ripgrep is not on PATH")
async def test_look_around_falls_back_to_python(make_session: Any) -> None:
    _, result = await grep(make_session, "ripgrep", {"pattern": r"(?<=say )hello", "output_mode": "content"})

    assert result.meta["backend"] == "python"
    assert text_of(result) == "src/b.txt:1:say hello"


async def test_missing_path_and_call_card(make_session: Any) -> None:
    session, result = await grep(make_session, "python", {"pattern": "x", "path": "nope"})
    assert result.error is not None and result.error.code == "NOT_FOUND"
    card = session.call_card("grep", {"pattern": "TODO", "path": "/w/src", "glob": "*.py"})
    assert card == GenericCallView(title='Search "TODO" in /w/src (*.py)', kind="search")


async def test_env_var_forces_the_python_backend(make_session: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_BRIDGE_GREP", "python")
    _, result = await grep(make_session, "auto", {"pattern": "hello"})
    assert result.meta["backend"] == "python"


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_matching_line_over_64_mib_is_cut_not_an_error(make_session: Any, backend: str) -> None:
    session = make_session(grep_backend=backend)
    huge = "x" * (65 << 20) + " needle " + "y" * 1000
    many = "needle " * 50_000  # an event long because of its many submatches, not its text
    (session.cwd / "minified.js").write_text(f"short needle\n{huge}\n{many}\ntail needle\n")
    args = {"pattern": "needle", "output_mode": "content", "-n": True}

    result = await session.run("grep", args)

    assert result.error is None, text_of(result)
    assert result.meta["total"] == 4
    lines = [(x["number"], x["text"]) for f in result.meta["files"] for x in f["lines"]]
    assert [number for number, _ in lines] == [1, 2, 3, 4]
    assert lines[0][1] == "short needle" and lines[3][1] == "tail needle"
    for _, text in lines[1:3]:
        assert text.endswith("… [line cut]") and len(text) < 1100
    assert lines[1][1].startswith("xxxx") and lines[2][1].startswith("needle needle")


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_nul_byte_in_the_pattern_searches_instead_of_failing(make_session: Any, backend: str) -> None:
    # No command line can carry a NUL byte, so ripgrep cannot take this pattern; the search still runs.
    args = {"pattern": "hello\x00|Hello", "output_mode": "files_with_matches", "path": "src"}
    _session, result = await grep(make_session, backend, args)

    assert not result.is_error, text_of(result)
    assert "src/a.py" in text_of(result)
