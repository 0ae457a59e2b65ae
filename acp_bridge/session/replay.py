"""Replay of a stored conversation (`session/load`): rebuild the history the model sees, and send the client
the same updates the live turn sent, through the same presenters and the same mapping, so a reloaded
session looks as it did (tests compare the folded cards of both).

Each stored event (`session_log`) has one handler here. A prompt is shown as the user sent it: one
`user_message_chunk` per content block it logged (text, resource_link, resource, image), or, logged
without its blocks (text alone, or an older log), its text and then its images. The permission state, the
model choice and the usage the log ends with are handed back to the session, which restores them after
the conversation. A compaction rewrites the rebuilt history as it did live (`compaction.apply`), so the
model gets the compacted context, and is shown where it happened. A program's nested calls (Code Mode
sub-calls, `CodeDispatched`) get their own cards under the program's, and the program's card lists them,
as live; they are no part of the model's history. A call whose command ran on in the background (its
result view says so) keeps its card open until its `BackgroundEnded` completes it, as live; the cards
still open at the end are handed back (`Replayed.background`) for the session to reopen.

An unseen replay (`session/resume`, `session/fork`: the client is sent none of it) rebuilds the same
history and state but draws no card, since presenting and mapping every call would be nearly all of its
cost. Only the calls `keeps` names (background commands still running in this bridge, whose cards go on
live) are presented, so that their cards can be handed back.

Must not: run tools or the model again (not even a tool's `preview_call`: a stored card is the pure one),
or trust the log blindly (an unreadable event is skipped, a call that never settled is closed as
unfinished).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, assert_never

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel, Update
from acp_bridge.history.session_log import (
    AssistantStep,
    BackgroundEnded,
    CallCommitted,
    CallSettled,
    CodeDispatched,
    Compacted,
    ConfigChanged,
    DeferredContext,
    LogEvent,
    PermissionsChanged,
    SessionInfoChanged,
    SettledAnswer,
    UsageReported,
    UserPrompt,
    decode,
)
from acp_bridge.mapping import WireContext
from acp_bridge.models import AssistantMessage, Message, ToolResultMessage, UserMessage
from acp_bridge.models.images import result_images
from acp_bridge.session import compaction
from acp_bridge.turn.background import LiveCard, runs_on
from acp_bridge.turn.presentable import Presentable
from acp_bridge.turn.subagent import ReplayedSubagents
from registry_core import CANCELLED, TextBlock, ToolFailureInfo, ToolResult, ToolScope, content_text, thaw
from registry_core.presentation import CallViewT

log = logging.getLogger(__name__)

COMMITTED_NOTE = "The bridge stopped before this call reported its result; the change shown was made."
# A call the log has no result for: the bridge stopped while it ran, or the session was forked from
# another mid-call (`SessionManager.reopen`); in either case it may have done something.
UNFINISHED_MESSAGE = (
    "The call has no result: it was still running when this conversation was saved (the bridge stopped, "
    "or this session was forked from another). Whether it did anything is unknown."
)


class ReplayHost(Protocol):
    """What a replay needs of the session it fills (`sessions.Session` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def scope(self) -> ToolScope: ...

    @property
    def wire(self) -> WireContext: ...

    @property
    def history(self) -> list[Message]: ...

    @property
    def channel(self) -> ClientChannel: ...

    def send(self, update: Update) -> None: ...


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a replay found besides the conversation: the number of prompts (the next prompt's turn
    index), the last permission state, model choice and usage logged (`usage_current`: no compaction came
    after that usage), how many compactions there were, the last session info (title, roots) logged, and
    the first prompt (a title when none was set), for the session to restore."""

    prompts: int
    permissions: PermissionsChanged | None
    config: ConfigChanged | None = None
    usage: UsageReported | None = None
    usage_current: bool = False
    compactions: int = 0
    info: SessionInfoChanged = field(default_factory=SessionInfoChanged)
    first_prompt: str | None = None
    # The cards of background commands the log has no end for (`SessionBackground.reopen` takes them).
    background: tuple[LiveCard, ...] = ()


def replay(
    host: ReplayHost, events: Iterable[Mapping[str, Any]], *, keeps: Callable[[str], bool] | None = None
) -> Replayed:
    """Rebuild stored events (as `store.SessionStore.load` reads them) into `host.history`, and send them
    to the client as the updates a live turn sends. Unreadable events are skipped (logged); events of
    unknown types are no events of ours and are passed over. With `keeps`, the replay is unseen: nothing
    is sent, and only the calls it answers True for (by call id) are presented, for their background
    cards (see the module docstring).

    The history is the live turn's: a step's tool results in the order the model asked for the calls
    (the log has them in the order they settled), then the contexts they deferred; a call that never
    settled is answered (and its card closed) where its step ends."""
    player = _Player(host, keeps)
    with _collection_paused():
        for raw in events:
            player.feed(raw)
        player.end_step()
    player.subagents.close()
    return Replayed(
        player.prompts,
        player.permissions,
        player.config,
        player.usage,
        player.usage_current,
        player.compactions,
        player.info,
        player.first_prompt,
        tuple(player.background.values()),
    )


@dataclass(frozen=True, slots=True)
class _Asked:
    """A call a replayed step asked for, with the card it was shown."""

    name: str
    arguments: Any
    view: CallViewT | None
    presentable: Presentable | None
    # A program's nested calls as its card lists them (their titles and statuses), and their locations.
    nested: list[mapping.NestedLine] = field(default_factory=list)
    nested_locations: list[list[mapping.Location]] = field(default_factory=list)


@dataclass(slots=True)
class _Step:
    """The latest stored step being rebuilt: the ids of the calls it asked for (in order), the results
    and file changes logged for them so far, and the contexts those results deferred."""

    call_ids: dict[str, None] = field(default_factory=dict)  # in order (a dict: a long step's lookups)
    results: dict[str, ToolResultMessage] = field(default_factory=dict)
    commits: dict[str, CallCommitted] = field(default_factory=dict)
    contexts: list[UserMessage] = field(default_factory=list)


class _Player:
    def __init__(self, host: ReplayHost, keeps: Callable[[str], bool] | None) -> None:
        self.host = host
        self.shown = keeps is None
        self.keeps = keeps or _every_call
        self.asked: dict[str, _Asked] = {}
        self.step = _Step()
        self.prompts = 0
        self.permissions: PermissionsChanged | None = None
        self.config: ConfigChanged | None = None
        self.usage: UsageReported | None = None
        self.usage_current = False
        self.compactions = 0
        self.info = SessionInfoChanged()
        self.first_prompt: str | None = None
        self.background: dict[str, LiveCard] = {}  # open cards of commands running on, by call id
        # `task` children, for a client that shows them (`subagent_update`).
        self.subagents = ReplayedSubagents(host.send, host.id, lambda: host.channel.capabilities.subagents)

    def feed(self, raw: Mapping[str, Any]) -> None:
        try:
            if (
                not self.shown
                and raw.get("type") == CallSettled.KIND
                and not self.keeps(str(raw.get("callId")))
            ):
                self.answered(SettledAnswer.from_json(raw))  # no card to draw: its answer is all it needs
                return
            event = decode(raw)
            if event is not None:
                self.handle(event)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("session %s: skipping an unreadable %r event: %s", self.host.id, raw.get("type"), exc)

    def handle(self, event: LogEvent) -> None:
        match event:
            case UserPrompt():
                self.user_prompt(event)
            case AssistantStep():
                self.assistant_step(event)
            case CallCommitted():
                self.step.commits[event.call_id] = event
            case CallSettled():
                self.call_settled(event)
            case CodeDispatched():
                self.code_dispatched(event)
            case BackgroundEnded():
                self.background_ended(event)
            case DeferredContext():
                self.step.contexts.append(UserMessage(event.text))
            case PermissionsChanged():
                self.permissions = event  # the last one wins
            case ConfigChanged():
                self.config = event  # the last one wins
            case UsageReported():
                self.usage, self.usage_current = event, True
            case Compacted():
                self.compacted(event)
            case SessionInfoChanged():
                self.info = _merged(self.info, event)
            case _:
                assert_never(event)

    def compacted(self, event: Compacted) -> None:
        """Rewrite the history rebuilt so far as the live compaction did (after the step it followed is
        complete), and show it where it happened."""
        self.end_step()
        compaction.apply(self.host.history, event)
        if self.shown:
            for update in compaction.replayed_updates(event, self.host.channel.capabilities.compaction):
                self.host.send(update)
        self.compactions += 1
        self.usage_current = False

    def user_prompt(self, event: UserPrompt) -> None:
        self.end_step()
        if not event.steered:  # a steered prompt joined the turn it is logged in (turn/steering.py)
            self.prompts += 1
            if self.first_prompt is None:
                self.first_prompt = event.text
        self.host.history.append(UserMessage(event.text, event.images))
        if not self.shown:
            return
        # The prompt as the user sent it, block by block (their words, the files they attached).
        chunks = mapping.user_prompt_chunks(
            event.text,
            [(image.mime_type, image.data) for image in event.images],
            event.blocks,
            message_id=event.message_id,
            max_bytes=self.host.wire.max_update_bytes,
        )
        if chunks and not event.steered:  # checkpoints: the turn it began, for "restore to before"
            chunks[0]["_meta"] = {"acpBridge": {"turn": self.prompts}}
        for chunk in chunks:
            self.host.send(chunk)

    def assistant_step(self, event: AssistantStep) -> None:
        self.end_step()
        host, step = self.host, self.step
        host.history.append(AssistantMessage(event.text, event.tool_calls, event.thought or None))
        if not self.shown:
            for call in event.tool_calls:
                self.asked[call.id] = _Asked(call.name, call.arguments, None, None)
                step.call_ids.setdefault(call.id)
            return
        if event.thought:
            host.send(mapping.agent_thought_chunk(event.thought))
        if event.text:
            host.send(mapping.agent_message_chunk(event.text))
        for call in event.tool_calls:
            presentable = Presentable.of(host.scope, call.name, call.arguments)
            view = presentable.call_view() if presentable is not None else None
            self.asked[call.id] = _Asked(call.name, call.arguments, view, presentable)
            step.call_ids.setdefault(call.id)
            host.send(
                mapping.tool_call_started(host.wire, call.id, call.name, call.arguments, view, "in_progress")
            )
            self.subagents.asked(call.id, call.name, call.arguments)

    def call_settled(self, event: CallSettled) -> None:
        """Complete the call's card as the live turn did (its note included), and keep its answer for the
        end of its step. A result for a call no readable step asked for gets a generic card."""
        host, record = self.host, event.result
        asked = self.asked.get(record.call_id) or _Asked(record.name, None, None, None)
        result = record.to_result()
        self.answered(SettledAnswer(record.call_id, record.name, result.content, result.is_error))
        if not self.shown:
            if not self.keeps(record.call_id):
                return
            asked = self.presented(asked)
        presentable = asked.presentable
        result_view = presentable.result_view(result) if presentable is not None else None
        if runs_on(result_view):
            # Its command ran on: the card stays open until the command's end (`background_ended`).
            self.background[record.call_id] = LiveCard(
                record.call_id, asked.name, asked.arguments, asked.view, host.wire, presentable, event.note
            )
            return
        if not self.shown:
            return
        updates = mapping.tool_call_completed(
            host.wire, record.call_id, asked.name, asked.arguments, asked.view, result, result_view,
            note=event.note,
        )  # fmt: skip
        for update in _with_nested(host, record.call_id, asked, updates):
            host.send(update)
        self.subagents.settled(record.call_id, result)
        plan = mapping.plan_from_result(result)
        if plan is not None:
            host.send(plan)

    def answered(self, answer: SettledAnswer) -> None:
        """Keep a call's answer for the end of its step."""
        content, call_id, name = answer.content, answer.call_id, answer.name
        if len(content) == 1 and type(content[0]) is TextBlock:  # the usual answer: one text, no image
            message = ToolResultMessage(call_id, name, content[0].text, answer.is_error)
        else:
            images = result_images(name, content)
            message = ToolResultMessage(call_id, name, content_text(content), answer.is_error, images)
        self.step.results[call_id] = message

    def code_dispatched(self, event: CodeDispatched) -> None:
        """A nested call of a replayed program: its card, started and completed as live (under the
        program's card, with the note it showed), and its line on the program's card. One whose program
        no readable step asked for is passed over: it has no card to go under."""
        host, record = self.host, event.dispatch
        program = self.asked.get(record.parent_call_id)
        if program is None:
            log.warning("session %s: sub-call %s of an unknown program skipped", host.id, record.call_id)
            return
        if not self.keeps(record.call_id):
            return  # unseen, and no card to keep: nothing to draw
        arguments = thaw(record.arguments)
        presentable = Presentable.of(host.scope, record.name, arguments)
        view = presentable.call_view() if presentable is not None else None
        result = record.to_result()
        result_view = presentable.result_view(result) if presentable is not None else None
        started = mapping.tool_call_started(
            host.wire, record.call_id, record.name, arguments, view, "in_progress"
        )
        completed = mapping.tool_call_completed(
            host.wire, record.call_id, record.name, arguments, view, result, result_view, note=event.note
        )
        if runs_on(result_view):
            # Its command ran on: the card stays open until the command's end (`background_ended`).
            completed = []
            self.background[record.call_id] = LiveCard(
                record.call_id, record.name, arguments, view, host.wire, presentable, event.note,
                record.parent_call_id,
            )  # fmt: skip
        if not self.shown:
            return
        title = ""
        locations: list[mapping.Location] = []
        card_updates: list[mapping.ToolCallStart | mapping.ToolCallProgress] = [started, *completed]
        for update in card_updates:
            host.send(mapping.with_parent(update, record.parent_call_id))
            title = update.get("title") or title
            locations = update.get("locations") or locations
        program.nested.append(
            mapping.NestedLine(title or record.name, mapping.final_status(result, result_view))
        )
        program.nested_locations.append(locations)
        host.send(
            mapping.program_calls_update(
                host.wire, record.parent_call_id, program.name, program.arguments, program.view,
                program.nested, mapping.merged_locations(*program.nested_locations),
            )
        )  # fmt: skip

    def background_ended(self, event: BackgroundEnded) -> None:
        """A background command's end: complete its card from it, as live. An end whose card is not open
        (no readable call started it) is passed over."""
        host, record = self.host, event.result
        card = self.background.pop(record.call_id, None)
        if not self.shown:
            return  # unseen: only the cards of commands still running here were kept
        if card is None:
            log.warning("session %s: end of an unknown background command %s", host.id, record.call_id)
            return
        result = record.to_result()
        result_view = card.presentable.result_view(result) if card.presentable is not None else None
        updates = mapping.tool_call_completed(
            card.wire, card.call_id, card.name, card.arguments, card.view, result, result_view, note=card.note
        )
        for update in updates:
            host.send(mapping.with_parent(update, card.parent_id) if card.parent_id is not None else update)

    def end_step(self) -> None:
        """Answer the step's calls in the order they were asked: with their logged results, or, for a call
        with none, as made (its file change was logged) or as unfinished; then the deferred contexts."""
        step, history = self.step, self.host.history
        for call_id in step.call_ids:
            message = step.results.pop(call_id, None)
            if message is None:
                commit = step.commits.get(call_id)
                asked = self.asked[call_id]
                if commit is not None:
                    message = _committed(self.host, call_id, asked, commit, shown=self.shown)
                else:
                    message = _unfinished(self.host, call_id, asked, shown=self.shown)
            history.append(message)
        history.extend(step.results.values())  # results of calls no readable step asked for
        history.extend(step.contexts)
        self.step = _Step()

    def presented(self, asked: _Asked) -> _Asked:
        """`asked` with the call card an unseen replay did not draw when the step was read."""
        presentable = Presentable.of(self.host.scope, asked.name, asked.arguments)
        view = presentable.call_view() if presentable is not None else None
        return _Asked(asked.name, asked.arguments, view, presentable)


@contextmanager
def _collection_paused() -> Iterator[None]:
    """The cyclic garbage collector held off while a log is replayed. What a replay keeps (the rebuilt
    history, the calls asked so far) stays alive and the rest is freed by reference counting, so the
    collections its allocations would trigger free nothing, yet each walks the young objects and, now
    and then, the whole heap: a tenth of the CPU of a 5,000-call `session/load` or `session/resume`
    (`benchmarks/history_bench.py`'s session). The collector is left as it was found, also when the
    replay raises."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _every_call(_call_id: str) -> bool:
    return True


def _committed(
    host: ReplayHost, call_id: str, asked: _Asked, commit: CallCommitted, *, shown: bool
) -> ToolResultMessage:
    """Complete the card of a call whose change was logged as made but whose result was not (the bridge
    stopped between the write and the result), from what the tool logged then (its result text and
    meta), and tell the model the change was made."""
    text = f"{commit.summary}\n\n{COMMITTED_NOTE}"
    if not shown:
        return ToolResultMessage(call_id, asked.name, text, False)
    result = ToolResult((TextBlock(text),), False, None, commit.meta)
    presentable = asked.presentable
    result_view = presentable.result_view(result) if presentable is not None else None
    updates = mapping.tool_call_completed(
        host.wire, call_id, asked.name, asked.arguments, asked.view, result, result_view, note=COMMITTED_NOTE
    )
    for update in _with_nested(host, call_id, asked, updates):
        host.send(update)
    return ToolResultMessage(call_id, asked.name, text, False)


def _unfinished(host: ReplayHost, call_id: str, asked: _Asked, *, shown: bool) -> ToolResultMessage:
    """Close the card of a call the log has no result for (it was running when the log ends) and answer
    it."""
    if not shown:
        return ToolResultMessage(call_id, asked.name, UNFINISHED_MESSAGE, True)
    result = ToolResult(
        (TextBlock(UNFINISHED_MESSAGE),), True, ToolFailureInfo(UNFINISHED_MESSAGE, CANCELLED)
    )
    updates = mapping.tool_call_completed(
        host.wire, call_id, asked.name, asked.arguments, asked.view, result, None
    )
    for update in _with_nested(host, call_id, asked, updates):
        host.send(update)
    return ToolResultMessage(call_id, asked.name, UNFINISHED_MESSAGE, True)


def _merged(known: SessionInfoChanged, event: SessionInfoChanged) -> SessionInfoChanged:
    """The info as of `event`: its fields replace the known ones; the ones it leaves None stay."""
    return SessionInfoChanged(
        event.title if event.title is not None else known.title,
        event.title_source if event.title is not None else known.title_source,
        event.roots if event.roots is not None else known.roots,
    )


def _with_nested(host: ReplayHost, call_id: str, asked: _Asked, final: Sequence[Update]) -> list[Update]:
    """A program card's final updates, the last one listing its nested calls as the live card did."""
    updates = list(final)
    if not asked.nested or not updates:
        return updates
    started = mapping.tool_call_started(
        host.wire, call_id, asked.name, asked.arguments, asked.view, "in_progress"
    )
    updates[-1] = mapping.with_nested_calls(
        updates[-1],
        asked.nested,
        mapping.merged_locations(*asked.nested_locations),
        host.wire,
        card_content=started.get("content") or (),
    )
    return updates
