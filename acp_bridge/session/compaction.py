"""Compaction: when the context fills up (`--compact-at`, 80% of the window by default) or the user sends
`/compact [focus]`, the older conversation is replaced by a summary the model writes, and the session
continues on the summary plus the recent messages. A session whose `auto_compact` config option is off
compacts only on `/compact`.

What is kept (`split_point`): the most recent messages that fit in a quarter of the window (an estimate,
`models.estimate_tokens`), or for `/compact` the last user turn, cut only where no tool call is separated
from its result, and never less than the latest step (the calls the turn is running and their results
stay whole). What is summarized goes to
the model as one transcript in a user message (`summary_request`), with no tools, under the session's
model and effort; a `/compact` focus is added to the instructions. The rewrite (`apply`) puts the summary
at the head of the kept messages (joined to a kept user message, so no two user messages follow each
other, which some models refuse). The same function rebuilds it on `session/load`, from the `Compacted`
record logged right after: the summary and how many messages were kept.

The client sees it as ACP's unstable `compaction_update` (in progress, the summary as
`compaction_summary_chunk`s while the model writes it, then completed with it) when it advertised
`session.compaction`, otherwise as an agent message; a threshold compaction that fails is also a `notice`
for clients that advertised `session.notices` (an agent message otherwise), and the turn goes on with
the full context. `session/load` replays a compaction where it happened, completed.

Must not: drop a tool call or its result from the messages it keeps, rewrite the history when the summary
failed or was cancelled, or let a cancel wait on the model (the summary streams as a turn's step does,
`turn.model_step.stream_model_step`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any, Final, Literal, Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel, Update
from acp_bridge.history.session_log import Compacted, LogEvent
from acp_bridge.models import (
    AssistantMessage,
    Message,
    ModelBackend,
    ModelError,
    StepComplete,
    StepRequest,
    TextDelta,
    ToolResultMessage,
    UserMessage,
    estimate_tokens,
)
from acp_bridge.session.config_options import SessionControls
from acp_bridge.turn import waits
from acp_bridge.turn.model_step import StepDelta, stream_model_step
from registry_core import CancelSignal

log = logging.getLogger(__name__)

Trigger = Literal["threshold", "command"]

DEFAULT_COMPACT_AT: Final = 0.8
# The part of the window the kept recent messages may fill; without a known window, this many tokens.
KEEP_FRACTION: Final = 0.25
KEEP_TOKENS_WITHOUT_WINDOW: Final = 8_000
# Bounds of the transcript sent for summarizing: one tool result, and the whole (a share of the window).
MAX_RESULT_CHARS: Final = 4_000
MAX_ARGUMENT_CHARS: Final = 1_000
TRANSCRIPT_WINDOW_SHARE: Final = 0.5
MAX_TRANSCRIPT_CHARS_WITHOUT_WINDOW: Final = 400_000

SUMMARY_HEADING: Final = "[Summary of the earlier conversation, written when the context was compacted]"
SUMMARY_SYSTEM_PROMPT: Final = (
    "You summarize a coding agent's conversation with its user so that the agent can continue the work "
    "from the summary alone. Be faithful and specific; never invent."
)
SUMMARY_INSTRUCTIONS: Final = (
    "Summarize the conversation below. Keep: what the user asked for and every constraint they gave; "
    "what was done (files read and changed, commands run and their outcomes); decisions and their "
    "reasons; errors still open; and the next steps. Keep file paths, names, numbers and error messages "
    "exact. Answer with the summary only."
)


class CompactionHost(Protocol):
    """What a compaction needs of its session (`session.session.Session` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def backend(self) -> ModelBackend: ...

    @property
    def controls(self) -> SessionControls: ...

    def record(self, event: LogEvent) -> None: ...

    def send(self, update: Update) -> None: ...


# --- what is kept ------------------------------------------------------------------------------------


def _message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        calls = "".join(f"{c.name}{_arguments(c.arguments)}" for c in message.tool_calls)
        return (message.reasoning or "") + message.text + calls
    if isinstance(message, ToolResultMessage):
        return message.content
    return message.text


def _arguments(arguments: object) -> str:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_ARGUMENT_CHARS else text[:MAX_ARGUMENT_CHARS] + "…"


def safe_boundaries(history: Sequence[Message]) -> list[int]:
    """The indices the kept part may start at (1 and up): a user or assistant message that no earlier tool
    call still waits past, so every kept result keeps the call it answers and every call its result."""
    answered_at: dict[str, int] = {}
    for index, message in enumerate(history):
        if isinstance(message, ToolResultMessage):
            answered_at[message.call_id] = index
    bounds: list[int] = []
    open_until = -1
    for index, message in enumerate(history):
        if index > 0 and index > open_until and not isinstance(message, ToolResultMessage):
            bounds.append(index)
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                open_until = max(open_until, answered_at.get(call.id, index))
    return bounds


def split_point(history: Sequence[Message], keep_tokens: int, *, last_turn: bool = False) -> int | None:
    """Where the kept messages start: the earliest safe boundary whose suffix fits in `keep_tokens`, but
    never after the latest one (the current step stays whole); with `last_turn` (`/compact`), the start
    of the last user turn instead. None when nothing can be summarized."""
    bounds = safe_boundaries(history)
    if not bounds:
        return None
    if last_turn:
        return next((b for b in reversed(bounds) if isinstance(history[b], UserMessage)), bounds[-1])
    suffix = 0
    fitting: int | None = None
    sizes = [estimate_tokens(_message_text(m)) for m in history]
    position = len(history)
    for bound in reversed(bounds):
        suffix += sum(sizes[bound:position])
        position = bound
        if suffix > keep_tokens:
            break
        fitting = bound
    return fitting if fitting is not None else bounds[-1]


def apply(history: list[Message], event: Compacted) -> None:
    """Rewrite `history` in place: the summary, then the last `event.kept` messages (the summary joins a
    kept user message at their head). The same on replay as live."""
    kept = history[len(history) - min(event.kept, len(history)) :] if event.kept else []
    head = f"{SUMMARY_HEADING}\n\n{event.summary}"
    if kept and isinstance(kept[0], UserMessage):
        # `replace` keeps whatever else the message carries (attachments).
        history[:] = [dataclasses.replace(kept[0], text=f"{head}\n\n{kept[0].text}"), *kept[1:]]
    else:
        history[:] = [UserMessage(head), *kept]


# --- the summary request -----------------------------------------------------------------------------


def transcript(messages: Sequence[Message], max_chars: int) -> str:
    """The messages as a readable transcript, each tool result cut to `MAX_RESULT_CHARS` and the whole to
    `max_chars` (its middle goes first: the start and the latest work matter most)."""
    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            parts.append(f"## User\n{message.text}")
        elif isinstance(message, AssistantMessage):
            lines = [message.text] if message.text else []
            lines += [
                f"→ calls `{c.name}` with {_arguments(c.arguments)} (id {c.id})" for c in message.tool_calls
            ]
            parts.append("## Assistant\n" + "\n".join(lines))
        else:
            body = message.content
            if len(body) > MAX_RESULT_CHARS:
                body = body[: MAX_RESULT_CHARS // 2] + "\n…\n" + body[-MAX_RESULT_CHARS // 2 :]
            status = " (failed)" if message.is_error else ""
            parts.append(f"## Result of `{message.name}` (id {message.call_id}){status}\n{body}")
    text = "\n\n".join(parts)
    if len(text) > max_chars:
        half = max_chars // 2
        text = f"{text[:half]}\n\n… (the middle of the conversation is left out) …\n\n{text[-half:]}"
    return text


def summary_prompt(older: Sequence[Message], focus: str | None, max_chars: int) -> str:
    focus_line = f"\n\nThe user asked the summary to focus on: {focus}" if focus else ""
    return f"{SUMMARY_INSTRUCTIONS}{focus_line}\n\n---\n\n{transcript(older, max_chars)}"


# --- what the client sees ------------------------------------------------------------------------------


def _note(event: Compacted) -> str:
    kept = {0: "nothing else", 1: "the last message"}.get(event.kept, f"the last {event.kept} messages")
    why = "on request" if event.trigger == "command" else "because the context was nearly full"
    return (
        f"\n\n*Context compacted {why}: {event.summarized} earlier message"
        f"{'s' if event.summarized != 1 else ''} replaced by a summary; the conversation continues from it "
        f"and {kept}.*\n\n"
    )


def _meta(event: Compacted) -> dict[str, Any]:
    meta: dict[str, Any] = {"trigger": event.trigger, "summarizedMessages": event.summarized,
                            "keptMessages": event.kept}  # fmt: skip
    if event.focus:
        meta["focus"] = event.focus
    return meta


def replayed_updates(event: Compacted, compaction_capable: bool) -> list[Update]:
    """What `session/load` shows of a logged compaction, where it happened."""
    if compaction_capable:
        return [
            mapping.compaction_update(
                event.compaction_id, "completed", summary=event.summary, meta=_meta(event)
            )
        ]
    return [mapping.agent_message_chunk(_note(event))]


# --- running one --------------------------------------------------------------------------------------


class Compactor:
    """One session's compactions: when one is due, and running it. `count` numbers them (ids, and the
    scripted model's summaries); `session/load` sets it from the log."""

    def __init__(self, host: CompactionHost, compact_at: float | None = DEFAULT_COMPACT_AT) -> None:
        self.host = host
        self.compact_at = compact_at
        self.count = 0
        # A threshold compaction that failed is not retried in the same prompt (each try costs a request).
        self.suppressed = False

    def due(self) -> bool:
        """A threshold compaction is due: the context reached `compact_at` and the session's auto-compaction
        is on (`config_options.AUTO_COMPACT`)."""
        controls = self.host.controls
        if self.compact_at is None or self.suppressed or not controls.auto_compact:
            return False
        fill = controls.meter.fill(controls.info)
        return fill is not None and fill >= self.compact_at

    async def run(
        self, history: list[Message], signal: CancelSignal, *, trigger: Trigger, focus: str | None = None
    ) -> Compacted | None:
        """Compact `history` in place; the logged event, or None when there was nothing to summarize or
        the signal cancelled it (the history is then unchanged). Raises `ModelError` when the summary
        request failed (reported to the client first)."""
        host, controls = self.host, self.host.controls
        info = controls.info
        window = info.context_window
        keep = int(window * KEEP_FRACTION) if window else KEEP_TOKENS_WITHOUT_WINDOW
        split = split_point(history, keep, last_turn=trigger == "command")
        if split is None:
            log.info("session %s: nothing to compact", host.id)
            if trigger == "command":
                host.send(mapping.agent_message_chunk("There is no earlier conversation to compact yet."))
            else:
                self.suppressed = True
            return None
        compaction_id = f"cmp_{self.count + 1}"
        capable = host.channel.capabilities.compaction
        meta = {"trigger": trigger, **({"focus": focus} if focus else {})}
        if capable:
            host.send(mapping.compaction_update(compaction_id, "in_progress", meta=meta))
        max_chars = (
            int(window * 4 * TRANSCRIPT_WINDOW_SHARE) if window else MAX_TRANSCRIPT_CHARS_WITHOUT_WINDOW
        )
        model, effort = controls.step_choice()
        request = StepRequest(
            messages=(UserMessage(summary_prompt(history[:split], focus, max_chars)),),
            tools=(),
            turn_index=0,
            step_index=0,
            system_prompt=SUMMARY_SYSTEM_PROMPT,
            model=model,
            reasoning_effort=effort,
            purpose="summary",
            summary_index=self.count,
        )
        try:
            text, complete = await self._stream(request, signal, compaction_id if capable else None)
        except ModelError as exc:
            self._failed(compaction_id, trigger, exc.message)
            raise
        if complete is None:
            if capable:
                host.send(mapping.compaction_update(compaction_id, "cancelled"))
            return None
        if complete.usage is not None:
            controls.meter.add(complete.usage, info, in_context=False)
        summary = text.strip()
        if not summary:
            error = ModelError("the model answered the summary request with no text", kind="protocol")
            self._failed(compaction_id, trigger, error.message)
            raise error
        event = Compacted(compaction_id, summary, len(history) - split, trigger, focus, split)
        apply(history, event)
        host.record(event)  # logged before it is shown, as every durable step
        controls.meter.context_reset()
        self.count += 1
        self.suppressed = False
        if capable:
            host.send(
                mapping.compaction_update(compaction_id, "completed", summary=summary, meta=_meta(event))
            )
        else:
            host.send(mapping.agent_message_chunk(_note(event)))
        log.info("session %s: compacted %d messages, kept %d", host.id, split, event.kept)
        return event

    def _failed(self, compaction_id: str, trigger: Trigger, error: str) -> None:
        host = self.host
        caps = host.channel.capabilities
        if caps.compaction:
            host.send(mapping.compaction_update(compaction_id, "failed", error=error))
        if trigger == "threshold":
            self.suppressed = True
            title = "Could not compact the conversation; continuing with the full context"
            if caps.notices:
                host.send(mapping.notice("warning", title, error))
            elif not caps.compaction:
                host.send(mapping.agent_message_chunk(f"\n\n*{title}: {error}*\n\n"))

    async def _stream(
        self, request: StepRequest, signal: CancelSignal, chunk_id: str | None
    ) -> tuple[str, StepComplete | None]:
        """The summary's text and the step's end (None when cancelled), each text piece sent as a summary
        chunk when `chunk_id` is given. Streamed as a turn's step is: a cancel through `signal` interrupts
        it at once, and the stream is closed, shielded and bounded, however it ended."""
        pieces: list[str] = []
        host = self.host

        async def on_event(event: StepDelta) -> None:
            if isinstance(event, TextDelta) and event.text:
                pieces.append(event.text)
                if chunk_id is not None:
                    host.send(mapping.compaction_summary_chunk(chunk_id, event.text))
                    await host.channel.drain()

        notices = host.channel.capabilities.notices
        complete = await stream_model_step(
            host.backend, request, signal, on_event, what="summary",
            on_wait=lambda waiting: host.send(waits.tell(waiting, notices=notices)),  # before a retry
        )  # fmt: skip
        return ("".join(pieces), complete) if complete is not None else ("", None)
