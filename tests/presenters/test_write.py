"""`write` end to end: create, overwrite (line-diff hunks), what is preserved, what is refused, cards."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from presenters.changes import COMMITS_SERVICE
from presenters.diffs import apply_hunks
from registry_core import DiffCallView, DiffResultView, GenericResultView
from registry_core.json_values import thaw

from .conftest import Buffers, Session, hunks_of, text_of


async def test_create_shows_the_whole_file_and_makes_parents(session: Session) -> None:
    args = {"file_path": "pkg/new/mod.py", "content": "a = 1\nb = 2\n"}

    result = await session.run("write", args)

    target = session.cwd / "pkg/new/mod.py"
    assert target.read_text() == "a = 1\nb = 2\n"
    assert text_of(result) == "Created pkg/new/mod.py (2 lines)."
    assert result.meta["created"] is True
    card = session.result_card("write", args, result)
    assert isinstance(card, DiffResultView) and card.title == "Write pkg/new/mod.py"
    assert [(d.path, d.old_text, d.new_text) for d in card.diffs] == [(str(target), None, "a = 1\nb = 2\n")]
    assert [(loc.path, loc.line) for loc in card.locations] == [(str(target), 1)]
    mode = stat.S_IMODE(target.stat().st_mode)
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


async def test_call_card_is_a_diff_with_no_old_text(session: Session) -> None:
    card = session.call_card("write", {"file_path": "/abs/x.txt", "content": "hi\n"})
    assert isinstance(card, DiffCallView) and card.title == "Write /abs/x.txt"
    assert [(d.path, d.old_text, d.new_text) for d in card.diffs] == [("/abs/x.txt", None, "hi\n")]


async def test_overwrite_gives_applied_hunks_with_context(session: Session) -> None:
    old_lines = [f"line {i}\n" for i in range(1, 41)]
    target = session.cwd / "f.txt"
    target.write_text("".join(old_lines))
    new_lines = list(old_lines)
    new_lines[4] = "changed 5\n"
    del new_lines[29]  # line 30 removed
    new_lines.insert(35, "inserted\n")
    args = {"file_path": "f.txt", "content": "".join(new_lines)}

    result = await session.run("write", args)

    assert target.read_text() == "".join(new_lines)
    hunks = hunks_of(result.meta)
    assert len(hunks) == 2  # lines 30 and 36 are close enough to share a hunk
    assert apply_hunks("".join(old_lines), hunks) == "".join(new_lines)
    first = hunks[0]
    assert (first.old_start, first.old_lines, first.new_start, first.new_lines) == (2, 7, 2, 7)
    assert first.old_text == "".join(old_lines[1:8]) and first.line == 5
    card = session.result_card("write", args, result)
    assert isinstance(card, DiffResultView)
    assert [d.old_text for d in card.diffs] == [h.old_text for h in hunks]
    assert [loc.line for loc in card.locations] == [5, 30]


async def test_overwrite_keeps_crlf_bom_and_mode(session: Session) -> None:
    target = session.cwd / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\n")
    target.chmod(0o640)

    await session.run("write", {"file_path": "win.txt", "content": "one\nTWO\nthree\n"})

    assert target.read_bytes() == b"\xef\xbb\xbfone\r\nTWO\r\nthree\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


async def test_same_content_changes_nothing(session: Session) -> None:
    target = session.cwd / "same.txt"
    target.write_text("x\n")
    before = target.stat().st_mtime_ns
    args = {"file_path": "same.txt", "content": "x\n"}

    result = await session.run("write", args)

    assert target.stat().st_mtime_ns == before
    assert "nothing changed" in text_of(result)
    card = session.result_card("write", args, result)
    assert isinstance(card, GenericResultView) and card.content is not None
    assert "No change" in card.content[0].text


async def test_writes_through_a_symlink_to_its_target(session: Session) -> None:
    real = session.cwd / "real.txt"
    real.write_text("old\n")
    (session.cwd / "link.txt").symlink_to(real)

    await session.run("write", {"file_path": "link.txt", "content": "new\n"})

    assert (session.cwd / "link.txt").is_symlink()
    assert real.read_text() == "new\n"


async def test_refuses_binary_read_only_and_directories(session: Session) -> None:
    (session.cwd / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    ro = session.cwd / "ro.txt"
    ro.write_text("keep\n")
    ro.chmod(0o444)
    (session.cwd / "d").mkdir()

    binary = await session.run("write", {"file_path": "img.png", "content": "text"})
    readonly = await session.run("write", {"file_path": "ro.txt", "content": "changed\n"})
    directory = await session.run("write", {"file_path": "d", "content": "x"})

    assert binary.error is not None and binary.error.code == "BINARY_FILE"
    assert (session.cwd / "img.png").read_bytes().startswith(b"\x89PNG")
    assert readonly.error is not None and readonly.error.code == "PERMISSION_DENIED"
    assert ro.read_text() == "keep\n"
    assert directory.error is not None and directory.error.code == "IS_DIRECTORY"
    assert not [p for p in session.cwd.iterdir() if p.name.endswith(".tmp")]  # no temp file left


async def test_goes_through_the_editor_service_when_present(make_session: Any) -> None:
    probe = make_session()
    target = probe.cwd / "open.txt"
    target.write_text("disk\n")
    buffers = Buffers({str(target): "buffer line\n"})
    session = make_session(services={"fs": buffers})
    args = {"file_path": "open.txt", "content": "buffer line\nadded\n"}

    result = await session.run("write", args)

    assert buffers.writes == [(str(target), "buffer line\nadded\n")]
    assert target.read_text() == "disk\n"  # the editor owns the write
    assert result.meta["source"] == "editor"
    assert hunks_of(result.meta)[0].old_text == "buffer line\n"  # diffed against the buffer, not the disk


async def test_failure_card_replaces_the_pending_diff(session: Session) -> None:
    (session.cwd / "d").mkdir()
    args = {"file_path": "d", "content": "x"}
    result = await session.run("write", args)
    card = session.result_card("write", args, result)
    assert isinstance(card, GenericResultView) and card.title == "Write d"
    assert card.content is not None and "is a directory" in card.content[0].text


class _Journal:
    """A host's `CommitJournal` noting, at each report, the thread it came from and the file as it was."""

    def __init__(self) -> None:
        self.reports: list[tuple[str, str, bool, str | None, dict[str, Any]]] = []

    def committed(self, call_id: str, tool: str, summary: str, meta: Any) -> None:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        path = Path(meta["path"])
        now = path.read_text() if path.exists() else None
        self.reports.append((call_id, summary, on_loop, now, dict(meta)))


