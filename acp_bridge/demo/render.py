"""How the demo client shows ACP session updates in a terminal: streamed text, cards, diffs, live terminal
output, the plan, permission questions and the closing summary.

`CardPrinter.update(update)` takes one `session/update` `update` payload (plain JSON, as on the wire), reads
it through the mapping's fold (`mapping.read_update`, the card reducer `mapping.next_card`) and prints what
changed: a card's first appearance and every status change on one line each, the diff of an edit (before
approval and as applied), terminal output as it streams, a short excerpt of other results. A call a
program made (its card's `parent`, `_meta.parentToolCallId` on the wire) is indented under its program's card.

Must not: talk to the bridge (demo.py does), or print anything but to the stream it was given.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from acp_bridge.mapping import (
    Card,
    CardPatch,
    DiffItem,
    ModeChange,
    PermissionOption,
    PlanChange,
    PlanEntry,
    TextChunk,
    ToolCallContent,
    card_of,
    next_card,
    read_update,
)

_STATUS_MARK = {"pending": "…", "in_progress": "▶", "completed": "✔", "failed": "✖"}
_STATUS_WORD = {"pending": "waiting", "in_progress": "running", "completed": "done", "failed": "failed"}
_PLAN_MARK = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
_EXCERPT_LINES = 6


@dataclass(frozen=True, slots=True)
class Style:
    """ANSI styling, or none at all (not a TTY, NO_COLOR, --no-color)."""

    enabled: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled and text else text

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def yellow(self, text: str) -> str:
        return self._wrap("33", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


@dataclass(slots=True)
class _Shown:
    """One card as printed so far: the card (the fold of its updates) and what of it is on screen."""

    card: Card
    terminal_partial: str = ""  # streamed output after the last newline, printed when the line ends
    shown_output: bool = False  # output streamed: the final content would only repeat it
    shown_change: bool = False  # the change it proposes printed (a diff before it ran)


@dataclass(slots=True)
class _Tally:
    calls: int = 0
    completed: int = 0
    failed: int = 0
    asked: int = 0
    answers: list[str] = field(default_factory=list)


def workspace_changes(workspace: Path, originals: Mapping[str, str]) -> list[str]:
    """One line per file that differs from the demo's original (changed, deleted or new)."""
    lines = []
    for name, text in sorted(originals.items()):
        path = workspace / name
        if not path.exists():
            lines.append(f"{name}: deleted")
            continue
        now = path.read_text(encoding="utf-8", errors="replace")
        if now != text:
            diff = list(difflib.unified_diff(text.splitlines(), now.splitlines(), lineterm="", n=0))
            added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
            removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
            lines.append(f"{name}: changed (+{added} -{removed})")
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace).as_posix()
        if path.is_file() and rel not in originals and not rel.startswith("."):
            lines.append(f"{rel}: new")
    return lines


