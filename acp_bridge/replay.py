"""Replay of a stored conversation (`session/load`): rebuild the history the model sees, and send the client
the same updates the live turn sent, through the same presenters and the same mapping, so a reloaded
session looks as it did (tests compare the folded cards of both).

A call that has no result in the log but whose file change was logged as made (`tool/commit`: the bridge
stopped between the write and the result) is shown completed, with its diff, and the model is told the
change was made. The session's permission choices (the last `permissions` event) come back with it: the
mode, announced by a `current_mode_update`, and the remembered rules; a short note lists what differs from
a new session.

Must not: run tools or the model again, or trust the log blindly (an unreadable event is skipped, a call
that never settled is closed as unfinished).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registry_core import (
    CANCELLED,
    JsonValue,
    TextBlock,
    ToolFailureInfo,
    ToolResult,
    ToolResultEvent,
    content_text,
    snapshot,
)
from registry_core.presentation import CallViewT

from . import mapping, permission_log
from .models import AssistantMessage, ToolCallRequest, ToolResultMessage, UserMessage
from .turn import Presentable

if TYPE_CHECKING:
    from .sessions import Session

log = logging.getLogger(__name__)

COMMIT_EVENT = "tool/commit"
COMMITTED_NOTE = "The bridge stopped before this call reported its result; the change shown was made."

Asked = tuple[str, Any, CallViewT | None, Presentable | None]


def replay(session: Session, events: Sequence[Mapping[str, Any]]) -> int:
    """Rebuild a stored conversation into `session.history` and send it to the client as the same updates
    a live turn sends (same presenters, same mapping), so a reloaded session looks as it did. Returns the
    number of prompts it held (the next prompt's turn index). Unreadable events are skipped (logged).

    The history is the live turn's: a step's tool results in the order the model asked for the calls
    (the log has them in the order they settled), then the contexts they deferred; a call that never
    settled is answered (and its card closed) where its step ends."""
    wire = session.wire
    send = session.send
    history = session.history
    asked: dict[str, Asked] = {}
    step = _Step()
    prompts = 0
    permissions: Mapping[str, Any] | None = None

    def end_step() -> None:
        for call_id in step.call_ids:
            message = step.results.pop(call_id, None)
            if message is None:
                commit = step.commits.get(call_id)
                if commit is not None:
                    message = _committed(session, call_id, asked[call_id], commit)
                else:
                    message = _unfinished(session, call_id, asked[call_id])
            history.append(message)
        history.extend(step.results.values())  # results of calls no readable step asked for
        history.extend(step.contexts)
        step.clear()

    for event in events:
        kind = event.get("type")
        try:
            if kind == "user":
                text = str(event["text"])
                end_step()
                prompts += 1
                history.append(UserMessage(text))
                send(mapping.user_message_chunk(text))
            elif kind == "context":
                step.contexts.append(UserMessage(str(event["text"])))
            elif kind == COMMIT_EVENT:
                step.commits[str(event["callId"])] = _Commit(
                    str(event.get("summary") or "The change was made."), snapshot(event.get("meta"))
                )
            elif kind == permission_log.EVENT_TYPE:
                permissions = event
            elif kind == "assistant":
                calls = tuple(
                    ToolCallRequest(str(c["id"]), str(c["name"]), c["arguments"])
                    for c in event.get("toolCalls", [])
                )
                text, thought = str(event.get("text") or ""), str(event.get("thought") or "")
                end_step()
                history.append(AssistantMessage(text, calls, thought or None))
                if thought:
                    send(mapping.agent_thought_chunk(thought))
                if text:
                    send(mapping.agent_message_chunk(text))
                for call in calls:
                    presentable = Presentable.of(session.scope, call.name, call.arguments)
                    view = presentable.call_view() if presentable is not None else None
                    asked[call.id] = (call.name, call.arguments, view, presentable)
                    if call.id not in step.call_ids:
                        step.call_ids.append(call.id)
                    send(
                        mapping.tool_call_started(
                            wire, call.id, call.name, call.arguments, view, "in_progress"
                        )
                    )
            elif kind == "tool/result":
                record = ToolResultEvent.from_json(event)
                name, arguments, view, presentable = asked.get(
                    record.call_id, (record.name, None, None, None)
                )
                result = record.to_result()
                step.results[record.call_id] = ToolResultMessage(
                    record.call_id, record.name, content_text(result.content), result.is_error
                )
                result_view = presentable.result_view(result) if presentable is not None else None
                note = event.get("note")
                for update in mapping.tool_call_completed(
                    wire, record.call_id, name, arguments, view, result, result_view,
                    note=note if isinstance(note, str) else None,
                ):  # fmt: skip
                    send(update)
                plan = mapping.plan_from_result(result)
                if plan is not None:
                    send(plan)
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("session %s: skipping an unreadable %r event: %s", session.id, kind, exc)
    end_step()
    if permissions is not None:
        _restore_permissions(session, permissions)
    return prompts


def _restore_permissions(session: Session, event: Mapping[str, Any]) -> None:
    restored = permission_log.restore(session.permissions, event)
    if restored.mode is not None:
        session.send(mapping.mode_update(restored.mode))
    fresh_mode = session.manager.config.policy.mode
    if restored.rules or restored.dropped or restored.mode not in (None, fresh_mode):
        # A paragraph of its own: the client may join it to the agent's last replayed words.
        session.send(mapping.agent_message_chunk("\n\n" + restored.note()))


class _Step:
    """The latest stored step being rebuilt: the ids of the calls it asked for (in order), the results
    logged for them so far, and the contexts those results deferred."""

    def __init__(self) -> None:
        self.call_ids: list[str] = []
        self.results: dict[str, ToolResultMessage] = {}
        self.commits: dict[str, _Commit] = {}
        self.contexts: list[UserMessage] = []

    def clear(self) -> None:
        self.call_ids.clear()
        self.results.clear()
        self.commits.clear()
        self.contexts.clear()


@dataclass(frozen=True, slots=True)
class _Commit:
    """A logged `tool/commit`: the result text and the presentation meta the tool reported with it."""

    summary: str
    meta: JsonValue


def _committed(session: Session, call_id: str, asked: Asked, commit: _Commit) -> ToolResultMessage:
    """Complete the card of a call whose change was logged as made but whose result was not, from what the
    tool logged then (its result text and meta), and answer the call with it."""
    name, arguments, view, presentable = asked
    text = f"{commit.summary}\n\n{COMMITTED_NOTE}"
    result = ToolResult((TextBlock(text),), False, None, commit.meta)
    result_view = presentable.result_view(result) if presentable is not None else None
    for update in mapping.tool_call_completed(
        session.wire, call_id, name, arguments, view, result, result_view, note=COMMITTED_NOTE
    ):
        session.send(update)
    return ToolResultMessage(call_id, name, text, False)


def _unfinished(session: Session, call_id: str, asked: Asked) -> ToolResultMessage:
    """Close the card of a call the log has no result for (the bridge stopped first) and answer it."""
    name, arguments, view, _presentable = asked
    message = "The call did not finish: the bridge stopped first."
    result = ToolResult((TextBlock(message),), True, ToolFailureInfo(message, CANCELLED))
    for update in mapping.tool_call_completed(session.wire, call_id, name, arguments, view, result, None):
        session.send(update)
    return ToolResultMessage(call_id, name, message, True)
