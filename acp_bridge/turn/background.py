"""Cards that outlive their call's result: a command `bash` left running in the background.

A turn completes a call's card when its result arrives. A result whose view says its command runs on
(`TerminalResultView.background`: `bash` with `run_in_background` returned at once) is the exception: the
turn logs the result and tells the model as usual, then hands the card over (`LiveCard`) to its host's
`BackgroundCards` (`TurnHost.background`), which keeps it live, streaming the command's output, until the
command ends, after this turn if need be, and completes it then. A host that does not take it (`keep_live`
answers False) lets the turn complete the card at once, as the result view draws it.

Before each model step the turn asks the same keeper for the notes of commands that ended unseen
(`end_notes`) and gives them to the model as user messages.

Must not: know the commands themselves (the keeper does), or build wire shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from acp_bridge.mapping import WireContext
from acp_bridge.turn.presentable import Presentable
from registry_core.presentation import CallViewT, ResultViewT, TerminalResultView


@dataclass(frozen=True, slots=True)
class LiveCard:
    """A card handed over with what its updates need: the call, its pending view and presenters, the wire
    context it was announced with, the note it shows, and its program's call id (a nested call's)."""

    call_id: str
    name: str
    arguments: Any
    view: CallViewT | None
    wire: WireContext
    presentable: Presentable | None
    note: str | None = None
    parent_id: str | None = None


class BackgroundCards(Protocol):
    """The host's keeper of cards whose commands run on."""

    def keep_live(self, card: LiveCard) -> bool:
        """Take `card` over (True), or leave it to the turn to complete now (False)."""
        ...

    def end_notes(self) -> list[str]:
        """What the model should be told before its next step (each note once)."""
        ...


def runs_on(view: ResultViewT | None) -> bool:
    """Whether a result view says its call's command runs on after the result."""
    return isinstance(view, TerminalResultView) and view.background
