"""What an LSP editor is shown for each ACP session update: log lines, work-done progress, follow-along.

The core emits ACP `session/update` payloads (built by `acp_bridge.mapping`). The LSP face forwards each one
verbatim as `acpBridge/sessionUpdate` and, for editors that only know plain LSP, derives from the same
update, read through the mapping's fold (`mapping.read_update`, the card reducer `mapping.next_card`):
- agent text and thoughts → whole lines for `window/logMessage` (chunks are buffered until a line ends, so
  the log is not shredded into token-sized fragments);
- each tool call → one work-done progress: `Begin` with the card's title when the call is announced,
  `Report`s when its status moves (pending, running), while the editor is asked to approve it, and with
  the latest line of live terminal output, `End` with "completed" or "failed: <short reason>". "Waiting
  for your approval" is said only between `asking` and `answered`, which the channel calls around its
  showMessageRequest: a `pending` card may also be a call whose arguments the model is still streaming.
  Such a card is refined later by a `tool_call_update` with the call's real title; a Begin cannot be
  retitled, so from then on the call's messages start with that title;
- a nested call (a Code Mode program's sub-call: `_meta.parentToolCallId` names its program's open
  call) → no progress of its own: `Report`s of its program's progress, each message starting with the
  nested call's title ("Edit b.txt: waiting for your approval", "Read a.txt: completed");
- locations of a call that runs or ran → `Show` (the first location not shown yet for that call);
- plan updates → a few log lines.

Must not: do I/O, know pygls or lsprotocol, or change the updates (they are forwarded as is elsewhere).
Everything here is a pure function of the updates fed in, in order.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ..mapping import (
    Card,
    CardPatch,
    ChunkKind,
    PlanChange,
    TextChunk,
    Update,
    next_card,
    read_patch,
    read_update,
)

MAX_MESSAGE_CHARS: Final = 200  # progress messages are one short line in every editor's UI
MAX_TITLE_CHARS: Final = 120
_TAIL_CHARS: Final = 4096  # of terminal output looked at: enough to find the last line
_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_LINE_BREAK: Final = re.compile(r"\r\n|\n")

StatusText: Final[Mapping[str, str]] = {
    "pending": "pending",
    "in_progress": "running",
    "completed": "completed",
    "failed": "failed",
}
ASKING: Final = "waiting for your approval"


# --- actions ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Log:
    """One `window/logMessage` line. `level`: "info" for the agent's words, "log" for the rest."""

    level: Literal["info", "log"]
    text: str


@dataclass(frozen=True, slots=True)
class Begin:
    token: str
    title: str
    message: str


@dataclass(frozen=True, slots=True)
class Report:
    token: str
    message: str


@dataclass(frozen=True, slots=True)
class End:
    token: str
    message: str


@dataclass(frozen=True, slots=True)
class Show:
    """Follow-along: reveal `path` (absolute) at `line` (1-based, ACP's convention; None: the top)."""

    path: str
    line: int | None


Action = Log | Begin | Report | End | Show


# --- helpers --------------------------------------------------------------------------------------


