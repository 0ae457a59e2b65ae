"""Append-only session logs: what `session/load` replays and `session/list` lists.

One JSON Lines file per session, `<state_dir>/sessions/<session id>.jsonl`. The first line is the header,
every later line one durable event of the conversation, in order; `session_log` defines both and their
JSON form. This module only stores the lines: a file is only ever appended to, so a crash loses at most
the line being written; a torn last line is skipped on load.

Each line is flushed to the kernel as it is written, so a killed bridge (`kill -9`) loses nothing it
logged. Lines are not fsync'd: that would guard against a machine crash only, which the file tools'
own writes (rename without fsync) do not survive either, and it would cost a disk round trip (1-20 ms)
for each of the hundreds of events a step can log.

Must not: keep anything a replay could not reproduce from these events, accept a session id that is not
one of ours as a path (ids are checked against `SESSION_ID`), or raise into a turn (a failing disk is
logged, and the conversation goes on without its log).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .errors import quoted
from .session_log import SessionHeader, UserPrompt, decode

log = logging.getLogger(__name__)

SESSION_ID = re.compile(r"^sess_[0-9a-f]{32}$")
PAGE_SIZE = 50
_TITLE_CHARS = 80


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What `session/list` shows of one stored session."""

    session_id: str
    cwd: str
    roots: tuple[str, ...]
    title: str | None
    updated_at: str  # ISO 8601

    def to_acp(self) -> dict[str, Any]:
        info: dict[str, Any] = {"sessionId": self.session_id, "cwd": self.cwd, "updatedAt": self.updated_at}
        extra = [r for r in self.roots if r != self.cwd]
        if extra:
            info["additionalDirectories"] = extra
        if self.title:
            info["title"] = self.title
        return info


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SessionStore:
    """The session logs under one state directory (created on first use)."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.root = Path(state_dir).expanduser() / "sessions"
        self._files: dict[str, IO[str]] = {}

    def _path(self, session_id: str) -> Path:
        if not SESSION_ID.match(session_id):
            raise ValueError(f"not a session id: {quoted(session_id)}")
        return self.root / f"{session_id}.jsonl"

    # --- writing (the `Recorder` of sessions.py) -----------------------------------------------------

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
        header = SessionHeader(session_id, cwd, roots, _iso(datetime.now(UTC).timestamp()))
        self._write(session_id, header.to_json())

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        self._write(session_id, event)

    def _write(self, session_id: str, event: Mapping[str, Any]) -> None:
        try:
            handle = self._files.get(session_id)
            if handle is None:
                self.root.mkdir(parents=True, exist_ok=True)
                handle = open(self._path(session_id), "a", encoding="utf-8")  # noqa: SIM115 - kept open
                self._files[session_id] = handle
            handle.write(json.dumps(event, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
            handle.flush()
        except (OSError, ValueError) as exc:
            log.warning("session log of %s not written: %s", session_id, exc)

    def end(self, session_id: str) -> None:
        """Close one session's log file (a later event for it reopens the file and appends)."""
        handle = self._files.pop(session_id, None)
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass

    def close(self) -> None:
        for handle in self._files.values():
            try:
                handle.close()
            except OSError:
                pass
        self._files.clear()

    # --- reading ------------------------------------------------------------------------------------

    def load(self, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """(header, events) of a stored session, or None when there is none (or the id is not ours)."""
        try:
            path = self._path(session_id)
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError):
            return None
        events = []
        for number, line in enumerate(lines, 1):
            try:
                event = json.loads(line)
            except ValueError:
                log.warning("%s:%d is not a JSON line; skipped", path, number)
                continue
            if isinstance(event, dict):
                events.append(event)
        if not events or events[0].get("type") != SessionHeader.KIND:
            return None
        return events[0], events[1:]

    def list(
        self, cwd: str | None = None, cursor: str | None = None
    ) -> tuple[list[SessionRecord], str | None]:
        """Stored sessions, newest first (optionally only those of `cwd`), a page at a time. Raises
        ValueError for a cursor this store did not hand out."""
        offset = 0
        if cursor is not None:
            if not cursor.startswith("offset:") or not cursor[7:].isdigit():
                raise ValueError(f"not a cursor from session/list: {quoted(cursor)}")
            offset = int(cursor[7:])
        try:
            files = [p for p in self.root.glob("sess_*.jsonl") if SESSION_ID.match(p.stem)]
        except OSError:
            files = []
        stamped = []
        for path in files:
            try:
                stamped.append((path.stat().st_mtime, path))
            except OSError:
                continue
        stamped.sort(key=lambda item: item[0], reverse=True)
        records: list[SessionRecord] = []
        for mtime, path in stamped:
            record = self._record(path, mtime)
            if record is not None and (cwd is None or os.path.normpath(record.cwd) == os.path.normpath(cwd)):
                records.append(record)
        page = records[offset : offset + PAGE_SIZE]
        more = offset + PAGE_SIZE < len(records)
        return page, (f"offset:{offset + PAGE_SIZE}" if more else None)

    def _record(self, path: Path, mtime: float) -> SessionRecord | None:
        """What `session/list` shows of one log: its header, and its first prompt as the title."""
        header: SessionHeader | None = None
        title: str | None = None
        try:
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if header is None:
                        if not isinstance(event, dict) or event.get("type") != SessionHeader.KIND:
                            return None
                        try:
                            header = SessionHeader.from_json(event)
                        except ValueError:
                            return None
                        continue
                    try:
                        prompt = decode(event) if isinstance(event, dict) else None
                    except (KeyError, TypeError, ValueError):
                        continue
                    if isinstance(prompt, UserPrompt):
                        text = " ".join(prompt.text.split())
                        title = text if len(text) <= _TITLE_CHARS else text[: _TITLE_CHARS - 1] + "…"
                        break
        except OSError:
            return None
        if header is None:
            return None
        return SessionRecord(path.stem, header.cwd, header.roots, title, _iso(mtime))
