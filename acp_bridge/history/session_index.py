"""`session/list` over the stored logs: titles, the cwd filter and cursor paging; and session titles.

A listed session is its log's header (cwd, roots), its mirrored info (`store.read_info`: the title and
changed roots its last `info` events left) and its log's modification time (`updatedAt`). A log written
before titles were logged is titled by its first prompt.

Paging is keyset paging, newest first: the order is (modification time, session id), descending, and a
cursor is the position of the last session a page showed. A session that changes while the client pages
moves to the top and is not shown twice, and no session is skipped because others were added or deleted
in between (an offset would do both). The cursor is opaque to clients (ACP: "treat cursors as opaque
tokens"): base64url of a small JSON array, versioned, and checked on the way back in.

Must not: read more of the logs than a page needs (headers and info files, the first prompt of an old
log), or trust a cursor (a malformed one is a ValueError, which the face answers with -32602).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from acp_bridge.common.errors import quoted
from acp_bridge.history.session_log import SessionHeader, UserPrompt, decode
from acp_bridge.history.store import SESSION_ID, SessionStore, iso_time, read_info

log = logging.getLogger(__name__)

PAGE_SIZE: Final = 50
TITLE_CHARS: Final = 80
_CURSOR_VERSION: Final = 1
_RESOURCE: Final = re.compile(r'<resource uri="[^"]*"[^>]*>.*?</resource>', re.DOTALL)
# A `resource_link` block as `prompt_blocks` writes it: a paragraph of its own.
_LINK: Final = re.compile(r"^\[Resource: [^\n]*\]\([^\n]*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What `session/list` shows of one stored session."""

    session_id: str
    cwd: str
    roots: tuple[str, ...]
    title: str | None
    updated_ns: int

    @property
    def updated_at(self) -> str:
        return iso_time(self.updated_ns / 1e9)

    @property
    def additional_directories(self) -> list[str]:
        return [r for r in self.roots if os.path.normpath(r) != os.path.normpath(self.cwd)]

    def to_acp(self) -> dict[str, Any]:
        # The complete additional-root list, an empty one included: the agent advertises
        # `sessionCapabilities.additionalDirectories`, and an omitted field would mean "not reported".
        info: dict[str, Any] = {
            "sessionId": self.session_id,
            "cwd": self.cwd,
            "additionalDirectories": self.additional_directories,
            "updatedAt": self.updated_at,
        }
        if self.title:
            info["title"] = self.title
        return info


def title_from_prompt(text: str) -> str | None:
    """A session title from its first prompt: the words the user typed (attached resources and links left
    out), on one line, at most `TITLE_CHARS` characters."""
    words = " ".join(_LINK.sub(" ", _RESOURCE.sub(" ", text)).split())
    if not words:
        return None
    return words if len(words) <= TITLE_CHARS else words[: TITLE_CHARS - 1].rstrip() + "…"


def clean_title(raw: object) -> str:
    """A title a user set, on one line and bounded. Raises ValueError when nothing is left of it."""
    if not isinstance(raw, str):
        raise ValueError("title must be a string")
    words = " ".join(raw.split())
    if not words:
        raise ValueError("title must not be empty")
    return words[:200]


# --- listing -----------------------------------------------------------------------------------------


def list_sessions(
    store: SessionStore, cwd: str | None = None, cursor: str | None = None, page_size: int = PAGE_SIZE
) -> tuple[list[SessionRecord], str | None]:
    """A page of stored sessions, newest first (only those of `cwd`, when given), and the cursor of the
    next page (None on the last). Raises ValueError for a cursor this index did not hand out."""
    after = _decode_cursor(cursor) if cursor is not None else None
    wanted = os.path.normpath(cwd) if cwd is not None else None
    store.flush()  # the logs' modification times are the order: the queued lines first
    page: list[SessionRecord] = []
    for stamp, path in _newest_first(store.root):
        if after is not None and stamp >= after:
            continue
        record = _record(store, path, stamp[0])
        if record is None or (wanted is not None and os.path.normpath(record.cwd) != wanted):
            continue
        if len(page) == page_size:
            last = page[-1]
            return page, _encode_cursor((last.updated_ns, last.session_id))
        page.append(record)
    return page, None


def _newest_first(root: Path) -> Iterator[tuple[tuple[int, str], Path]]:
    stamped: list[tuple[tuple[int, str], str]] = []
    try:
        with os.scandir(root) as entries:  # no pathlib per log: a listing reads a thousand of them
            for entry in entries:
                name = entry.name
                if not name.endswith(".jsonl") or not SESSION_ID.match(name[:-6]):
                    continue
                try:
                    stamped.append(((entry.stat().st_mtime_ns, name[:-6]), entry.path))
                except OSError:
                    continue  # deleted meanwhile
    except OSError:
        return
    stamped.sort(reverse=True)
    for stamp, path in stamped:
        yield stamp, Path(path)


def _record(store: SessionStore, path: Path, mtime_ns: int) -> SessionRecord | None:
    """One log's list entry: its header, its info file, else its first prompt as the title."""
    try:
        with open(path, encoding="utf-8") as handle:
            header = _header(handle.readline())
            if header is None:
                return None
            after_header = handle.tell()
            if not handle.read(1):
                return None  # a session nobody prompted: resumable by its id, never listed
            handle.seek(after_header)
            info = read_info(store.info_path(path.stem))
            title = info.get("title")
            if not isinstance(title, str):
                title = _first_prompt_title(handle)
    except OSError:
        return None
    roots = info.get("roots")
    chosen = tuple(r for r in roots if isinstance(r, str)) if isinstance(roots, list) else header.roots
    return SessionRecord(path.stem, header.cwd, chosen or (header.cwd,), title, mtime_ns)


def _header(line: str) -> SessionHeader | None:
    try:
        raw = json.loads(line)
        if not isinstance(raw, dict) or raw.get("type") != SessionHeader.KIND:
            return None
        return SessionHeader.from_json(raw)
    except ValueError:
        return None


def _first_prompt_title(lines: Iterator[str]) -> str | None:
    for line in lines:
        try:
            raw = json.loads(line)
            event = decode(raw) if isinstance(raw, dict) else None
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(event, UserPrompt):
            return title_from_prompt(event.text)
    return None


# --- cursors -----------------------------------------------------------------------------------------


def _encode_cursor(position: tuple[int, str]) -> str:
    raw = json.dumps([_CURSOR_VERSION, position[0], position[1]], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[int, str]:
    problem = ValueError(f"not a cursor from session/list: {quoted(cursor)}")
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise problem from None
    if not (isinstance(raw, list) and len(raw) == 3 and raw[0] == _CURSOR_VERSION):
        raise problem
    stamp, session_id = raw[1], raw[2]
    if not isinstance(stamp, int) or isinstance(stamp, bool) or not isinstance(session_id, str):
        raise problem
    return stamp, session_id
