"""One session's checkpoint journal: which turn began when, and for each call that may change files the
snapshot before and after it and the paths it changed, per root. A JSON Lines file under the checkpoint
directory (`sessions/<session id>.jsonl`), outside every root; the trees it names live in each root's
shadow store (`store.py`).

Records:
    {"kind": "turn", "turn": N, "prompt": "<first 80 chars>", "at": ISO-8601}
    {"kind": "call", "turn": N, "call": id, "tool": name, "before": {root: tree}, "after": {root: tree},
     "paths": {root: [relative path, ...]}}

Must not: run git, or fail a turn for an unreadable line (it is passed over).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

PROMPT_CHARS = 80


@dataclass(slots=True)
class TurnEntry:
    turn: int
    prompt: str
    at: str


@dataclass(slots=True)
class CallEntry:
    turn: int
    call: str
    tool: str
    before: dict[str, str]
    after: dict[str, str]
    paths: dict[str, list[str]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(p) for p in self.paths.values())


class Journal:
    """The journal of one session, read once and appended to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.turns: list[TurnEntry] = []
        self.calls: list[CallEntry] = []
        self._read()

    def _read(self) -> None:
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("checkpoint journal %s unreadable: %s", self.path, exc)
            return
        for line in lines:
            try:
                self._take(json.loads(line))
            except (ValueError, KeyError, TypeError):
                log.debug("checkpoint journal line passed over: %.80s", line)

    def _take(self, raw: dict[str, Any]) -> None:
        if raw["kind"] == "turn":
            self.turns = [t for t in self.turns if t.turn != raw["turn"]]
            self.turns.append(TurnEntry(int(raw["turn"]), str(raw["prompt"]), str(raw["at"])))
        elif raw["kind"] == "call":
            self.calls.append(
                CallEntry(
                    int(raw["turn"]), str(raw["call"]), str(raw["tool"]), dict(raw["before"]),
                    dict(raw["after"]), {k: list(v) for k, v in raw.get("paths", {}).items()},
                )
            )  # fmt: skip

    def _append(self, raw: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(raw, ensure_ascii=False) + "\n")

    def begin_turn(self, turn: int, prompt: str, at: str) -> None:
        entry = TurnEntry(turn, " ".join(prompt.split())[:PROMPT_CHARS], at)
        self.turns = [t for t in self.turns if t.turn != turn]
        self.turns.append(entry)
        self._append({"kind": "turn", "turn": turn, "prompt": entry.prompt, "at": at})

    def add_call(self, entry: CallEntry) -> None:
        self.calls.append(entry)
        self._append(
            {
                "kind": "call", "turn": entry.turn, "call": entry.call, "tool": entry.tool,
                "before": entry.before, "after": entry.after, "paths": entry.paths,
            }
        )  # fmt: skip

    def copy_before(self, target: Path, turn: int) -> None:
        """A fork's journal: the entries of the turns before `turn`."""
        target.parent.mkdir(parents=True, exist_ok=True)
        lines: list[str] = []
        for t in self.turns:
            if t.turn < turn:
                lines.append(json.dumps({"kind": "turn", "turn": t.turn, "prompt": t.prompt, "at": t.at}))
        for c in self.calls:
            if c.turn < turn:
                lines.append(
                    json.dumps(
                        {
                            "kind": "call", "turn": c.turn, "call": c.call, "tool": c.tool,
                            "before": c.before, "after": c.after, "paths": c.paths,
                        }
                    )
                )  # fmt: skip
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.replace(tmp, target)
