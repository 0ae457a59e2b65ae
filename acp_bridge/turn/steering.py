"""Steering, the turn's side: prompts the user sent while the turn ran join it at a step boundary.

A host that takes such prompts (`session/steering.py`) gives the turn its `SteeringInbox`
(`TurnHost.steering`). Right before each model request (after the previous step's results, the contexts
they deferred and a compaction, so a compaction never summarizes what the user just said), the turn
`deliver`s what arrived since the last one, in arrival order: each message joins the history as a user
message, is logged as the user's prompt (`UserPrompt` with `steered`, so `session/load` shows it and gives
it to the model where it landed) and is echoed to the client as `user_message_chunk`s under its message
id (so every client shows where it landed, live). From then on it is the turn's: its `session/prompt` is
answered with the turn's stop reason.

The model's final answer (a step asking for no call) ends the turn, unless a prompt arrived during that
step and the inbox says so (`takes_step`): then the turn takes one more step with it (Codex's behaviour).
Otherwise the host runs what is left as its next prompt (Claude Code's).

Must not: know how a prompt is read or answered (the host's), or deliver while the turn is cancelled (the
loop checks first).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from acp_bridge import mapping
from acp_bridge.history.session_log import LogEvent, UserPrompt
from acp_bridge.mapping import Update
from acp_bridge.models import ImageData, Message, UserMessage
from registry_core import JsonValue


@dataclass(frozen=True, slots=True)
class SteeredPrompt:
    """A prompt sent while the turn runs, as read (`prompt_blocks.Prompt`) and with the id its echo
    carries."""

    text: str
    images: tuple[ImageData, ...]
    blocks: tuple[JsonValue, ...] | None
    message_id: str


class SteeringInbox(Protocol):
    """Where a running turn finds the prompts its user sent meanwhile."""

    def take(self) -> list[SteeredPrompt]:
        """The prompts that arrived since the last call, oldest first; the turn delivers them now, and
        their prompts are answered with its stop reason."""
        ...

    def takes_step(self) -> bool:
        """The model just gave its final answer: whether the turn takes one more step for the prompts
        that arrived meanwhile (False: none did, or they wait for the next prompt)."""
        ...


def deliver(
    inbox: SteeringInbox | None,
    history: list[Message],
    send: Callable[[Update], None],
    record: Callable[[LogEvent], None],
    max_bytes: int,
) -> None:
    """Join what the inbox holds to the turn: history, log and echo, in that order, one prompt after
    another."""
    if inbox is None:
        return
    for steer in inbox.take():
        history.append(UserMessage(steer.text, steer.images))
        record(UserPrompt(steer.text, steer.images, steer.blocks, steered=True, message_id=steer.message_id))
        images = [(image.mime_type, image.data) for image in steer.images]
        for chunk in mapping.user_prompt_chunks(
            steer.text, images, steer.blocks, message_id=steer.message_id, max_bytes=max_bytes
        ):
            send(chunk)


def takes_step(inbox: SteeringInbox | None) -> bool:
    return inbox is not None and inbox.takes_step()
