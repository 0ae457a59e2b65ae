"""`edit` end to end: exact replacement, the errors that tell the model what to do, line endings and
encodings kept, site hunks and locations, cards."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from presenters.diffs import apply_hunks
from registry_core import DiffCallView, DiffResultView, GenericResultView

from .conftest import Buffers, Session, hunks_of, text_of


async def test_single_replacement_with_hunk_location_and_snippet(session: Session) -> None:
    body = "".join(f"line {i}\n" for i in range(1, 21))
    target = session.cwd / "a.py"
    target.write_text(body)
    args = {"file_path": "a.py", "old_string": "line 10\n", "new_string": "line ten\nline ten and a half\n"}

    result = await session.run("edit", args)

    new = body.replace("line 10\n", "line ten\nline ten and a half\n")
    assert target.read_text() == new
    hunks = hunks_of(result.meta)
    assert len(hunks) == 1
    h = hunks[0]
    assert (h.old_start, h.old_lines, h.new_start, h.new_lines, h.line) == (7, 7, 7, 8, 10)
    assert h.old_text == "".join(f"line {i}\n" for i in range(7, 14))
    assert apply_hunks(body, hunks) == new
    assert "replaced 1 occurrence." in text_of(result)
    assert "    10\tline ten\n    11\tline ten and a half" in text_of(result)
    card = session.result_card("edit", args, result)
    assert isinstance(card, DiffResultView) and card.title == "Edit a.py"
    assert [(loc.path, loc.line) for loc in card.locations] == [(str(target), 10)]


async def test_call_card_is_the_snippet(session: Session) -> None:
    card = session.call_card("edit", {"file_path": "/p/a.py", "old_string": "a", "new_string": "b"})
    assert isinstance(card, DiffCallView) and card.title == "Edit /p/a.py"
    assert [(d.path, d.old_text, d.new_text) for d in card.diffs] == [("/p/a.py", "a", "b")]


async def test_replace_all_gives_one_hunk_per_site_merging_close_ones(session: Session) -> None:
    lines = [f"value = {i}\n" for i in range(60)]
    for i in (5, 7, 40):
        lines[i] = "TARGET()\n"
    body = "".join(lines)
    (session.cwd / "m.py").write_text(body)
    args = {"file_path": "m.py", "old_string": "TARGET", "new_string": "renamed", "replace_all": True}

    result = await session.run("edit", args)

    assert result.meta["replacements"] == 3
    hunks = hunks_of(result.meta)
    assert [(h.line, h.old_start, h.old_lines) for h in hunks] == [(6, 3, 9), (41, 38, 7)]
    assert apply_hunks(body, hunks) == body.replace("TARGET", "renamed")
    card = session.result_card("edit", args, result)
    assert isinstance(card, DiffResultView) and [loc.line for loc in card.locations] == [6, 41]


async def test_not_found_ambiguous_empty_and_no_change_are_explained(session: Session) -> None:
    body = "def f():\n    return 1\n\ndef g():\n    return 1\n"
    target = session.cwd / "x.py"
    target.write_text(body)

    missing = await session.run("edit", {"file_path": "x.py", "old_string": "return 2", "new_string": "z"})
    spaced = await session.run("edit", {"file_path": "x.py", "old_string": "  def g():  ", "new_string": "z"})
    twice = await session.run(
        "edit", {"file_path": "x.py", "old_string": "return 1", "new_string": "return 0"}
    )
    empty = await session.run("edit", {"file_path": "x.py", "old_string": "", "new_string": "z"})
    same = await session.run("edit", {"file_path": "x.py", "old_string": "f", "new_string": "f"})
    nofile = await session.run("edit", {"file_path": "nope.py", "old_string": "a", "new_string": "b"})

    assert missing.error is not None and missing.error.code == "NO_MATCH"
    assert "Read the file again and copy the exact text" in missing.error.message
    assert spaced.error is not None and "occurs at line 4" in spaced.error.message
    assert twice.error is not None and twice.error.code == "AMBIGUOUS_MATCH"
    assert "occurs 2 times in x.py (at lines 2, 5)" in twice.error.message
    assert "set replace_all to true" in twice.error.message
    assert empty.error is not None and empty.error.code == "EMPTY_OLD_STRING"
    assert same.error is not None and same.error.code == "NO_CHANGE"
    assert nofile.error is not None and nofile.error.code == "NOT_FOUND"
    assert target.read_text() == body  # nothing touched
    card = session.result_card(
        "edit", {"file_path": "x.py", "old_string": "return 1", "new_string": "r"}, twice
    )
    assert isinstance(card, GenericResultView) and card.title == "Edit x.py"


async def test_crlf_file_matched_with_lf_text_keeps_crlf(session: Session) -> None:
    target = session.cwd / "win.txt"
    target.write_bytes(b"alpha\r\nbeta\r\ngamma\r\n")

    result = await session.run(
        "edit", {"file_path": "win.txt", "old_string": "alpha\nbeta", "new_string": "A\nB\nB2"}
    )

    assert not result.is_error, result.error
    assert target.read_bytes() == b"A\r\nB\r\nB2\r\ngamma\r\n"


async def test_encoding_mode_and_final_newline_are_kept(session: Session) -> None:
    bom = session.cwd / "bom.txt"
    bom.write_bytes(b"\xef\xbb\xbfkey = 1")  # no final newline
    bom.chmod(0o600)
    utf16 = session.cwd / "u16.txt"
    utf16.write_bytes("naïve\nvalue\n".encode("utf-16"))

    await session.run("edit", {"file_path": "bom.txt", "old_string": "1", "new_string": "2"})
    await session.run("edit", {"file_path": "u16.txt", "old_string": "naïve", "new_string": "café"})

    assert bom.read_bytes() == b"\xef\xbb\xbfkey = 2"
    assert oct(bom.stat().st_mode & 0o777) == oct(0o600)
    assert utf16.read_bytes() == "café\nvalue\n".encode("utf-16")


async def test_invalid_utf8_and_binary_are_refused(session: Session) -> None:
    (session.cwd / "l1.txt").write_bytes(b"caf\xe9\n")
    (session.cwd / "b.bin").write_bytes(b"a\x00b")

    latin = await session.run("edit", {"file_path": "l1.txt", "old_string": "caf", "new_string": "x"})
    binary = await session.run("edit", {"file_path": "b.bin", "old_string": "a", "new_string": "x"})

    assert latin.error is not None and latin.error.code == "INVALID_UTF8"
    assert "iconv" in latin.error.message
    assert binary.error is not None and binary.error.code == "BINARY_FILE"


async def test_file_changed_on_disk_between_read_and_write_is_not_overwritten(
    session: Session, monkeypatch: Any
) -> None:
    import presenters.edit as edit_module

    target = session.cwd / "race.txt"
    target.write_text("one\n")
    real_plan = edit_module._plan

    def plan_then_someone_writes(*a: Any) -> Any:
        out = real_plan(*a)
        target.write_text("someone else's longer text\n")  # after our read, before our commit
        return out

    monkeypatch.setattr(edit_module, "_plan", plan_then_someone_writes)
    result = await session.run("edit", {"file_path": "race.txt", "old_string": "one", "new_string": "two"})

    assert result.error is not None and result.error.code == "STALE_FILE"
    assert target.read_text() == "someone else's longer text\n"


async def test_edit_of_an_editor_buffer_goes_through_the_editor(make_session: Any) -> None:
    probe = make_session()
    target = probe.cwd / "b.txt"
    target.write_text("disk text\n")
    buffers = Buffers({str(target): "unsaved text\n"})
    session = make_session(services={"fs": buffers})

    result = await session.run(
        "edit", {"file_path": "b.txt", "old_string": "unsaved", "new_string": "edited"}
    )

    assert buffers.writes == [(str(target), "edited text\n")]
    assert target.read_text() == "disk text\n"
    assert result.meta["source"] == "editor"


async def test_an_editor_write_failure_is_a_clear_error(make_session: Any, tmp_path: Path) -> None:
    class Refusing(Buffers):
        async def write_text(self, path: str, content: str) -> None:
            raise RuntimeError("user rejected the change")

    session = make_session(services={"fs": Refusing({})})
    (session.cwd / "c.txt").write_text("c\n")

    result = await session.run("edit", {"file_path": "c.txt", "old_string": "c", "new_string": "d"})

    assert result.error is not None and result.error.code == "EDITOR_WRITE_FAILED"
    assert "user rejected the change" in result.error.message
