"""A session's side of its background commands: their live cards, their ends in the log, the notes the model
gets, and `/tasks`.

The commands themselves are the session's `presenters.background.BackgroundCommands` (in its
`SessionResources`, so they outlive a reload of the session in the same bridge); a `SessionBackground`
is their watcher (the newest session object of an id is; an older one goes quiet) and the turn's
`BackgroundCards`:
- `keep_live(card)`: the turn hands over the card of a `bash` call whose command runs on. Output the
  command printed before that (the result reaches the turn a moment after the command started) is kept
  (bounded) and shown first. The card streams through its own `LiveOutput`, in the wire context it was
  announced with (terminal deltas with the client's opt-in, a re-sent tail without), between prompts too.
- the command's end (`on_end`): logged as `BackgroundEnded` (the tool's own durable end), then the card
  completes from it through the tool's presenter and `mapping`, as `session/load` will draw it. A card
  handed over after its command ended completes at once, its output in the final update. A command no
  card was handed over for (its turn was abandoned) ends unlogged.
- `end_notes()`: for each command that ended without the model seeing it end, one note, once.
- `reopen(cards)`: after `session/load` or `session/resume`, the background cards the log left open: a
  command still running in this bridge goes on live, showing first what it printed so far (muted for a
  resume, whose client saw no card); any other is closed as ended unrecorded (the bridge stopped while it
  ran).
- `/tasks` lists the commands (id, command, state, runtime); `/tasks kill ID` stops one.
- `close()`: the session is closing: stop every command, each end logged and shown, before its log is
  released.
- with checkpoints (`changes`), a command's end first takes a snapshot: the files it changed since its call
  returned are drawn on its final card and told to the model (`checkpoints.service.after_background`).

What ends a background command: its own end, `kill_bash`, `/tasks kill`, the session's close or delete,
and the bridge's exit. A `session/cancel` stops the running turn only.

Must not: block the loop, send for a session object that is no longer the commands' watcher, or log an
end for a card the log never held.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import ClientChannel
from acp_bridge.history.session_log import BackgroundEnded, LogEvent
from acp_bridge.mapping import Update
from acp_bridge.turn.background import LiveCard
from acp_bridge.turn.live_output import LiveOutput
from presenters.background import BackgroundCommand, BackgroundCommands, short_command
from registry_core import CANCELLED, TextBlock, ToolError, ToolFailureInfo, ToolResult, ToolResultEvent

log = logging.getLogger(__name__)

# Output a command printed before its card was handed over, kept at most (its end, behind a marker).
EARLY_CHARS = 256 * 1024
UNRECORDED_MESSAGE = (
    "The background command's end was not recorded: the bridge stopped while it ran, and its processes "
    "with it."
)
TASKS_USAGE = "Usage: `/tasks` lists the background commands; `/tasks kill ID` stops one."


# checkpoints: (the command's call id, its end's result) → the result with what it changed by then.
ChangesOfEnd = Callable[[str, ToolResult], Awaitable[ToolResult]]


class BackgroundHost(Protocol):
    """What the keeper needs of its session (`Session` is one)."""

    @property
    def id(self) -> str: ...

    @property
    def channel(self) -> ClientChannel: ...

    def record(self, event: LogEvent) -> None: ...


@dataclass(slots=True)
class _Kept:
    card: LiveCard
    live: LiveOutput | None  # None: muted (a resumed session's client never saw the card)


class SessionBackground:
    """The keeper of one session's background cards (see the module docstring)."""

    def __init__(
        self, host: BackgroundHost, commands: BackgroundCommands, changes: ChangesOfEnd | None = None
    ) -> None:
        self._host = host
        self.commands = commands
        # checkpoints: what a command changed by its end, added to its result (None: no checkpoints).
        self._changes = changes
        self._finishing: set[asyncio.Task[None]] = set()
        self._cards: dict[str, _Kept] = {}
        self._early: dict[str, list[str]] = {}
        self._early_size: dict[str, int] = {}
        commands.watch(self)

    @property
    def _active(self) -> bool:
        return self.commands.watcher is self

    # --- the turn's side (`BackgroundCards`) ---------------------------------------------------------

    def keep_live(self, card: LiveCard, *, visible: bool = True, backfill: bool = False) -> bool:
        """`backfill`: first show what the command printed so far (a replayed card showed none of it)."""
        command = self.commands.get(card.call_id)
        if command is None or not self._active or card.call_id in self._cards:
            return False
        early = self._early.pop(card.call_id, [])
        self._early_size.pop(card.call_id, None)
        live = None
        if visible:
            live = LiveOutput(
                functools.partial(self._send_live, card),
                deltas=card.wire.terminal_meta,
                backlog=self._host.channel.backlog,
            )
        kept = _Kept(card, live)
        if not command.running:
            # Ended before the hand-over: the final update carries its output.
            self._finish(kept, command, streamed=False)
            return True
        self._cards[card.call_id] = kept
        if live is not None:
            for text in [command.capture.text()] if backfill else early:
                live.feed(text)
        return True

    def running_calls(self) -> frozenset[str]:
        """The ids of the calls whose background commands this bridge still has: the only cards `reopen`
        keeps live after a replay the client does not see."""
        return frozenset(c.bash_id for c in self.commands.commands()) if self._active else frozenset()

    def end_notes(self) -> list[str]:
        return self.commands.take_end_notes() if self._active else []

    # --- the commands' side (`BackgroundWatcher`) ----------------------------------------------------

    def on_output(self, bash_id: str, text: str) -> None:
        kept = self._cards.get(bash_id)
        if kept is not None:
            if kept.live is not None:
                kept.live.feed(text)
            return
        pieces = self._early.setdefault(bash_id, [])
        pieces.append(text)
        size = self._early_size.get(bash_id, 0) + len(text)
        if size > EARLY_CHARS:
            kept_text = "".join(pieces)[-EARLY_CHARS // 2 :]
            pieces[:] = [f"[acp-bridge: earlier output skipped]\r\n{kept_text}"]
            size = len(pieces[0])
        self._early_size[bash_id] = size

    def on_end(self, command: BackgroundCommand) -> None:
        self._early.pop(command.bash_id, None)
        self._early_size.pop(command.bash_id, None)
        kept = self._cards.pop(command.bash_id, None)
        if kept is None:
            return
        if self._changes is None:
            self._finish(kept, command, streamed=True)
            return
        task = asyncio.ensure_future(self._finish_with_changes(kept, command, self._changes))
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def _finish_with_changes(
        self, kept: _Kept, command: BackgroundCommand, changes: ChangesOfEnd
    ) -> None:
        """checkpoints: the end's result with the files the command changed since its call returned."""
        result = command.outcome()
        try:
            result = await changes(kept.card.call_id, result)
        except Exception:  # the end is logged and shown either way
            log.exception("the changes of background command %s were not taken", command.bash_id)
        self._finish(kept, command, streamed=True, result=result)

    # --- the session's side -----------------------------------------------------------------------

    def reopen(self, cards: list[LiveCard], *, visible: bool) -> None:
        """The background cards a loaded log left open: live again when their command still runs here,
        else (shown only when `visible`) closed as ended unrecorded."""
        for card in cards:
            if self.keep_live(card, visible=visible, backfill=True) or not visible:
                continue
            result = ToolResult(
                (TextBlock(UNRECORDED_MESSAGE),), True, ToolFailureInfo(UNRECORDED_MESSAGE, CANCELLED)
            )
            self._send_completed(card, result, streamed=False)

    async def close(self) -> None:
        """Stop every command of the session (each end logged and its card completed)."""
        if self._active:
            await self.commands.stop_all("the session was closed")
        await self.settle()

    async def settle(self) -> None:
        """checkpoints: wait until every ended command's end is logged and its card completed (the
        snapshot of what it changed runs after its end); the bridge's shutdown waits for this too."""
        while self._finishing:
            await asyncio.gather(*self._finishing, return_exceptions=True)

    def tasks(self, argument: str) -> str:
        """`/tasks [kill ID]`: the listing, or what stopping one does."""
        words = argument.split()
        if not words:
            return describe(self.commands.commands())
        if len(words) == 2 and words[0] == "kill":
            try:
                command = self.commands.kill_soon(words[1], "/tasks kill")
            except ToolError as exc:
                return exc.message
            if not command.running:
                return f"Background command {command.bash_id} already {command.state()}."
            return f"Stopping background command {command.bash_id} (`{short_command(command.command)}`)."
        return TASKS_USAGE

    def kill(self, bash_id: str) -> bool:
        """`_acpBridge/killBackground`: start stopping one command, as `/tasks kill` does; False when it is
        unknown or no longer running."""
        try:
            command = self.commands.kill_soon(bash_id, "/tasks kill")
        except ToolError:
            return False
        return command.running

    # --- the cards ------------------------------------------------------------------------------------

    def _send(self, card: LiveCard, update: Update) -> None:
        if self._active:
            if card.parent_id is not None:
                update = mapping.with_parent(update, card.parent_id)
            self._host.channel.send_update(self._host.id, update)

    def _send_live(self, card: LiveCard, delta: str, tail: str) -> None:
        update = mapping.terminal_output(card.wire, card.call_id, delta, tail, call_view=card.view)
        self._send(card, update)

    def _finish(
        self, kept: _Kept, command: BackgroundCommand, *, streamed: bool, result: ToolResult | None = None
    ) -> None:
        """Log the command's end (`result`: its outcome with its changes), then complete its card from
        that durable end."""
        card, live = kept.card, kept.live
        if live is not None:
            live.close()
        result = command.outcome() if result is None else result
        if self._active:
            # Logged before the card completes: what the client saw completed, a reload shows completed.
            event = ToolResultEvent(
                card.call_id, card.name, result.content, result.is_error, result.error, result.meta
            )
            self._host.record(BackgroundEnded(event))
        if live is not None:
            self._send_completed(card, result, streamed=streamed and live.sent)

    def _send_completed(self, card: LiveCard, result: ToolResult, *, streamed: bool) -> None:
        view = card.presentable.result_view(result) if card.presentable is not None else None
        updates = mapping.tool_call_completed(
            card.wire, card.call_id, card.name, card.arguments, card.view, result, view,
            terminal_output_sent=streamed, note=card.note,
        )  # fmt: skip
        for update in updates:
            self._send(card, update)


def describe(commands: list[BackgroundCommand], now: float | None = None) -> str:
    """`/tasks`: every background command kept, oldest first, as a Markdown table."""
    if not commands:
        return "No background commands in this session. " + TASKS_USAGE
    at = now if now is not None else time.monotonic()
    rows = [
        f"| {c.bash_id} | `{short_command(c.command, 60).replace('|', '¦')}` | {c.state()} | "
        f"{_duration(c.runtime(at))} |"
        for c in commands
    ]
    head = "| id | command | state | runtime |\n|---|---|---|---|"
    return "Background commands:\n\n" + "\n".join([head, *rows]) + "\n\n`/tasks kill ID` stops one."


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
