"""Undo for a session: `/rewind [N]`, the faces' rewind and revert-one-file requests, and cutting a log
at a turn for a fork. The files go back through the session's checkpoints (`acp_bridge.checkpoints`);
the conversation goes on, and the model is told what was reverted (a note in its history, logged as a
`DeferredContext`, so a reload tells it too).

`/rewind` puts back the files of the last turn that changed any; `/rewind N` those of turn N and later;
`/rewind list` (or a turn that changed nothing) lists the turns. A file changed since by someone other
than the agent is never overwritten silently: the user is asked (`session/request_permission`:
overwrite, or keep theirs and restore the rest); the faces' requests answer `conflict` instead, and
overwrite only with `force`.

Must not: run while a prompt runs (the turn's calls would race the restore), or touch a file the agent
did not change.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from acp_bridge import mapping
from acp_bridge.checkpoints.service import Restore, SessionCheckpoints, UnknownTurn, restore_note
from acp_bridge.client.channel import ClientChannel, Update
from acp_bridge.common.errors import InvalidParams, InvalidRequest
from acp_bridge.history.session_log import DeferredContext, LogEvent, UserPrompt, decode
from acp_bridge.models import Message, UserMessage

log = logging.getLogger(__name__)

USAGE = "Usage: `/rewind` (the last turn that changed files), `/rewind N` (turn N and later), `/rewind list`."


class RewindHost(Protocol):
    """What undo needs of its session (`Session` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def cwd(self) -> str: ...

    @property
    def busy(self) -> bool: ...

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def checkpoints(self) -> SessionCheckpoints | None: ...

    @property
    def history(self) -> list[Message]: ...

    def record(self, event: LogEvent) -> None: ...

    def send(self, update: Update) -> None: ...


class SessionRewind:
    """One session's undo (see the module docstring)."""

    def __init__(self, host: RewindHost) -> None:
        self._host = host

    def _checkpoints(self) -> SessionCheckpoints:
        checkpoints = self._host.checkpoints
        if checkpoints is None:
            raise InvalidRequest("this bridge keeps no checkpoints (started with --no-checkpoints)")
        return checkpoints

    def listing(self) -> list[dict[str, Any]]:
        """`_acpBridge/checkpoints`: the session's turns."""
        return self._checkpoints().turns()

    async def rewind(self, turn: int, *, force: bool = False, keep_conflicts: bool = False) -> Restore:
        """Put back the files of turn `turn` and later. Raises InvalidParams (no such turn) or
        InvalidRequest (a prompt is running)."""
        checkpoints = self._checkpoints()
        self._idle()
        try:
            outcome = await checkpoints.rewind(turn, force=force, keep_conflicts=keep_conflicts)
        except UnknownTurn as exc:
            raise InvalidParams(str(exc), data={"turn": turn}) from None
        self.tell(outcome, f"the files changed in turn {turn} and later")
        return outcome

    async def revert_file(self, call_id: str, path: str, *, force: bool = False) -> Restore:
        """Put one file of one call back. Raises InvalidParams (no such call or file) or InvalidRequest."""
        checkpoints = self._checkpoints()
        self._idle()
        try:
            outcome = await checkpoints.revert_file(call_id, path, force=force)
        except (UnknownTurn, ValueError) as exc:
            raise InvalidParams(str(exc), data={"toolCallId": call_id, "path": path}) from None
        self.tell(outcome, f"{path}, changed by the call {call_id}")
        return outcome

    def _idle(self) -> None:
        if self._host.busy:
            raise InvalidRequest("a prompt is running: wait for it to end, or cancel it, before rewinding")

    def tell(self, outcome: Restore, what: str) -> None:
        """The model hears what was put back, at its next step (and after a reload)."""
        if not outcome.restored:
            return
        note = restore_note(outcome, self._host.cwd, what)
        self._host.history.append(UserMessage(note))
        self._host.record(DeferredContext(note))

    # --- the slash command --------------------------------------------------------------------------

    async def command(self, argument: str) -> None:
        """`/rewind [N | list]`: answered as an agent message (a question first on a conflict)."""
        host = self._host
        if host.checkpoints is None:
            host.send(mapping.agent_message_chunk("This bridge keeps no checkpoints (`--no-checkpoints`)."))
            return
        turns = self.listing()
        words = argument.split()
        if words[:1] == ["list"] or (words and not words[0].isdigit()):
            host.send(mapping.agent_message_chunk(_listing(turns, "" if words[:1] == ["list"] else USAGE)))
            return
        changed = [t for t in turns if t["files"]]
        if not words:
            if not changed:
                host.send(
                    mapping.agent_message_chunk(_listing(turns, "No turn of this session changed files."))
                )
                return
            turn = changed[-1]["turn"]
        else:
            turn = int(words[0])
        if not any(t["turn"] == turn for t in turns):
            host.send(mapping.agent_message_chunk(_listing(turns, f"There is no turn {turn}.")))
            return
        outcome = await self.rewind(turn)
        if outcome.status == "conflict":
            keep = not await self._overwrite(turn, outcome.conflicts)
            outcome = await self.rewind(turn, force=not keep, keep_conflicts=keep)
        host.send(mapping.agent_message_chunk(_told(turn, outcome, turns)))

    async def _overwrite(self, turn: int, conflicts: Sequence[tuple[str, str]]) -> bool:
        """Ask whether files changed since by someone else may be overwritten."""
        host = self._host
        tool_call, options = mapping.overwrite_question(f"rewind-{turn}", turn, conflicts)
        try:
            outcome = await host.channel.request_permission(host.id, tool_call, options)
        except Exception:  # a client that cannot answer keeps the user's files
            log.warning("rewind question failed", exc_info=True)
            return False
        return outcome.outcome == "selected" and outcome.option_id == mapping.OVERWRITE_OPTION


def _listing(turns: Sequence[Mapping[str, Any]], head: str) -> str:
    lines = [head] if head else []
    if not turns:
        lines.append("This session has no checkpoints yet.")
    else:
        lines.append("Turns (`/rewind N` puts the files back as they were before turn N):")
        for t in turns:
            files = t["files"]
            lines.append(f"- {t['turn']}. {t['prompt']!s} ({files} file{'s' if files != 1 else ''} changed)")
    return "\n".join(lines)


def _told(turn: int, outcome: Restore, turns: Sequence[Mapping[str, Any]]) -> str:
    lines: list[str] = []
    if outcome.restored:
        lines.append(f"Files put back as they were before turn {turn}:")
        lines += [f"- {path} ({action})" for path, action in outcome.restored]
    elif not outcome.conflicts:
        lines.append(_listing(turns, f"Nothing to put back: the files are as they were before turn {turn}."))
    if outcome.conflicts:
        lines.append("Kept as they are (changed since by someone other than the agent):")
        lines += [f"- {path}: {reason}" for path, reason in outcome.conflicts]
    return "\n".join(lines)


def rewind_argument(text: str) -> str | None:
    """The argument of a `/rewind [...]` prompt ("" without one), or None for any other prompt."""
    name, _, rest = text.partition(" ")
    return rest.strip() if name.strip() == "/rewind" else None


def events_before_turn(events: Sequence[dict[str, Any]], turn: int) -> list[dict[str, Any]]:
    """A log's events before its turn `turn` began (its `turn`-th prompt that was not steered): a fork's
    conversation at a checkpoint. Raises InvalidParams when the log has no such turn."""
    seen = 0
    for k, raw in enumerate(events):
        try:
            event = decode(raw)
        except (KeyError, TypeError, ValueError):
            continue
        if isinstance(event, UserPrompt) and not event.steered:
            seen += 1
            if seen == turn:
                return list(events[:k])
    raise InvalidParams(f"the session has no turn {turn} to fork at", data={"turn": turn})