def one_line(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` squeezed onto one line of at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _screen_line(raw: str) -> str:
    """What a terminal finally shows for one line: escapes removed, carriage-return redraws applied."""
    text = _ANSI.sub("", raw)
    if "\r" in text:
        parts = [part for part in text.split("\r") if part]
        text = parts[-1] if parts else ""
    return text.rstrip()


def last_output_line(text: str) -> str | None:
    """The last non-blank line of terminal output (a partial last line counts: it is what runs now)."""
    for raw in reversed(_LINE_BREAK.split(text)):
        line = _screen_line(raw)
        if line.strip():
            return line
    return None


def failure_reason(update: CardPatch | Mapping[str, Any]) -> str:
    """A short reason for a failed call, from what its final update carries."""
    said = update if isinstance(update, CardPatch) else read_patch(update)
    outcome = said.outcome
    if outcome.error is not None:
        return one_line(outcome.error)
    if outcome.signal is not None:
        return f"terminated by signal {outcome.signal}"
    if outcome.exit_code not in (None, 0):
        return f"exit code {outcome.exit_code}"
    note = said.bridge.note if said.bridge is not None else None
    if note is not None and note.strip():
        return one_line(note)
    for text in said.texts:
        if text.strip():
            return one_line(text.strip().strip("`"))
    return "the call failed"


def _completion_message(said: CardPatch) -> str:
    code = said.outcome.exit_code
    return f"completed (exit code {code})" if code not in (None, 0) else "completed"


# --- line buffering of agent text -----------------------------------------------------------------


@dataclass(slots=True)
class _Lines:
    partial: str = ""

    def feed(self, text: str) -> list[str]:
        parts = _LINE_BREAK.split(self.partial + text)
        self.partial = parts.pop()
        return [line for line in parts if line.strip()]

    def flush(self) -> list[str]:
        rest, self.partial = self.partial, ""
        return [rest] if rest.strip() else []


# --- the per-call state -------------------------------------------------------------------------


@dataclass(slots=True)
class _Call:
    key: tuple[str, str]
    token: str
    title: str  # the call's title: a final card's title describes the result, and is not taken
    card: Card  # what the card shows (the mapping's fold of its updates)
    begun_as: str = ""  # the title the progress began with (a Begin cannot be retitled)
    asking: bool = False  # the editor is being asked to approve the call
    last_report: str | None = None
    shown: set[tuple[str, int | None]] = field(default_factory=set)
    # A nested call reports through its program's progress (its token is the program's).
    parent: _Call | None = None

    @property
    def state(self) -> str:
        """What the call is doing, in words."""
        return ASKING if self.asking else StatusText[self.card.status]

    def message(self, text: str) -> str:
        """`text` as this call's progress message: prefixed with the call's title once the title was
        refined after the progress began (otherwise the editor would only ever show the early title),
        and always for a nested call (the progress is its program's)."""
        prefixed = self.parent is not None or self.title != self.begun_as
        return one_line(f"{self.title}: {text}" if prefixed else text)


def _title(title: str | None) -> str | None:
    return one_line(title, MAX_TITLE_CHARS) if title is not None and title.strip() else None


class UpdateView:
    """Turns one connection's session updates into editor actions. Feed every update, in order."""

    def __init__(self, *, progress: bool, follow: bool) -> None:
        self.progress = progress
        self.follow = follow
        self._calls: dict[tuple[str, str], _Call] = {}
        self._text: dict[tuple[str, ChunkKind], _Lines] = {}
        self._tokens = itertools.count(1)

    # --- public -----------------------------------------------------------------------------------

    def feed(self, session_id: str, update: Update | Mapping[str, Any]) -> list[Action]:
        event = read_update(update)
        if isinstance(event, TextChunk) and event.kind != "user_message_chunk":
            return self._chunk(session_id, event)
        actions = self.flush_text(session_id)  # a card interrupts the prose: finish its line first
        if isinstance(event, CardPatch):
            actions += self._started(session_id, event) if event.new else self._updated(session_id, event)
        elif isinstance(event, PlanChange):
            actions += self._plan(event)
        return actions

    def flush_text(self, session_id: str) -> list[Action]:
        """The unfinished last line of the agent's text and thoughts (at a turn's end, or before a card)."""
        actions: list[Action] = []
        for kind in ("agent_thought_chunk", "agent_message_chunk"):
            lines = self._text.get((session_id, kind))
            if lines is not None:
                actions += [self._log_line(kind, line) for line in lines.flush()]
        return actions

    def asking(self, session_id: str, call_id: str) -> list[Action]:
        """The editor is being asked to approve the call (the channel sent the question)."""
        call = self._calls.get((session_id, call_id))
        if call is None:
            return []
        call.asking = True
        return self._report(call, call.state)

    def token_of(self, session_id: str, call_id: str) -> str | None:
        """The progress token of an open call (None without progress, or for an unknown call)."""
        call = self._calls.get((session_id, call_id))
        return call.token if call is not None and self.progress else None

    def answered(self, session_id: str, call_id: str) -> None:
        """The question about the call was answered (or withdrawn). Says nothing by itself: the card's
        next update (running, or failed when rejected) does."""
        call = self._calls.get((session_id, call_id))
        if call is not None:
            call.asking = False

    def end_all(self, message: str, session_id: str | None = None) -> list[Action]:
        """End every open progress (of one session, or of all): the connection or the turn is going away."""
        actions: list[Action] = []
        for key, call in list(self._calls.items()):
            if session_id is None or key[0] == session_id:
                del self._calls[key]
                if self.progress and call.parent is None:
                    actions.append(End(call.token, one_line(message)))
        return actions

    # --- updates ----------------------------------------------------------------------------------

    def _chunk(self, session_id: str, chunk: TextChunk) -> list[Action]:
        if not chunk.text:
            return []
        kind = chunk.kind
        actions: list[Action] = []
        other: ChunkKind = "agent_message_chunk" if kind == "agent_thought_chunk" else "agent_thought_chunk"
        pending = self._text.get((session_id, other))
        if pending is not None:
            # Thinking and speaking alternate: finish the other voice's line so the log reads in order.
            actions += [self._log_line(other, line) for line in pending.flush()]
        lines = self._text.setdefault((session_id, kind), _Lines())
        return actions + [self._log_line(kind, line) for line in lines.feed(chunk.text)]

    @staticmethod
    def _log_line(kind: ChunkKind, line: str) -> Log:
        if kind == "agent_thought_chunk":
            return Log("log", f"(thinking) {line}")
        return Log("info", line)

    def _started(self, session_id: str, said: CardPatch) -> list[Action]:
        card = next_card(None, said)
        if card is None:
            return []
        title = _title(card.title) or card.call_id
        key = (session_id, card.call_id)
        previous = self._calls.get(key)
        actions: list[Action] = []
        if previous is not None and self.progress and previous.parent is None:
            # A repeated id (a model reusing one): the old progress must not stay open forever.
            actions.append(End(previous.token, "replaced by a new call with the same id"))
        parent = self._parent_of(session_id, card)
        if parent is not None:
            call = _Call(key, parent.token, title, card, begun_as=title, parent=parent)
            self._calls[key] = call
            actions.append(Log("log", f"tool:   {title} ({call.state}, in {parent.title})"))
            actions += self._report(call, call.state)
        else:
            token = f"acp-bridge/{next(self._tokens)}/{card.call_id}"
            call = _Call(key, token, title, card, begun_as=title)
            self._calls[key] = call
            actions.append(Log("log", f"tool: {title} ({call.state})"))
            if self.progress:
                actions.append(Begin(call.token, title, call.state))
        actions += self._follow(call, said)
        if card.status in ("completed", "failed"):
            actions += self._end(call, said)  # a card born finished (e.g. a replayed one)
        return actions

    def _updated(self, session_id: str, said: CardPatch) -> list[Action]:
        call = self._calls.get((session_id, said.call_id))
        card = next_card(call.card, said) if call is not None else None
        if call is None or card is None:
            return []
        before, call.card = call.card, card
        actions: list[Action] = []
        if said.status in ("completed", "failed"):
            actions += self._follow(call, said)
            return actions + self._end(call, said)
        # The refinement of a card announced while its arguments streamed: the call's real title (a
        # final card's title describes the result instead, and is not taken as the call's).
        title = _title(said.title)
        retitled = title is not None and title != call.title
        if title is not None:
            call.title = title
        moved = said.status is not None and said.status != before.status
        if retitled:
            actions.append(Log("log", f"tool: {call.title} ({call.state})"))
        if moved or retitled:
            actions += self._report(call, call.state)
        if card.new_output:
            line = last_output_line(card.output[-_TAIL_CHARS:])
            if line is not None:
                actions += self._report(call, line)
        actions += self._follow(call, said)
        return actions

    def _plan(self, plan: PlanChange) -> list[Action]:
        marks = {"completed": "[x]", "in_progress": "[>]"}
        lines = [
            f"plan: {marks.get(entry['status'], '[ ]')} {one_line(entry['content'])}"
            for entry in plan.entries[:20]
        ]
        if len(plan.entries) > 20:
            lines.append(f"plan: … {len(plan.entries) - 20} more entries")
        return [Log("log", line) for line in lines]

    # --- pieces -----------------------------------------------------------------------------------

    def _report(self, call: _Call, message: str) -> list[Action]:
        message = call.message(message)
        if not self.progress or message == call.last_report:
            return []
        call.last_report = message
        return [Report(call.token, message)]

    def _end(self, call: _Call, said: CardPatch) -> list[Action]:
        # Forget the call: later updates for it are ignored, and a long session does not grow this map.
        self._calls.pop(call.key, None)
        if call.card.status == "completed":
            message = _completion_message(said)
        else:
            message = f"failed: {failure_reason(said)}"
        if call.parent is not None:
            return [Log("log", f"tool:   {call.title} ({message})"), *self._report(call, message)]
        for key, other in list(self._calls.items()):
            if other.parent is call:
                del self._calls[key]  # a program ends after its calls; one still open is forgotten with it
        actions: list[Action] = [Log("log", f"tool: {call.title} ({message})")]
        if self.progress:
            actions.append(End(call.token, call.message(message)))
        return actions

    def _parent_of(self, session_id: str, card: Card) -> _Call | None:
        """The open program call a nested call's card names, if any (a program's call is never nested:
        a card naming a nested call as its parent gets progress of its own)."""
        parent = self._calls.get((session_id, card.parent)) if card.parent is not None else None
        return parent if parent is not None and parent.parent is None else None

    def _follow(self, call: _Call, said: CardPatch) -> list[Action]:
        """The first location of this update not yet shown for the call, once the call runs or ran (a
        pending call may still be rejected: opening its file would follow something that never happens)."""
        if not self.follow or call.card.status not in ("in_progress", "completed"):
            return []
        for location in said.locations or ():
            line = location.get("line")
            place = (location["path"], line if line is not None and line >= 1 else None)
            if place in call.shown:
                return []  # already following this call there; do not jump around within one call
            call.shown.add(place)
            return [Show(*place)]
        return []
