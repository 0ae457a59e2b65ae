"""Append-only session logs: what `session/load` and `session/resume` read back and `session/list` lists.

One JSON Lines file per session, `<state_dir>/sessions/<session id>.jsonl`. The first line is the header,
every later line one durable event of the conversation, in order; `session_log` defines both and their
JSON form. This module only stores the lines: a file is only ever appended to, whole lines at a time.
A write can still be cut short: by a full disk, or by a `kill -9` that lands inside it (Linux ends a
write to a regular file at a page boundary for a fatal signal). Such a torn last line is skipped on load,
and the next append starts on a line of its own (a log is checked for a final line feed when opened), so
it never takes a later event with it; and what it held was never told to a client (below).

What `session/list` shows besides the header (the title, changed roots) is also mirrored, as the last
`info` event left it, into a small `<session id>.info.json` next to the log (replaced atomically), so
listing reads two small things per session instead of whole conversations (`session_index`). `delete`
removes both.

Group commit. `append` encodes an event at once and queues its line; the queued lines of a session are
written with one `write()` at the next flush point, and nothing is queued across an event-loop
iteration:
- before any frame leaves the process (`flush` is the output barrier of `runtime.stdio`, which the core's
  set-up installs): whatever a client has been told about (a result, a card, an answer) was logged
  before the frame that tells it, so it is on disk first;
- at once for an event that records a change already made outside the log (`CallCommitted`: a file tool
  reports its write the moment it is made, from the worker thread that renamed the file into place, a
  few instructions after the rename; `presenters.fs_access.save_document`), so a call killed between
  its write and its result still replays completed with its diff. The store's lock keeps such a line
  and the loop's group writes whole and in order;
- at the end of the event-loop iteration that queued it (a callback scheduled on the first queued line),
  and before the log is read (`load`), closed, forked or deleted; without a running loop, at once.
So a killed bridge (`kill -9`) loses only events of the current iteration that no client has seen and
that changed nothing outside the log: as if it had been killed just before they happened. Lines are not
fsync'd: that would guard against a machine crash only, which the file tools' own writes (rename without
fsync) do not survive either, and it would cost a disk round trip (1-20 ms) for each flush.

Reading (`load`) parses each line with orjson, except where orjson could read a line differently from the
standard library (`_loads`): a line with an integer past 64 bits (orjson reads it as a float; ids must
stay exact), and a line orjson refuses (the standard library also reads NaN and Infinity).

Must not: keep anything a replay could not reproduce from these events, accept a session id that is not
one of ours as a path (ids are checked against `SESSION_ID`), or raise into a turn (a failing disk is
logged, and the conversation goes on without its log).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import orjson

from acp_bridge.common.errors import quoted
from acp_bridge.common.json_bytes import dumps
from acp_bridge.history.session_log import CallCommitted, SessionHeader, SessionInfoChanged

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
        self._queued: dict[str, list[bytes]] = {}  # session id → encoded lines not written yet
        self._flush_on: asyncio.AbstractEventLoop | None = None  # where a flush is scheduled
        # Held while lines are queued or written: a file tool's `CallCommitted` is appended from the
        # worker thread that made the change (`presenters.fs_access.save_document`), right after it.
        self._lock = threading.RLock()

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
        self._queue(session_id, header.to_json())
        self.flush(session_id)

    def append(self, session_id: str, event: Mapping[str, Any]) -> None:
        """Queue one event of the session (see the module docstring for when it is written). May be called
        from another thread than the event loop's: it is then written at once."""
        kind = event.get("type")
        if kind == CallCommitted.KIND:
            with self._lock:  # the change is made already: its record must not wait
                self._queue(session_id, event)
                self.flush(session_id)
            return
        self._queue(session_id, event)
        if kind == SessionInfoChanged.KIND:
            self._mirror_info(session_id, event)

    def _queue(self, session_id: str, event: Mapping[str, Any]) -> None:
        try:
            line = dumps(event) + b"\n"
        except (TypeError, ValueError) as exc:
            log.warning("session log of %s: an event not written: %s", session_id, exc)
            return
        with self._lock:
            queued = self._queued.get(session_id)
            if queued is None:
                self._queued[session_id] = [line]
            else:
                queued.append(line)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop (a script, a test, a worker thread): write at once
            self.flush(session_id)
            return
        if self._flush_on is not loop:  # (a loop that closed before its flush ran counts as none)
            loop.call_soon(self.flush)
            self._flush_on = loop

    def flush(self, session_id: str | None = None) -> None:
        """Write the queued lines (of one session, or of all): one `write()` per session. Cheap when none
        are queued: it runs before every frame the process sends."""
        if session_id is None:
            self._flush_on = None
            if not self._queued:
                return
            with self._lock:  # held across the writes, so a session's lines reach its file in order
                queued, self._queued = self._queued, {}
                for one, lines in queued.items():
                    self._write(one, lines)
            return
        with self._lock:
            lines = self._queued.pop(session_id, [])
            if lines:
                self._write(session_id, lines)

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

    def _write(self, session_id: str, lines: list[bytes]) -> None:
        try:
            data = lines[0] if len(lines) == 1 else b"".join(lines)
            handle = self._files.get(session_id)
            if handle is None:
                self.root.mkdir(parents=True, exist_ok=True)
                # Unbuffered: each write() below is one system call with whole lines, nothing held back;
                # readable too, for the last byte.
                handle = open(self._path(session_id), "a+b", buffering=0)  # noqa: SIM115 - kept open
                self._files[session_id] = handle
                end = os.fstat(handle.fileno()).st_size
                if end and os.pread(handle.fileno(), 1, end - 1) != b"\n":
                    data = b"\n" + data  # a torn last line (see the module docstring) stays apart
            written = handle.write(data)
            while written is not None and written < len(data):  # a short write (rare): the rest follows
                data = data[written:]
                written = handle.write(data)
        except (OSError, ValueError) as exc:
            log.warning("session log of %s not written: %s", session_id, exc)
            self.end(session_id)  # reopened for the next line, which then starts on a line of its own

    def end(self, session_id: str) -> None:
        """Close one session's log file (a later event for it reopens the file and appends)."""
        with self._lock:
            self.flush(session_id)
            handle = self._files.pop(session_id, None)
        if handle is not None:
            try:
                handle.close()
            except OSError:
                pass

    def delete(self, session_id: str) -> bool:
        """Delete a session's log and info file. False when there was no log (or the id is not ours)."""
        with self._lock:
            self._queued.pop(session_id, None)
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
        with self._lock:
            self.flush()
            handles = list(self._files.values())
            self._files.clear()
        for handle in handles:
            try:
                handle.close()
            except OSError:
                pass

    # --- reading ------------------------------------------------------------------------------------

    def load(self, session_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """(header, events) of a stored session, or None when there is none (or the id is not ours)."""
        stored = self.read(session_id)
        return (stored[0], list(stored[1])) if stored is not None else None

    def read(self, session_id: str) -> tuple[dict[str, Any], Iterator[dict[str, Any]]] | None:
        """As `load`, the events parsed as they are iterated (once): a replay uses each event right after
        it is parsed, so a long log is never held in memory as a whole, and is read while in cache. The
        file is read at once: later appends are not part of it."""
        try:
            path = self._path(session_id)
            self.flush(session_id)
            data = path.read_bytes()
        except (OSError, ValueError):
            return None
        # One scan of the whole log for a long digit run (below) instead of one per line: nearly always
        # there is none, and orjson then reads every line as the standard library would.
        plain = _LONG_DIGIT_RUN not in data.translate(_DIGITS_AS_ZERO)
        events = _events(path, data, plain)
        header = next(events, None)
        if header is None or header.get("type") != SessionHeader.KIND:
            return None
        return header, events


def _events(path: Path, data: bytes, plain: bool) -> Iterator[dict[str, Any]]:
    """The JSON objects of `data`'s lines, in order; a line that is no JSON (a torn last line) is skipped.
    Lines end at line feeds only: `splitlines` also splits at U+2028 and U+0085, which the encoder leaves
    unescaped inside strings (a file's text), and would cut such an event in two."""
    start, number = 0, 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        line, start = data[start:end], end + 1
        number += 1
        if not line or line.isspace():
            continue
        try:
            event = _loads(line, plain)
        except ValueError:
            log.warning("%s:%d is not a JSON line; skipped", path, number)
            continue
        if isinstance(event, dict):
            yield event


# An integer of 19 digits or more may be past 64 bits (-9223372036854775809 has 19), which orjson reads as
# a float: such a line is read by the standard library. Found in C: every digit made "0", then a run of
# 19 looked for (a regular expression costs more than the parse). A digit run inside a string counts too:
# the line is then only read more slowly, never differently.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGIT_RUN = b"0" * 19


def _loads(line: bytes, plain: bool = False) -> Any:
    """One stored line, as `json.loads` reads it (raises ValueError when it is no JSON): orjson where it
    reads the line alike, which is nearly always (see the module docstring). `plain`: the line is known
    to hold no long digit run."""
    if plain or _LONG_DIGIT_RUN not in line.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(line)
        except orjson.JSONDecodeError:
            pass  # NaN, Infinity, a lone surrogate escape...: the standard library's reading decides
    return json.loads(line)


def read_info(path: Path) -> dict[str, Any]:
    """A session's mirrored info (`{}` when there is none or it is unreadable)."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}
