"""acp_bridge.mapping.fold against the golden fixtures it shares with the VS Code extension's reducer.

Each file of tests/fixtures/session_updates/ is a named sequence of ACP `session/update` payloads and the
cards (and plan) a client shows after it, in a neutral form; the extension's
test/unit/reducerGolden.test.ts folds the same files with shared/reducer.ts. What the fixtures cover, and
what they leave out because the two reducers legitimately differ, is in that folder's README.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acp_bridge.mapping import Card, PlanChange, fold_cards, read_update

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "session_updates"
FILES = sorted(FIXTURES.glob("*.json"))


def neutral(card: Card) -> dict[str, Any]:
    """A card in the fixtures' neutral form (the same keys the extension's test builds)."""
    exited = card.exited
    return {
        "title": card.title,
        "kind": card.kind,
        "status": card.status,
        "content": [dict(block) for block in card.content],
        "locations": [dict(location) for location in card.locations],
        "rawInput": card.raw_input,
        "rawOutput": card.raw_output,
        "parent": card.parent,
        "terminalOutput": card.output,
        "terminalExit": None if exited is None else {"exitCode": exited.exit_code, "signal": exited.signal},
    }


def folded(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """The cards and the plan after `updates`: the fold's cards, and the last plan read (plan replaces)."""
    plan: list[dict[str, Any]] = []
    for update in updates:
        event = read_update(update)
        if isinstance(event, PlanChange):
            plan = [dict(entry) for entry in event.entries]
    cards = fold_cards(updates)
    return {"cards": {call_id: neutral(card) for call_id, card in cards.items()}, "plan": plan}


def test_the_fixtures_are_there() -> None:
    assert len(FILES) >= 8, FIXTURES
    for path in FILES:
        fixture = json.loads(path.read_text(encoding="utf-8"))
        assert fixture["name"] == path.stem
        assert set(fixture) == {"name", "description", "updates", "expected"}
        assert set(fixture["expected"]) == {"cards", "plan"}


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_the_fold_matches_the_golden_cards(path: Path) -> None:
    fixture = json.loads(path.read_text(encoding="utf-8"))
    assert folded(fixture["updates"]) == fixture["expected"], fixture["description"]
