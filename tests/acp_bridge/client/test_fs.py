"""`ClientFiles` (the editor as `agent.services["fs"]`) in process, with a fake channel: what the built-in
file tools' save path does when the editor offers reads but no writes."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from acp_bridge.client.channel import ClientCapabilities
from acp_bridge.client.fs import ClientFiles
from acp_bridge.common.errors import RemoteError
from presenters.fs_access import load_document, save_document
from registry_core import Agent, ToolError


class ReadOnlyEditor:
    """A `ClientChannel` offering fs/read_text_file only, with buffers for some paths."""

    capabilities = ClientCapabilities(fs_read=True, fs_write=False)

    def __init__(self, buffers: dict[str, str]) -> None:
        self.buffers = buffers

    async def read_text_file(self, session_id: str, path: str) -> str:
        if path not in self.buffers:
            raise RemoteError(-32002, f"not open: {path}")
        return self.buffers[path]

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        raise AssertionError("the editor did not advertise fs/write_text_file")


def _agent(tmp_path: Path, buffers: dict[str, str]) -> Agent:
    files = ClientFiles(ReadOnlyEditor(buffers), "sess_1")  # type: ignore[arg-type]
    return Agent(id="sess_1", cwd=str(tmp_path), roots=(str(tmp_path),), services={"fs": files})


async def test_a_file_changed_on_disk_since_it_was_read_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("first\n")
    agent = _agent(tmp_path, buffers={})
    doc = await load_document(agent, str(path), "notes.txt")  # the editor has no buffer: the disk's
    assert doc is not None and doc.source == "disk"
    path.write_text("changed by someone else meanwhile\n")
    with pytest.raises(ToolError) as caught:
        await save_document(agent, str(path), "mine\n", doc, "notes.txt")
    assert caught.value.code == "STALE_FILE"
    assert path.read_text() == "changed by someone else meanwhile\n"


async def test_an_editor_buffer_saved_to_disk_keeps_the_files_utf16_bom(tmp_path: Path) -> None:
    path = tmp_path / "wide.txt"
    path.write_bytes(codecs.BOM_UTF16_BE + "old\n".encode("utf-16-be"))
    agent = _agent(tmp_path, buffers={str(path): "unsaved\n"})
    doc = await load_document(agent, str(path), "wide.txt")
    assert doc is not None and doc.source == "editor"
    assert await save_document(agent, str(path), "new\n", doc, "wide.txt") == "disk"
    assert path.read_bytes() == codecs.BOM_UTF16_BE + "new\n".encode("utf-16-be")
