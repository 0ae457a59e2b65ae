"""File access through the editor: `agent.services["fs"]` for the built-in file tools.

When the client offers `fs/read_text_file`, reads see the editor's unsaved buffers; when it offers
`fs/write_text_file`, writes go through the editor, so it can show and review them as its own changes
(Zed's Review Changes). Whatever the client lacks falls back to the disk: a read the client cannot serve
(not open, not found, any client error) leaves the tool to read the file itself, keeping the client's
reason for an error other than "not found" (reported if the disk cannot serve the file either); without
the write capability `writes_text` is False, so the tools write to disk themselves, with the document
they read (encoding, BOM, mode and the stale-file check); `write_text` itself, for any other caller, then
writes through the presenters' `DiskFileAccess`. A refused write fails the call with the client's whole
reason (`RemoteError.reason`: its message and `data.details`).

Must not: decide policy (the permission gate already ran), or swallow a failed editor write (the tool
reports it, with the client's reason).
"""

from __future__ import annotations

import logging

from acp_bridge.client.channel import ClientChannel
from acp_bridge.common.errors import METHOD_NOT_FOUND, RESOURCE_NOT_FOUND, ConnectionClosed, RemoteError
from presenters.fs_access import DiskFileAccess, EditorReadError
from registry_core import ToolError

log = logging.getLogger(__name__)


class ClientFiles:
    """The `FileAccess` the presenters' tools use when `agent.services["fs"]` is set."""

    def __init__(self, channel: ClientChannel, session_id: str) -> None:
        self._channel = channel
        self._session_id = session_id
        caps = channel.capabilities
        self.reads_via_client = caps.fs_read
        # Read by the presenters (`fs_access.host_writes`): without the editor's write method the tools
        # write to disk themselves, with the document they read (encoding, BOM, mode, staleness check).
        self.writes_text = caps.fs_write

    async def read_text(self, path: str) -> str | None:
        """The editor's text of `path` (unsaved edits included), or None to read the disk instead. An
        error answer other than "not found" raises `EditorReadError` with the client's whole reason: the
        tools still read the disk, and report that reason if the disk cannot serve the file either."""
        if not self.reads_via_client:
            return None
        try:
            return await self._channel.read_text_file(self._session_id, path)
        except RemoteError as exc:
            log.debug("client could not read %s (%s); reading the disk", path, exc)
            if exc.code in (RESOURCE_NOT_FOUND, METHOD_NOT_FOUND):
                return None  # the editor has nothing for this path: no refusal to report
            raise EditorReadError(exc.reason) from None
        except (ConnectionClosed, ValueError) as exc:
            log.debug("client could not read %s (%s); reading the disk", path, exc)
            return None

    async def write_text(self, path: str, content: str) -> None:
        """Write `content` to `path` through the editor, or to disk (with the disk rules of the built-in
        file tools: encoding, BOM, mode, atomic replace) without the capability. Raises ToolError (the
        editor refused, with its reason, or the disk path's errors)."""
        if self.writes_text:
            try:
                await self._channel.write_text_file(self._session_id, path, content)
            except RemoteError as exc:
                raise ToolError(
                    f"The editor did not write {path}: {exc.reason}", code="EDITOR_REFUSED"
                ) from None
            except ConnectionClosed:
                raise ToolError(f"The editor went away before writing {path}.", code="EDITOR_GONE") from None
            return
        await DiskFileAccess().write_text(path, content)
