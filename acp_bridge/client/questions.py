"""`agent.services["questions"]`: how the `ask_user` tool's question reaches the user, in every client.

Three ways, the first the client supports:
1. ACP form elicitation (`elicitation/create`, mode "form", tied to the call's `toolCallId`), when the
   client advertised `clientCapabilities.elicitation.form`: the options are a titled single-select
   (`oneOf` of `{const, title}`), free text a string field ("other" beside the options, "answer" alone);
   `accept` answers, `decline` and `cancel` decline;
2. the face's own question (`channel.QuestionChannel`; the LSP face: `window/showMessageRequest`, one
   action per option);
3. otherwise a permission request on the call's card whose options are the answers (`answer_N`, kind
   `allow_once`) plus "Decline" (`reject_once`); free text travels as the answer's `_meta.feedback`, which
   clients that let the user type a reason send (a question with no options offers "Reply" for it).
One question at a time per session, as permission questions (the session's approval lock).

Must not: answer for the user (a dismissed question is declined, a malformed answer is an error the model
is told about), or outlive a cancelled turn (the tool's body is cancelled, which withdraws the request).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Protocol

from acp_bridge.client.channel import (
    ClientChannel,
    ElicitingChannel,
    PermissionOutcome,
    QuestionChannel,
    ToolCallUpdate,
)
from acp_bridge.common.errors import ConnectionClosed, RemoteError
from acp_bridge.mapping import ANSWER_PREFIX, DECLINE_ID, REPLY_ID, answer_options, elicitation_params
from presenters.ask_user import UserAnswer
from registry_core import ToolError, ToolExecution

log = logging.getLogger(__name__)


class QuestionHost(Protocol):
    """What the service needs of its session (`sessions.Session` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def channel(self) -> ClientChannel: ...

    @property
    def approval_lock(self) -> asyncio.Lock: ...

    async def question_card(self, execution: ToolExecution) -> ToolCallUpdate:
        """The call's card as a permission request's `toolCall`."""
        ...


class SessionQuestions:
    """The `QuestionAsker` of one session (see the module docstring)."""

    def __init__(self, host: QuestionHost) -> None:
        self._host = host

    async def ask(
        self, execution: ToolExecution, question: str, options: Sequence[str], free_text: bool
    ) -> UserAnswer:
        host = self._host
        channel = host.channel
        try:
            async with host.approval_lock:
                if channel.capabilities.elicitation_form and isinstance(channel, ElicitingChannel):
                    params = elicitation_params(host.id, execution.call_id, question, options, free_text)
                    return elicitation_answer(await channel.create_elicitation(params), options)
                if isinstance(channel, QuestionChannel):
                    chosen = await channel.ask_question(host.id, question, list(options))
                    return UserAnswer("answered", chosen) if chosen is not None else UserAnswer("declined")
                card = await host.question_card(execution)
                outcome = await channel.request_permission(host.id, card, answer_options(options, free_text))
                return permission_answer(outcome, options, free_text)
        except (RemoteError, ConnectionClosed, ValueError) as exc:
            log.warning("question %s could not be asked: %s", execution.call_id, exc)
            raise ToolError(f"The question could not be asked ({exc}); decide yourself, and say what you "
                            "assumed.", code="UNAVAILABLE") from None  # fmt: skip


# --- ACP form elicitation ----------------------------------------------------------------------------


def elicitation_answer(raw: object, options: Sequence[str]) -> UserAnswer:
    """Read an `elicitation/create` answer. Raises ValueError for one that is not an ACP answer, or an
    accepted choice that was not offered."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"not an elicitation answer: {raw!r:.200}")
    action = raw.get("action")
    if action in ("decline", "cancel"):
        return UserAnswer("declined")
    if action != "accept":
        raise ValueError(f"unknown elicitation action {action!r:.100}")
    content = raw.get("content")
    content = content if isinstance(content, Mapping) else {}
    other, choice = content.get("other"), content.get("answer")
    if isinstance(other, str) and other.strip():
        return UserAnswer("answered", other.strip())
    if isinstance(choice, str) and choice.strip():
        if options and choice not in options:
            raise ValueError(f"the answer {choice!r:.100} is none of the options offered")
        return UserAnswer("answered", choice.strip())
    return UserAnswer("declined")


# --- the permission-request fallback -----------------------------------------------------------------


def permission_answer(outcome: PermissionOutcome, options: Sequence[str], free_text: bool) -> UserAnswer:
    """Read the permission answer to a question. Raises ValueError for an option that was not offered."""
    if outcome.outcome == "cancelled":
        return UserAnswer("declined")
    option, typed = outcome.option_id or "", outcome.feedback
    if option.startswith(ANSWER_PREFIX) and option[len(ANSWER_PREFIX) :].isdigit():
        index = int(option[len(ANSWER_PREFIX) :])
        if index < len(options):
            return UserAnswer("answered", options[index])
    elif option == REPLY_ID:
        return UserAnswer("answered", typed) if typed else UserAnswer("declined")
    elif option == DECLINE_ID:
        if typed and free_text:
            return UserAnswer("answered", typed)
        return UserAnswer("declined", typed)
    raise ValueError(f"the client answered the question with an option that was not offered: {option!r:.100}")
