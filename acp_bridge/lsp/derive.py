"""What an LSP editor is shown for each ACP session update: log lines, work-done progress, follow-along.

The core emits ACP `session/update` payloads (built by `acp_bridge.mapping`). The LSP face forwards each one
verbatim as `acpBridge/sessionUpdate` and, for editors that only know plain LSP, derives from the same dict:
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

MAX_MESSAGE_CHARS: Final = 200  # progress messages are one short line in every editor's UI
MAX_TITLE_CHARS: Final = 120
_TAIL_CHARS: Final = 4096  # of terminal output kept per call: enough to find the last line
_ANSI: Final = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]")
_LINE_BREAK: Final = re.compile(r"\r\n|\n")
_FENCE: Final = re.compile(r"^(`{3,})[^\n]*\n(.*?)\n?\1\s*$", re.DOTALL)

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


def _text_blocks(content: object) -> list[str]:
    if not isinstance(content, list):
        return []
    texts: list[str] = []
    for block in content:
        inner = block.get("content") if isinstance(block, Mapping) else None
        if isinstance(inner, Mapping) and inner.get("type") == "text" and isinstance(inner.get("text"), str):
            texts.append(inner["text"])
    return texts


def _console_output(content: object, command: str | None) -> str | None:
    """The output inside the last ```console block of a card's content (the no-terminal fallback), without
    the `$ command` line(s) it starts with."""
    for text in reversed(_text_blocks(content)):
        match = _FENCE.match(text.strip())
        if match and text.lstrip("`").startswith("console"):
            body = match.group(2)
            shown = "$ " + command.strip("\n") if command else None
            if shown and body.startswith(shown):
                return body[len(shown) :].lstrip("\n")
            if body.startswith("$ "):
                return body.partition("\n")[2]  # a command we did not see announced: one line
            return body
    return None


def failure_reason(update: Mapping[str, Any]) -> str:
    """A short reason for a failed call, from what the completed card carries."""
    raw = update.get("rawOutput")
    if isinstance(raw, Mapping):
        error = raw.get("error")
        if isinstance(error, Mapping) and isinstance(error.get("message"), str) and error["message"].strip():
            return one_line(error["message"])
        if raw.get("signal"):
            return f"terminated by signal {raw['signal']}"
        code = raw.get("exitCode")
        if isinstance(code, int) and code != 0:
            return f"exit code {code}"
    meta = update.get("_meta")
    bridge = meta.get("acpBridge") if isinstance(meta, Mapping) else None
    note = bridge.get("note") if isinstance(bridge, Mapping) else None
    if isinstance(note, str) and note.strip():
        return one_line(note)
    for text in _text_blocks(update.get("content")):
        if text.strip():
            return one_line(text.strip().strip("`"))
    return "the call failed"


def _completion_message(update: Mapping[str, Any]) -> str:
    raw = update.get("rawOutput")
    if isinstance(raw, Mapping) and isinstance(raw.get("exitCode"), int) and raw["exitCode"] != 0:
        return f"completed (exit code {raw['exitCode']})"
    return "completed"


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
    title: str
    status: str
    begun_as: str = ""  # the title the progress began with (a Begin cannot be retitled)
    asking: bool = False  # the editor is being asked to approve the call
    command: str | None = None  # a terminal call's command (to tell it apart from its output)
    output: str = ""  # a bounded tail of the live terminal output
    last_report: str | None = None
    shown: set[tuple[str, int | None]] = field(default_factory=set)
    # A nested call reports through its program's progress (its token is the program's).
    parent: _Call | None = None

    @property
    def state(self) -> str:
        """What the call is doing, in words."""
        return ASKING if self.asking else StatusText[self.status]

    def message(self, text: str) -> str:
        """`text` as this call's progress message: prefixed with the call's title once the title was
        refined after the progress began (otherwise the editor would only ever show the early title),
        and always for a nested call (the progress is its program's)."""
        prefixed = self.parent is not None or self.title != self.begun_as
        return one_line(f"{self.title}: {text}" if prefixed else text)


def _title(update: Mapping[str, Any]) -> str | None:
    title = update.get("title")
    return one_line(title, MAX_TITLE_CHARS) if isinstance(title, str) and title.strip() else None


def _command(update: Mapping[str, Any]) -> str | None:
    raw = update.get("rawInput")
    command = raw.get("command") if isinstance(raw, Mapping) else None
    return command if isinstance(command, str) else None


