"""The wire shapes of a question to the user (the `ask_user` tool): the `elicitation/create` form, and the
permission options that stand for the answers when the client has no form.

Must not: read the answers (`questions.py` does, with the ids defined here) or choose how to ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .wire import PermissionOption

DECLINE_ID = "decline"
REPLY_ID = "reply"
ANSWER_PREFIX = "answer_"  # + the option's index: the permission option that stands for that answer


def elicitation_params(
    session_id: str, call_id: str, question: str, options: Sequence[str], free_text: bool
) -> dict[str, Any]:
    """`elicitation/create` params: a session-scoped form tied to the call."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    if options:
        properties["answer"] = {
            "type": "string",
            "title": "Answer",
            "oneOf": [{"const": option, "title": option} for option in options],
        }
        if free_text:
            properties["other"] = {
                "type": "string",
                "title": "Or your own answer",
                "description": "Used instead of the choice above when filled in.",
            }
        else:
            required.append("answer")
    else:
        properties["answer"] = {"type": "string", "title": "Answer", "minLength": 1}
        required.append("answer")
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return {
        "sessionId": session_id,
        "toolCallId": call_id,
        "mode": "form",
        "message": question,
        "requestedSchema": schema,
    }


def answer_options(options: Sequence[str], free_text: bool) -> list[PermissionOption]:
    """ACP PermissionOptions standing for the answers."""
    listed: list[PermissionOption] = [
        {"optionId": f"{ANSWER_PREFIX}{n}", "name": option, "kind": "allow_once"}
        for n, option in enumerate(options)
    ]
    if not options:
        listed.append({"optionId": REPLY_ID, "name": "Reply (type your answer)", "kind": "allow_once"})
    decline = "Decline (or type your own answer)" if options and free_text else "Decline"
    return [*listed, {"optionId": DECLINE_ID, "name": decline, "kind": "reject_once"}]
