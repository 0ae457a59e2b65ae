"""The disk side of `fs_access` (the default `FileAccess`, used by the bridge too) and cancellation of
blocking work: a cancelled write never commits."""

from __future__ import annotations

import asyncio
import stat
import threading
import time
from pathlib import Path

import pytest

from presenters import DiskFileAccess, FileAccess
from presenters.fs_access import atomic_write, load_document, save_document
from presenters.runtime import Stopped, check, run_blocking
from registry_core import Agent, ToolError


async def test_disk_access_is_a_file_access_and_keeps_bom_and_mode(tmp_path: Path) -> None:
    access = DiskFileAccess()
    target = tmp_path / "f.txt"
    target.write_bytes(b"\xef\xbb\xbfold\r\n")
    target.chmod(0o600)

    assert isinstance(access, FileAccess)
    assert await access.read_text(str(target)) == "old\r\n"
    assert await access.read_text(str(tmp_path / "missing")) is None
    await access.write_text(str(target), "new\r\n")

    assert target.read_bytes() == b"\xef\xbb\xbfnew\r\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_a_stopped_commit_leaves_the_file_and_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "keep.txt"
    target.write_text("original\n")
    stop = threading.Event()
    stop.set()

    with pytest.raises(Stopped):
        atomic_write(str(target), b"changed\n", mode=None, signature=None, display="keep.txt", stop=stop)

    assert target.read_text() == "original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


async def test_cancelling_blocking_work_sets_its_stop_flag_and_waits_for_it(tmp_path: Path) -> None:
    seen: list[str] = []
    started = threading.Event()

    def work(stop: threading.Event) -> None:
        seen.append("started")
        started.set()
        for _ in range(200):
            time.sleep(0.005)
            try:
                check(stop)
            except Stopped:
                seen.append("stopped")
                raise

    task = asyncio.ensure_future(run_blocking(work))
    assert await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert seen == ["started", "stopped"]  # the thread had ended when the cancellation surfaced


async def test_a_host_tool_error_on_write_keeps_its_code(tmp_path: Path) -> None:
    class Refusing:
        async def read_text(self, path: str) -> str | None:
            return None

        async def write_text(self, path: str, content: str) -> None:
            raise ToolError("The editor did not write it: rejected", code="EDITOR_REFUSED")

    agent = Agent(id="a", cwd=str(tmp_path), services={"fs": Refusing()})
    with pytest.raises(ToolError) as caught:
        await save_document(agent, str(tmp_path / "x"), "x", None, "x")
    assert caught.value.code == "EDITOR_REFUSED"


class _LinesEditor:
    """An editor that answers reads as Neovim buffer-line clients do: the lines joined, no final newline."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.written: list[str] = []

    async def read_text(self, path: str) -> str | None:
        return self.text

    async def write_text(self, path: str, content: str) -> None:
        self.written.append(content)


@pytest.mark.parametrize(
    ("on_disk", "from_editor", "loaded"),
    [
        (b"a\nb\n", "a\nb", "a\nb\n"),  # the disk's final newline put back
        (b"a\r\nb\r\n", "a\r\nb", "a\r\nb\r\n"),  # in the file's own line ending
        (b"a\nb", "a\nb", "a\nb"),  # a file without one stays without
        (b"a\nb\n", "a\nchanged", "a\nchanged\n"),  # unsaved changes: the buffer's text, the file's ending
        (b"a\n", "a\n", "a\n"),  # an editor that sends it: as sent
        (b"a\n", "", ""),  # an empty buffer stays empty
    ],
)
async def test_an_editor_read_without_the_final_newline_keeps_the_files(
    tmp_path: Path, on_disk: bytes, from_editor: str, loaded: str
) -> None:
    target = tmp_path / "f.txt"
    target.write_bytes(on_disk)
    agent = Agent(id="a", cwd=str(tmp_path), services={"fs": _LinesEditor(from_editor)})
    doc = await load_document(agent, str(target), "f.txt")
    assert doc is not None and doc.text == loaded and doc.source == "editor"


async def test_an_editor_read_of_a_file_not_on_disk_is_as_sent(tmp_path: Path) -> None:
    agent = Agent(id="a", cwd=str(tmp_path), services={"fs": _LinesEditor("new buffer")})
    doc = await load_document(agent, str(tmp_path / "unsaved.txt"), "unsaved.txt")
    assert doc is not None and doc.text == "new buffer"
