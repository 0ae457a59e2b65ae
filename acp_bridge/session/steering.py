"""Steering, the session's side: a prompt sent while the session's turn runs is taken, not refused.

`SessionSteering.submit` is the ACP face's `session/prompt`. With no turn running it is an ordinary prompt
(`Session.prompt`). While one runs, the prompt is read at once as any prompt is (attachments too; bad
content or images for a model without vision are refused then, -32602) and queued, and its request waits:

- a message joins the running turn at its next step boundary, right before the next model request
  (`turn/steering.py`: history, log, echo); its request is answered with the turn's stop reason, with
  `_meta.acpBridge.steered` set, when the turn ends;
- one sent while the model gives its final answer: with `--steer-late step` (the default, Codex's
  behaviour) the turn takes one more step with it; with `turn` (Claude Code's) it runs as the next prompt,
  right after the turn answered;
- a command (`/...`) never joins a turn: it waits for the turn to end and then runs as the next prompt, and
  so does the message queued after it (arrival order is kept);
- whatever the turn could not take (it ended at its step limit, failed, or was `/compact`) runs as the next
  prompt, right after, each one echoed as it starts, so a client sees where it landed;
- `session/cancel` stops everything: the turn's prompt and every steered one answer `cancelled`, and the
  messages still queued are dropped.

The echo's `messageId` is the client's own id when its request carries one (`_meta.acpBridge.messageId`,
read by the face with `client_message_id`, so a client can tell its message when it lands), else one of
ours.

Must not: refuse a prompt for the running turn, lose one (every request is answered), or deliver one into a
cancelled turn.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import Update
from acp_bridge.common.settings import SteerLate
from acp_bridge.mapping import WireContext
from acp_bridge.session.prompt_blocks import Prompt
from acp_bridge.turn.loop import StopReason, Turn
from acp_bridge.turn.steering import SteeredPrompt

# The longest client message id taken (characters); a longer one is replaced by ours.
MAX_MESSAGE_ID_CHARS = 128


class SteeringHost(Protocol):
    """What steering needs of its session (`session.Session` is one)."""

    @property
    def busy(self) -> bool: ...

    @property
    def turn_index(self) -> int:
        """How many turns the session ran (the running one counted once it ended)."""
        ...

    @property
    def turn(self) -> Turn | None: ...

    @property
    def wire(self) -> WireContext: ...

    def read(self, blocks: object) -> Prompt:
        """The prompt of `blocks`, or InvalidParams as `prompt` would refuse it."""
        ...

    async def prompt(self, blocks: object) -> StopReason: ...

    def prompt_usage(self) -> mapping.PromptUsage | None:
        """The tokens of the prompt that ran last (or runs), as its answer's `usage`."""
        ...

    def send(self, update: Update) -> None: ...


@dataclass(frozen=True, slots=True)
class PromptAnswer:
    """What a `session/prompt` is answered: its stop reason, whether it joined another prompt's turn, and
    the tokens of the turn it ran in (gaps: ACP's unstable `usage`; a steered prompt's is its turn's, the
    figures the prompt that started that turn answers too), when the model reported any."""

    stop_reason: StopReason
    steered: bool = False
    usage: mapping.PromptUsage | None = None
    # checkpoints: the 1-based number of the turn it ran in (None: it ran none, e.g. a slash command).
    turn: int | None = None

    def response(self) -> dict[str, Any]:
        """ACP's `PromptResponse` (`_meta.acpBridge`: `steered`, and the `turn` it ran in)."""
        out: dict[str, Any] = {"stopReason": self.stop_reason}
        if self.usage is not None:
            out["usage"] = self.usage
        ours: dict[str, Any] = {}
        if self.steered:
            ours["steered"] = True
        if self.turn is not None:
            ours["turn"] = self.turn
        if ours:
            out["_meta"] = {"acpBridge": ours}
        return out


@dataclass(eq=False, slots=True)
class _Steer:
    blocks: object
    prompt: Prompt
    message_id: str
    # The turn's stop reason once it ended (or `cancelled`); None: run it as the next prompt.
    answer: asyncio.Future[StopReason | None]
    taken: bool = False  # the running turn took it
    usage: mapping.PromptUsage | None = None  # gaps: the turn's tokens, once it ended
    turn: int | None = None  # the number of the turn that took it, once it ended

    @property
    def command(self) -> bool:
        """A slash command (as `Session.prompt` tells one): it never joins a turn."""
        return self.prompt.text.startswith("/") and not self.prompt.images


def client_message_id(meta: object) -> str | None:
    """The client's id for its message (`_meta.acpBridge.messageId` of its `session/prompt`), if usable."""
    ours = meta.get("acpBridge") if isinstance(meta, Mapping) else None
    value = ours.get("messageId") if isinstance(ours, Mapping) else None
    if isinstance(value, str) and 0 < len(value) <= MAX_MESSAGE_ID_CHARS:
        return value
    return None