class UpdateView:
    """Turns one connection's session updates into editor actions. Feed every update, in order."""

    def __init__(self, *, progress: bool, follow: bool) -> None:
        self.progress = progress
        self.follow = follow
        self._calls: dict[tuple[str, str], _Call] = {}
        self._text: dict[tuple[str, str], _Lines] = {}
        self._tokens = itertools.count(1)

    # --- public -----------------------------------------------------------------------------------

    def feed(self, session_id: str, update: Mapping[str, Any]) -> list[Action]:
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            return self._chunk(session_id, str(kind), update)
        actions = self.flush_text(session_id)  # a card interrupts the prose: finish its line first
        if kind == "tool_call":
            actions += self._started(session_id, update)
        elif kind == "tool_call_update":
            actions += self._updated(session_id, update)
        elif kind == "plan":
            actions += self._plan(update)
        return actions

    def flush_text(self, session_id: str) -> list[Action]:
        """The unfinished last line of the agent's text and thoughts (at a turn's end, or before a card)."""
        actions: list[Action] = []
        for kind in ("agent_thought_chunk", "agent_message_chunk"):
            lines = self._text.get((session_id, kind))
            if lines is not None:
                actions += [self._log_line(kind, line) for line in lines.flush()]
        return actions

    def asking(self, session_id: str, call_id: object) -> list[Action]:
        """The editor is being asked to approve the call (the channel sent the question)."""
        call = self._calls.get((session_id, call_id)) if isinstance(call_id, str) else None
        if call is None:
            return []
        call.asking = True
        return self._report(call, call.state)

    def token_of(self, session_id: str, call_id: object) -> str | None:
        """The progress token of an open call (None without progress, or for an unknown call)."""
        call = self._calls.get((session_id, call_id)) if isinstance(call_id, str) else None
        return call.token if call is not None and self.progress else None

    def answered(self, session_id: str, call_id: object) -> None:
        """The question about the call was answered (or withdrawn). Says nothing by itself: the card's
        next update (running, or failed when rejected) does."""
        call = self._calls.get((session_id, call_id)) if isinstance(call_id, str) else None
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

    def _chunk(self, session_id: str, kind: str, update: Mapping[str, Any]) -> list[Action]:
        content = update.get("content")
        text = content.get("text") if isinstance(content, Mapping) else None
        if not isinstance(text, str) or not text:
            return []
        actions: list[Action] = []
        other = "agent_message_chunk" if kind == "agent_thought_chunk" else "agent_thought_chunk"
        pending = self._text.get((session_id, other))
        if pending is not None:
            # Thinking and speaking alternate: finish the other voice's line so the log reads in order.
            actions += [self._log_line(other, line) for line in pending.flush()]
        lines = self._text.setdefault((session_id, kind), _Lines())
        return actions + [self._log_line(kind, line) for line in lines.feed(text)]

    @staticmethod
    def _log_line(kind: str, line: str) -> Log:
        if kind == "agent_thought_chunk":
            return Log("log", f"(thinking) {line}")
        return Log("info", line)

    def _started(self, session_id: str, update: Mapping[str, Any]) -> list[Action]:
        call_id = update.get("toolCallId")
        if not isinstance(call_id, str):
            return []
        title = _title(update) or call_id
        status = update.get("status")
        status = status if isinstance(status, str) and status in StatusText else "pending"
        key = (session_id, call_id)
        previous = self._calls.get(key)
        actions: list[Action] = []
        if previous is not None and self.progress and previous.parent is None:
            # A repeated id (a model reusing one): the old progress must not stay open forever.
            actions.append(End(previous.token, "replaced by a new call with the same id"))
        parent = self._parent_of(session_id, update)
        if parent is not None:
            call = _Call(key, parent.token, title, status, begun_as=title, parent=parent)
            call.command = _command(update)
            self._calls[key] = call
            actions.append(Log("log", f"tool:   {title} ({call.state}, in {parent.title})"))
            actions += self._report(call, call.state)
        else:
            call = _Call(key, f"acp-bridge/{next(self._tokens)}/{call_id}", title, status, begun_as=title)
            call.command = _command(update)
            self._calls[key] = call
            actions.append(Log("log", f"tool: {title} ({call.state})"))
            if self.progress:
                actions.append(Begin(call.token, title, call.state))
        actions += self._follow(call, update)
        if status in ("completed", "failed"):
            actions += self._end(call, update, status)  # a card born finished (e.g. a replayed one)
        return actions

    def _updated(self, session_id: str, update: Mapping[str, Any]) -> list[Action]:
        call_id = update.get("toolCallId")
        call = self._calls.get((session_id, call_id)) if isinstance(call_id, str) else None
        if call is None:
            return []
        actions: list[Action] = []
        status = update.get("status")
        if status in ("completed", "failed"):
            data = self._terminal_data(update)
            if data:
                self._append_output(call, data)
            call.status = str(status)
            actions += self._follow(call, update)
            return actions + self._end(call, update, str(status))
        # The refinement of a card announced while its arguments streamed: the call's real title (a
        # final card's title describes the result instead, and is not taken as the call's).
        title = _title(update)
        retitled = title is not None and title != call.title
        if title is not None:
            call.title = title
        call.command = _command(update) or call.command
        moved = status in ("pending", "in_progress") and status != call.status
        if moved:
            call.status = str(status)
        if retitled:
            actions.append(Log("log", f"tool: {call.title} ({call.state})"))
        if moved or retitled:
            actions += self._report(call, call.state)
        output = self._terminal_data(update)
        if output is not None:
            self._append_output(call, output)
        else:
            console = _console_output(update.get("content"), call.command)
            if console is not None:
                call.output = console[-_TAIL_CHARS:]  # the fallback re-sends the whole tail each time
                output = console
        if output:
            line = last_output_line(call.output)
            if line is not None:
                actions += self._report(call, line)
        actions += self._follow(call, update)
        return actions

    def _plan(self, update: Mapping[str, Any]) -> list[Action]:
        entries = update.get("entries")
        if not isinstance(entries, list):
            return []
        marks = {"completed": "[x]", "in_progress": "[>]"}
        lines = [
            f"plan: {marks.get(str(e.get('status')), '[ ]')} {one_line(str(e.get('content', '')))}"
            for e in entries[:20]
            if isinstance(e, Mapping)
        ]
        if len(entries) > 20:
            lines.append(f"plan: … {len(entries) - 20} more entries")
        return [Log("log", line) for line in lines]

    # --- pieces -----------------------------------------------------------------------------------

    @staticmethod
    def _terminal_data(update: Mapping[str, Any]) -> str | None:
        meta = update.get("_meta")
        out = meta.get("terminal_output") if isinstance(meta, Mapping) else None
        data = out.get("data") if isinstance(out, Mapping) else None
        return data if isinstance(data, str) else None

    @staticmethod
    def _append_output(call: _Call, data: str) -> None:
        call.output = (call.output + data)[-_TAIL_CHARS:]

    def _report(self, call: _Call, message: str) -> list[Action]:
        message = call.message(message)
        if not self.progress or message == call.last_report:
            return []
        call.last_report = message
        return [Report(call.token, message)]

    def _end(self, call: _Call, update: Mapping[str, Any], status: str) -> list[Action]:
        # Forget the call: later updates for it are ignored, and a long session does not grow this map.
        self._calls.pop(call.key, None)
        call.status = status
        message = (
            _completion_message(update) if status == "completed" else f"failed: {failure_reason(update)}"
        )
        if call.parent is not None:
            return [Log("log", f"tool:   {call.title} ({message})"), *self._report(call, message)]
        for key, other in list(self._calls.items()):
            if other.parent is call:
                del self._calls[key]  # a program ends after its calls; one still open is forgotten with it
        actions: list[Action] = [Log("log", f"tool: {call.title} ({message})")]
        if self.progress:
            actions.append(End(call.token, call.message(message)))
        return actions

    def _parent_of(self, session_id: str, update: Mapping[str, Any]) -> _Call | None:
        """The open program call a nested call's card names (`_meta.parentToolCallId`), if any."""
        meta = update.get("_meta")
        parent_id = meta.get("parentToolCallId") if isinstance(meta, Mapping) else None
        if not isinstance(parent_id, str):
            return None
        parent = self._calls.get((session_id, parent_id))
        return parent if parent is not None and parent.parent is None else None

    def _follow(self, call: _Call, update: Mapping[str, Any]) -> list[Action]:
        """The first location of this update not yet shown for the call, once the call runs or ran (a
        pending call may still be rejected: opening its file would follow something that never happens)."""
        if not self.follow or call.status not in ("in_progress", "completed"):
            return []
        locations = update.get("locations")
        if not isinstance(locations, list):
            return []
        for location in locations:
            if not isinstance(location, Mapping) or not isinstance(location.get("path"), str):
                continue
            line = location.get("line")
            line = line if isinstance(line, int) and not isinstance(line, bool) and line >= 1 else None
            key = (location["path"], line)
            if key in call.shown:
                return []  # already following this call there; do not jump around within one call
            call.shown.add(key)
            return [Show(location["path"], line)]
        return []