class CardPrinter:
    """Prints updates as they arrive. One instance per demo run."""

    def __init__(self, out: TextIO, style: Style, *, cwd: str, interactive: bool) -> None:
        self.out = out
        self.style = style
        self.cwd = cwd
        self.interactive = interactive
        self.cards: dict[str, _Shown] = {}
        self.tally = _Tally()
        self._streaming: str | None = None  # "thought" / "text" while a chunk stream is open
        self.closed = False

    # --- plain lines ------------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        """Write and flush; once the reader has gone (`demo | head`), stay quiet instead of failing."""
        if self.closed:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except (BrokenPipeError, ValueError):
            self.closed = True

    def _line(self, text: str = "") -> None:
        self.end_stream()
        self._write(text + "\n")

    def banner(self, workspace: Path, model: str, argv: list[str]) -> None:
        s = self.style
        self._line(
            s.bold("acp-bridge demo") + s.dim(" - an ACP client in your terminal, driving a real bridge")
        )
        self._line(s.dim(f"workspace: {workspace}"))
        self._line(s.dim(f"model:     {model}"))
        self._line(s.dim(f"bridge:    {' '.join(argv[1:])}"))
        self._line()

    def note(self, text: str) -> None:
        self._line(self.style.dim(text))

    def error(self, text: str) -> None:
        self._line(self.style.red(text))

    def user(self, text: str) -> None:
        self._line(self.style.bold("you: ") + text)

    def end_stream(self) -> None:
        if self._streaming is not None:
            self._streaming = None
            self._write("\n")

    def _stream(self, kind: str, text: str) -> None:
        if self._streaming != kind:
            self.end_stream()
            label = self.style.dim("thinking: ") if kind == "thought" else self.style.bold("agent: ")
            self._write(label)
            self._streaming = kind
        self._write(self.style.dim(text) if kind == "thought" else text)

    # --- updates ----------------------------------------------------------------------------------

    def update(self, update: Mapping[str, Any]) -> None:
        event = read_update(update)
        if isinstance(event, TextChunk):
            if event.kind != "user_message_chunk" and event.text is not None:
                self._stream("thought" if event.kind == "agent_thought_chunk" else "text", event.text)
        elif isinstance(event, CardPatch):
            if event.new:
                self._tool_call(event)
            else:
                self._tool_call_update(event)
        elif isinstance(event, PlanChange):
            self._plan(event.entries)
        elif isinstance(event, ModeChange):
            self.note(f"mode: {event.mode_id}")

    def _tool_call(self, said: CardPatch) -> None:
        card = next_card(None, said)
        if card is None:
            return
        shown = _Shown(card)
        self.cards[card.call_id] = shown
        self.tally.calls += 1
        self._status_line(card)
        if card.status != "pending":
            # A pending card waits for a question, which shows the change as it applies to the file now
            # (the tool's preview); this one was drawn from the arguments alone.
            self._proposed_change(shown)

    def _tool_call_update(self, said: CardPatch) -> None:
        shown = self.cards.get(said.call_id)
        card = next_card(shown.card, said) if shown is not None else None
        if shown is None or card is None:
            return
        before, shown.card = shown.card, card
        if said.output is not None:
            self._terminal(shown, said.output)
        if said.exited is not None:
            self._flush_terminal(shown)
        status = said.status
        if status is not None and status != before.status:
            if status == "completed":
                self.tally.completed += 1
            elif status == "failed":
                self.tally.failed += 1
            extra = ""
            code = said.exited.exit_code if said.exited is not None else said.outcome.exit_code
            if code is not None and status in ("completed", "failed"):
                extra = f" (exit {code})"
            self._status_line(card, extra)
            if before.status == "pending" and status == "in_progress":
                self._proposed_change(shown)  # allowed with no question (a rule the user just added)
        if said.content is not None and status in ("completed", "failed"):
            self._content(shown, said.content, preview=False)

    def _status_line(self, card: Card, extra: str = "") -> None:
        s = self.style
        status = card.status
        mark = _STATUS_MARK.get(status, "·")
        color = {"completed": s.green, "failed": s.red, "pending": s.yellow}.get(status, s.cyan)
        word = _STATUS_WORD.get(status, status)
        title = card.title or card.call_id
        indent = f"    {s.dim('└')} " if card.parent is not None else "  "
        self._line(f"{indent}{color(mark)} {s.bold(title)} {s.dim(f'[{card.kind}, {word}{extra}]')}")

    def _content(self, shown: _Shown, content: Sequence[ToolCallContent], *, preview: bool) -> None:
        """Diffs always; other text only once the call is done (and not again for streamed output)."""
        for block in content:
            if block["type"] == "diff":
                self._diff(block)
            elif block["type"] == "content" and not preview and not shown.shown_output:
                inner = block["content"]
                if inner["type"] == "text":
                    self._excerpt(inner["text"])

    def _proposed_change(self, shown: _Shown) -> None:
        """The diffs of a card that has not run yet, once."""
        if not shown.shown_change:
            shown.shown_change = self._diffs(shown.card.content)

    def _diffs(self, content: Sequence[ToolCallContent]) -> bool:
        """Print the diff blocks of `content`; whether there were any."""
        diffs = [block for block in content if block["type"] == "diff"]
        for block in diffs:
            self._diff(block)
        return bool(diffs)

    def _excerpt(self, text: str) -> None:
        lines = [ln for ln in text.splitlines() if not ln.startswith("```")]
        for ln in lines[:_EXCERPT_LINES]:
            self._line("      " + self.style.dim(ln[:160]))
        if len(lines) > _EXCERPT_LINES:
            self._line("      " + self.style.dim(f"… ({len(lines) - _EXCERPT_LINES} more lines)"))

    def _diff(self, block: DiffItem) -> None:
        s = self.style
        old = block["oldText"]
        path = block["path"]
        shown = path[len(self.cwd) + 1 :] if path.startswith(self.cwd + "/") else path
        old_lines = old.splitlines() if old is not None else []
        new_lines = block["newText"].splitlines()
        self._line("      " + s.dim(f"diff {shown}" + (" (new file)" if old is None else "")))
        for ln in difflib.unified_diff(old_lines, new_lines, lineterm="", n=1):
            if ln.startswith(("---", "+++")):
                continue
            if ln.startswith("@@"):
                self._line("      " + s.cyan(ln))
            elif ln.startswith("+"):
                self._line("      " + s.green(ln))
            elif ln.startswith("-"):
                self._line("      " + s.red(ln))
            else:
                self._line("      " + ln)

    def _terminal(self, shown: _Shown, data: str) -> None:
        shown.shown_output = True
        text = shown.terminal_partial + data.replace("\r\n", "\n")
        *lines, shown.terminal_partial = text.split("\n")
        for ln in lines:
            self._line("      " + self.style.dim("│ ") + ln)

    def _flush_terminal(self, shown: _Shown) -> None:
        if shown.terminal_partial:
            self._line("      " + self.style.dim("│ ") + shown.terminal_partial)
            shown.terminal_partial = ""

    def _plan(self, entries: Sequence[PlanEntry]) -> None:
        self._line("  " + self.style.bold("plan:"))
        for entry in entries:
            mark = _PLAN_MARK.get(entry["status"], "[?]")
            self._line(f"    {mark} {entry['content']} " + self.style.dim(f"({entry['priority']})"))

    # --- questions and the end --------------------------------------------------------------------

    async def ask(self, tool_call: Mapping[str, Any], options: Sequence[PermissionOption]) -> str:
        """Show a permission question; return the chosen option id (allow once when not interactive)."""
        s = self.style
        self.tally.asked += 1
        card = card_of(tool_call)
        self._line(f"  {s.yellow('?')} {s.bold('permission needed:')} {card.title or card.call_id}")
        # The question's card is the tool's preview: the change as it would apply to the file now.
        shown_here = self._diffs(card.content)
        shown = self.cards.get(card.call_id)
        if shown is not None:
            shown.shown_change = shown.shown_change or shown_here
        for i, option in enumerate(options, 1):
            self._line(f"      {i}. {option['name']}")
        first_allow = next((o for o in options if o["kind"] == "allow_once"), options[0])
        chosen = first_allow["optionId"]
        if not self.interactive:
            self._line("      " + s.dim(f"(not a terminal: answering '{first_allow['name']}')"))
        else:
            while True:
                reply = (await asyncio.to_thread(input, "      choose [1]: ")).strip()
                if not reply:
                    break
                if reply.isdigit() and 1 <= int(reply) <= len(options):
                    chosen = options[int(reply) - 1]["optionId"]
                    break
                self._line(f"      please type a number from 1 to {len(options)}")
        self.tally.answers.append(chosen)
        return chosen

    def summary(self, stop_reason: str, elapsed: float, changes: list[str]) -> None:
        s = self.style
        t = self.tally
        self._line()
        self._line(s.bold("summary"))
        self._line(f"  turn ended: {stop_reason} after {elapsed:.1f} s")
        self._line(f"  tool calls: {t.calls} ({t.completed} completed, {t.failed} failed)")
        answered = ", ".join(t.answers) if t.answers else "none"
        self._line(f"  permission questions: {t.asked} (answers: {answered})")
        self._line("  files: " + ("; ".join(changes) if changes else "unchanged"))