@pytest.mark.parametrize("tool", ["write", "edit"])
async def test_a_change_on_disk_is_told_to_the_journal_from_the_thread_that_made_it(
    make_session: Callable[..., Session], tool: str
) -> None:
    # Told in the worker thread right after the rename, not when the event loop next runs the call: a
    # `kill -9` between the two would leave a changed file that the session log does not know of.
    journal = _Journal()
    session = make_session(services={COMMITS_SERVICE: journal})
    target = session.cwd / "f.txt"
    target.write_text("old line\n")
    args = (
        {"file_path": "f.txt", "content": "new line\n"}
        if tool == "write"
        else {"file_path": "f.txt", "old_string": "old", "new_string": "new"}
    )

    result = await session.run(tool, args)

    assert not result.is_error, text_of(result)
    [(call_id, summary, on_loop, seen, meta)] = journal.reports
    assert on_loop is False and seen == "new line\n"  # off the loop, the file already replaced
    assert (summary, meta) == (text_of(result), thaw(result.meta))  # what the result then says
    assert call_id == f"call-{session.calls}" and meta["source"] == "disk"


@pytest.mark.parametrize("tool", ["write", "edit"])
async def test_a_change_through_the_editor_is_told_to_the_journal_once_it_is_answered(
    make_session: Callable[..., Session], tool: str
) -> None:
    journal = _Journal()
    target_path = str(make_session().cwd / "buf.txt")
    buffers = Buffers({target_path: "old text\n"})
    session = make_session(services={COMMITS_SERVICE: journal, "fs": buffers})
    args = (
        {"file_path": "buf.txt", "content": "new text\n"}
        if tool == "write"
        else {"file_path": "buf.txt", "old_string": "old", "new_string": "new"}
    )

    result = await session.run(tool, args)

    assert buffers.writes == [(target_path, "new text\n")]
    [(_, summary, _, _, meta)] = journal.reports
    assert (summary, meta) == (text_of(result), thaw(result.meta)) and meta["source"] == "editor"


async def test_nothing_is_told_to_the_journal_when_nothing_changed_or_the_write_failed(
    make_session: Callable[..., Session],
) -> None:
    journal = _Journal()
    session = make_session(services={COMMITS_SERVICE: journal})
    (session.cwd / "same.txt").write_text("x\n")
    (session.cwd / "locked.txt").write_text("x\n")
    (session.cwd / "locked.txt").chmod(0o444)

    same = await session.run("write", {"file_path": "same.txt", "content": "x\n"})
    locked = await session.run("write", {"file_path": "locked.txt", "content": "y\n"})

    assert not same.is_error and locked.is_error
    assert journal.reports == []
