"""Append-only session logs: what `session/load` and `session/resume` read back and `session/list` lists.

One JSON Lines file per session, `<state_dir>/sessions/<session id>.jsonl`. The first line is the header,
every later line one durable event of the conversation, in order; `session_log` defines both and their
JSON form. This module only stores the lines: a file is only ever appended to, so a crash loses at most
the line being written; a torn last line is skipped on load. What `session/list` shows besides the
header (the title, changed roots) is also mirrored, as the last `info` event left it, into a small
`<session id>.info.json` next to the log (replaced atomically), so listing reads two small things per
session instead of whole conversations (`session_index`). `delete` removes both.

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
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from acp_bridge.common.errors import quoted
from acp_bridge.common.json_bytes import dumps
from acp_bridge.history.session_log import SessionHeader, SessionInfoChanged

log = logging.getLogger(__name__)

SESSION_ID = re.compile(r"^sess_[0-9a-f]{32}$")
INFO_SUFFIX = ".info.json"


def iso_time(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class SessionStore:
    """The session logs under one state directory (created on first use)."""

    def __init__(self, state_dir: str | os.PathLike[str]) -> None:
        self.root = Path(state_dir).expanduser() / "sessions"
        self._files: dict[str, IO[bytes]] = {}

    def _path(self, session_id: str) -> Path:
        if not SESSION_ID.match(session_id):
            raise ValueError(f"not a session id: {quoted(session_id)}")
        return self.root / f"{session_id}.jsonl"

    def info_path(self, session_id: str) -> Path:
        """Where the session's list info is mirrored (raises ValueError for an id that is not ours)."""
        return self._path(session_id).with_suffix(INFO_SUFFIX)

    # --- writing (the `Recorder` of sessions.py) -----------------------------------------------------

    def begin(self, session_id: str, cwd: str, roots: tuple[str, ...]) -> None:
        # Written at once: a session id `session/new` answered stays loadable and resumable after a
        # restart even if nobody prompted it yet (acpx makes a session in one process and prompts it from
        # the next). `session/list` hides a log that holds only its header (`session_index`).
        header = SessionHeader(session_id, cwd, roots, iso_time(datetime.now(UTC).timestamp()))
        self._write(session_id, header.to_json())

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        self._write(session_id, event)
        if event.get("type") == SessionInfoChanged.KIND:
            self._mirror_info(session_id, event)

    def _mirror_info(self, session_id: str, event: Mapping[str, Any]) -> None:
        """Merge an `info` event into the session's info file: fields it has replace the stored ones."""
        try:
            path = self.info_path(session_id)
            info = read_info(path)
            info.update({k: v for k, v in event.items() if k != "type"})
            temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            temp.write_text(json.dumps(info, ensure_ascii=False), encoding="utf-8")
            os.replace(temp, path)
        except (OSError, ValueError) as exc:
            log.warning("session info of %s not written: %s", session_id, exc)

    def _write(self, session_id: str, event: Mapping[str, Any]) -> None:
        try:
            handle = self._files.get(session_id)
            if handle is None:
                self.root.mkdir(parents=True, exist_ok=True)
                handle = open(self._path(session_id), "ab")  # noqa: SIM115 - kept open
                self._files[session_id] = handle
            handle.write(dumps(event) + b"\n")
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

    def delete(self, session_id: str) -> bool:
        """Delete a session's log and info file. False when there was no log (or the id is not ours)."""
        self.end(session_id)
        try:
            path = self._path(session_id)
        except ValueError:
            return False
        existed = path.exists()
        for doomed in (path, self.info_path(session_id)):
            try:
                doomed.unlink()
            except FileNotFoundError:
                pass
        return existed

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
            # Split at line feeds only: `splitlines` also splits at U+2028 and U+0085, which the encoder
            # leaves unescaped inside strings (a file's text), and would cut such an event in two.
            lines = path.read_bytes().split(b"\n")
        except (OSError, ValueError):
            return None
        events = []
        for number, line in enumerate(lines, 1):
            try:
                event = json.loads(line) if line.strip() else None
            except ValueError:
                log.warning("%s:%d is not a JSON line; skipped", path, number)
                continue
            if isinstance(event, dict):
                events.append(event)
        if not events or events[0].get("type") != SessionHeader.KIND:
            return None
        return events[0], events[1:]


def read_info(path: Path) -> dict[str, Any]:
    """A session's mirrored info (`{}` when there is none or it is unreadable)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}
