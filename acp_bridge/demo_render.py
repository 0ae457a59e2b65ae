"""How the demo client shows ACP session updates in a terminal: streamed text, cards, diffs, live terminal
output, the plan, permission questions and the closing summary.

`CardPrinter.update(update)` takes one `session/update` `update` payload (plain JSON, as on the wire) and
prints what changed: a card's first appearance and every status change on one line each, the diff of an
edit (before approval and as applied), terminal output as it streams, a short excerpt of other results.
A call a program made (`_meta.parentToolCallId`) is indented under its program's card.

Must not: talk to the bridge (demo.py does), or print anything but to the stream it was given.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

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
class _Card:
    title: str
    kind: str
    status: str
    terminal_partial: str = ""
    shown_output: bool = False
    nested: bool = False  # a call a program made: shown under the program's card


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
        self.cards: dict[str, _Card] = {}
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
        kind = update.get("sessionUpdate")
        if kind in ("agent_thought_chunk", "agent_message_chunk"):
            content = update.get("content")
            if isinstance(content, Mapping) and isinstance(content.get("text"), str):
                self._stream("thought" if kind == "agent_thought_chunk" else "text", content["text"])
        elif kind == "tool_call":
            self._tool_call(update)
        elif kind == "tool_call_update":
            self._tool_call_update(update)
        elif kind == "plan":
            self._plan(update.get("entries") or [])
        elif kind == "current_mode_update":
            self.note(f"mode: {update.get('currentModeId')}")

    def _tool_call(self, update: Mapping[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        status = str(update.get("status") or "pending")
        card = _Card(str(update.get("title") or call_id), str(update.get("kind") or "other"), status)
        meta = update.get("_meta")
        card.nested = isinstance(meta, Mapping) and isinstance(meta.get("parentToolCallId"), str)
        self.cards[call_id] = card
        self.tally.calls += 1
        self._status_line(card, status)
        self._content(card, update.get("content"), preview=True)

    def _tool_call_update(self, update: Mapping[str, Any]) -> None:
        call_id = str(update.get("toolCallId"))
        card = self.cards.get(call_id)
        if card is None:
            return
        meta = update.get("_meta")
        meta = meta if isinstance(meta, Mapping) else {}
        output = meta.get("terminal_output")
        if isinstance(output, Mapping) and isinstance(output.get("data"), str):
            self._terminal(card, output["data"])
        if isinstance(update.get("title"), str):
            card.title = update["title"]
        exit_info = meta.get("terminal_exit")
        if isinstance(exit_info, Mapping):
            self._flush_terminal(card)
        status = update.get("status")
        if isinstance(status, str) and status != card.status:
            card.status = status
            if status == "completed":
                self.tally.completed += 1
            elif status == "failed":
                self.tally.failed += 1
            extra = ""
            if isinstance(exit_info, Mapping) and exit_info.get("exit_code") is not None:
                extra = f" (exit {exit_info['exit_code']})"
            self._status_line(card, status, extra)
        if "content" in update and status in ("completed", "failed"):
            self._content(card, update.get("content"), preview=False)

    def _status_line(self, card: _Card, status: str, extra: str = "") -> None:
        s = self.style
        mark = _STATUS_MARK.get(status, "·")
        color = {"completed": s.green, "failed": s.red, "pending": s.yellow}.get(status, s.cyan)
        word = _STATUS_WORD.get(status, status)
        indent = f"    {s.dim('└')} " if card.nested else "  "
        self._line(f"{indent}{color(mark)} {s.bold(card.title)} {s.dim(f'[{card.kind}, {word}{extra}]')}")

    def _content(self, card: _Card, content: object, *, preview: bool) -> None:
        """Diffs always; other text only once the call is done (and not again for streamed output)."""
        if not isinstance(content, list):
            return
        for block in content:
            if not isinstance(block, Mapping):
                continue
            if block.get("type") == "diff":
                self._diff(block)
            elif block.get("type") == "content" and not preview and not card.shown_output:
                inner = block.get("content")
                if isinstance(inner, Mapping) and isinstance(inner.get("text"), str):
                    self._excerpt(inner["text"])

    def _excerpt(self, text: str) -> None:
        lines = [ln for ln in text.splitlines() if not ln.startswith("```")]
        for ln in lines[:_EXCERPT_LINES]:
            self._line("      " + self.style.dim(ln[:160]))
        if len(lines) > _EXCERPT_LINES:
            self._line("      " + self.style.dim(f"… ({len(lines) - _EXCERPT_LINES} more lines)"))

    def _diff(self, block: Mapping[str, Any]) -> None:
        s = self.style
        old = block.get("oldText")
        new = block.get("newText")
        path = str(block.get("path") or "")
        shown = path[len(self.cwd) + 1 :] if path.startswith(self.cwd + "/") else path
        old_lines = old.splitlines() if isinstance(old, str) else []
        new_lines = new.splitlines() if isinstance(new, str) else []
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

    def _terminal(self, card: _Card, data: str) -> None:
        card.shown_output = True
        text = card.terminal_partial + data.replace("\r\n", "\n")
        *lines, card.terminal_partial = text.split("\n")
        for ln in lines:
            self._line("      " + self.style.dim("│ ") + ln)

    def _flush_terminal(self, card: _Card) -> None:
        if card.terminal_partial:
            self._line("      " + self.style.dim("│ ") + card.terminal_partial)
            card.terminal_partial = ""

    def _plan(self, entries: list[Any]) -> None:
        self._line("  " + self.style.bold("plan:"))
        for entry in entries:
            if isinstance(entry, Mapping):
                mark = _PLAN_MARK.get(str(entry.get("status")), "[?]")
                self._line(
                    f"    {mark} {entry.get('content')} " + self.style.dim(f"({entry.get('priority')})")
                )

    # --- questions and the end --------------------------------------------------------------------

    async def ask(self, tool_call: Mapping[str, Any], options: list[Mapping[str, Any]]) -> str:
        """Show a permission question; return the chosen option id (allow once when not interactive)."""
        s = self.style
        self.tally.asked += 1
        title = tool_call.get("title") or tool_call.get("toolCallId")
        self._line(f"  {s.yellow('?')} {s.bold('permission needed:')} {title}")
        for i, option in enumerate(options, 1):
            self._line(f"      {i}. {option.get('name')}")
        first_allow = next((o for o in options if o.get("kind") == "allow_once"), options[0])
        chosen = str(first_allow.get("optionId"))
        if not self.interactive:
            self._line("      " + s.dim(f"(not a terminal: answering '{first_allow.get('name')}')"))
        else:
            while True:
                reply = (await asyncio.to_thread(input, "      choose [1]: ")).strip()
                if not reply:
                    break
                if reply.isdigit() and 1 <= int(reply) <= len(options):
                    chosen = str(options[int(reply) - 1].get("optionId"))
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
