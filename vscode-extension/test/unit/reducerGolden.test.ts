/**
 * shared/reducer.ts against the golden fixtures it shares with the Python bridge's fold
 * (acp_bridge/mapping/fold.py, tests/acp_bridge/mapping/test_fold_golden.py): each file of
 * <repo>/tests/fixtures/session_updates/ is a named sequence of ACP `session/update` payloads and the cards
 * (and plan) a client shows after it, in a neutral form. What the fixtures leave out, because the two
 * reducers legitimately differ, is in that folder's README.md.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { SessionUpdate } from "../../shared/acp";
import { applyEvent, cardTerminalIds } from "../../shared/reducer";
import { emptyState, type SessionState, type ToolCard } from "../../shared/state";

/** `../tests/fixtures/session_updates` from the extension's folder. */
const FIXTURES = join(__dirname, "..", "..", "..", "tests", "fixtures", "session_updates");
const FILES = readdirSync(FIXTURES)
  .filter((f) => f.endsWith(".json"))
  .sort();

interface Fixture {
  name: string;
  description: string;
  updates: SessionUpdate[];
  expected: { cards: Record<string, unknown>; plan: unknown[] };
}

function load(file: string): Fixture {
  return JSON.parse(readFileSync(join(FIXTURES, file), "utf8")) as Fixture;
}

/** A card in the fixtures' neutral form (the same keys the Python test builds); its terminal is the first it shows. */
function neutral(state: SessionState, card: ToolCard): unknown {
  const terminal = cardTerminalIds(card)
    .map((id) => state.terminals[id])
    .find((t) => t !== undefined);
  return {
    title: card.title,
    kind: card.kind,
    status: card.status,
    content: card.content,
    locations: card.locations,
    rawInput: card.rawInput ?? null,
    rawOutput: card.rawOutput ?? null,
    parent: card.parentId ?? null,
    terminalOutput: terminal?.output ?? "",
    terminalExit: terminal?.exit ? { exitCode: terminal.exit.exitCode, signal: terminal.exit.signal } : null,
  };
}

function folded(updates: SessionUpdate[]): Fixture["expected"] {
  const state = emptyState("golden");
  applyEvent(state, { type: "sessionStarted", sessionId: "golden", cwd: "/ws" });
  for (const update of updates) applyEvent(state, { type: "update", update });
  const cards = Object.fromEntries(Object.values(state.cards).map((card) => [card.toolCallId, neutral(state, card)]));
  return { cards, plan: state.plan };
}

describe("session reducer: the golden fixtures shared with the Python fold", () => {
  it("finds the fixtures", () => {
    expect(FILES.length).toBeGreaterThanOrEqual(8);
    for (const file of FILES) {
      const fixture = load(file);
      expect(`${fixture.name}.json`).toBe(file);
      expect(Object.keys(fixture).sort()).toEqual(["description", "expected", "name", "updates"]);
      expect(Object.keys(fixture.expected).sort()).toEqual(["cards", "plan"]);
    }
  });

  it.each(FILES)("%s", (file) => {
    const fixture = load(file);
    expect(folded(fixture.updates), fixture.description).toStrictEqual(fixture.expected);
  });
});