class SessionSteering:
    """A session's queue of prompts sent while its turn runs, and the running turn's `SteeringInbox`."""

    def __init__(self, host: SteeringHost, late: SteerLate) -> None:
        self._host = host
        self._late = late
        self._queued: deque[_Steer] = deque()  # not taken yet, in arrival order
        self._joined: list[_Steer] = []  # taken by the running turn: answered when it ends

    # --- the running turn's side (`turn.steering.SteeringInbox`) -------------------------------------

    def take(self) -> list[SteeredPrompt]:
        """The messages queued, up to the first command (it, and what follows it, waits for the turn to
        end)."""
        taken: list[SteeredPrompt] = []
        while self._queued and not self._queued[0].command:
            steer = self._queued.popleft()
            steer.taken = True
            self._joined.append(steer)
            prompt = steer.prompt
            taken.append(SteeredPrompt(prompt.text, prompt.images, prompt.blocks, steer.message_id))
        return taken

    def takes_step(self) -> bool:
        return self._late == "step" and bool(self._queued) and not self._queued[0].command

    @property
    def waiting(self) -> int:
        """How many prompts wait to join the running turn (or to run after it)."""
        return len(self._queued)

    # --- the session's side ---------------------------------------------------------------------------

    async def submit(self, blocks: object, message_id: str | None = None) -> PromptAnswer:
        """Answer one `session/prompt` (see the module docstring); `message_id`: the client's id for it
        (`client_message_id`). Raises as `Session.prompt` does."""
        host = self._host
        if not host.busy:
            return await self._run(blocks)
        prompt = host.read(blocks)
        message_id = message_id or f"msg_{uuid.uuid4().hex}"
        while True:
            turn = host.turn
            if turn is not None and turn.cancelled:
                return PromptAnswer("cancelled")  # nothing joins a cancelled turn
            steer = _Steer(blocks, prompt, message_id, asyncio.get_running_loop().create_future())
            self._queued.append(steer)
            try:
                stop = await steer.answer
            except asyncio.CancelledError:
                self._forget(steer)
                raise
            if stop is not None:
                return PromptAnswer(stop, steered=steer.taken, usage=steer.usage, turn=steer.turn)
            if not host.busy:
                # The next prompt: shown where it starts, as a steered one is where it joins.
                for chunk in mapping.user_prompt_chunks(
                    prompt.text,
                    [(image.mime_type, image.data) for image in prompt.images],
                    prompt.blocks,
                    message_id=message_id,
                    max_bytes=host.wire.max_update_bytes,
                ):
                    host.send(chunk)
                return await self._run(blocks)
            # Another prompt started first (an earlier one left over, or a new request): steer into it.

    async def _run(self, blocks: object) -> PromptAnswer:
        """Run `blocks` as the session's prompt; its answer, with its tokens (read before anything else
        can start another prompt)."""
        before = self._host.turn_index
        stop = await self._host.prompt(blocks)
        ran = self._host.turn_index > before  # no other prompt runs meanwhile: the turn is this one's
        return PromptAnswer(
            stop, usage=self._host.prompt_usage(), turn=self._host.turn_index if ran else None
        )

    def turn_ended(self, stop: StopReason | None, error: BaseException | None = None) -> None:
        """The running turn ended with `stop` (or failed with `error`): answer the prompts it took with
        the same, and release the others to run as the next prompt (`cancelled` when it was cancelled)."""
        joined, self._joined = self._joined, []
        cancelled = stop == "cancelled" or isinstance(error, asyncio.CancelledError)
        usage = self._host.prompt_usage()  # gaps: the turn's tokens, for the prompts it took
        for steer in joined:
            if steer.answer.done():
                continue
            steer.usage = usage
            steer.turn = self._host.turn_index if steer.taken else None  # counted once it ended
            if error is None or cancelled:
                steer.answer.set_result("cancelled" if cancelled else stop)
            else:
                steer.answer.set_exception(error)
        left, self._queued = list(self._queued), deque()
        for steer in left:
            if not steer.answer.done():
                steer.answer.set_result("cancelled" if cancelled else None)

    def cancel(self) -> None:
        """`session/cancel`: the prompts not taken yet answer `cancelled` now; those the turn took answer
        with it."""
        left, self._queued = list(self._queued), deque()
        for steer in left:
            if not steer.answer.done():
                steer.answer.set_result("cancelled")

    def _forget(self, steer: _Steer) -> None:
        """Its request went away (the connection is closing): the turn need not take it."""
        if steer in self._queued:
            self._queued.remove(steer)
        if steer in self._joined:
            self._joined.remove(steer)
