"""A session's title, as `session/list` shows it, and telling the client about it.

The title comes from the first prompt (not logged: the log's first prompt gives it back,
`history.session_index`) or from the user (`/title`, `_acpBridge/setSessionTitle`) or a fork, which is
logged (`SessionInfoChanged`). The client hears it, with the time of the last activity, in a
`session_info_update` when a prompt ends (`tell`), so its list updates once per prompt.

Must not: send an update when there is nothing new to tell.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import Update
from acp_bridge.history.session_index import title_from_prompt
from acp_bridge.history.session_log import LogEvent, SessionInfoChanged
from acp_bridge.history.store import iso_time


class TitleHost(Protocol):
    """Where the title's changes go (`session.Session` is one)."""

    def record(self, event: LogEvent) -> None: ...

    def send(self, update: Update) -> None: ...


class SessionTitle:
    """One session's title (None until it has one), where it came from, and whether the client knows it."""

    def __init__(self, host: TitleHost) -> None:
        self._host = host
        self.title: str | None = None
        self.source: str | None = None  # "prompt", "user" or "fork" (`SessionInfoChanged.title_source`)
        self._told = True

    def set(self, title: str, *, source: str = "user", tell: bool = True) -> None:
        """The user (or a fork) named the session: logged (the list shows it, a reload keeps it) and told
        to the client, now or (`tell` False) with the next `tell`."""
        self.title, self.source = title, source
        self._host.record(SessionInfoChanged(title=title, title_source=source))
        self._told = False
        if tell:
            self.tell()

    def from_prompt(self, text: str) -> None:
        """A prompt's words title a session that has no title yet: not logged, told with the next `tell`."""
        if self.title is None:
            self.title, self.source = title_from_prompt(text), "prompt"
            self._told = self.title is None

    def tell(self, *, activity: bool = False) -> None:
        """Send `session_info_update`: the title when the client has not been told it, and the time of
        the last activity when `activity` (a prompt just ended)."""
        title = self.title if not self._told else None
        if title is None and not activity:
            return
        self._told = True
        now = iso_time(datetime.now(UTC).timestamp()) if activity else None
        self._host.send(mapping.session_info_update(title=title, updated_at=now))

    def restore(self, info: SessionInfoChanged, first_prompt: str | None) -> None:
        """Take back the title a loaded log ends with, else its first prompt's (the client is told with
        the next `tell`)."""
        if info.title is not None:
            self.title, self.source = info.title, info.title_source
        elif first_prompt is not None:
            self.title, self.source = title_from_prompt(first_prompt), "prompt"
        self._told = self.title is None
