/**
 * Checkpoints in the view model (the bridge's contract for `_acpBridge/rewind` and `revertFile`): the
 * capability read from `initialize`, turn numbers from a prompt's answer and from a replayed message's
 * first chunk, when restore and revert are offered, the answers read leniently, and what a restore did
 * as one timeline entry (and on the card, for one file).
 */
import { describe, expect, it } from "vitest";
import { advertisesCheckpoints, canRestoreTurn, canRevertFile, readRestoreResult, restoreText } from "../../shared/checkpoints";
import { applyEvent } from "../../shared/reducer";
import type { RestoreView, SessionState } from "../../shared/state";
import { stateAfter, toolCall, update } from "./helpers";

const withCheckpoints = (s: SessionState) => {
  applyEvent(s, { type: "sessionStarted", sessionId: "s2", cwd: "/ws", checkpoints: true });
  return s;
};
const userChunk = (text: string, meta?: Record<string, unknown>) => update({ sessionUpdate: "user_message_chunk", content: { type: "text", text }, ...(meta ? { _meta: meta } : {}) });

describe("checkpoints", () => {
  it("reads the capability from initialize's agentCapabilities._meta.acpBridge.checkpoints", () => {
    expect(advertisesCheckpoints({ _meta: { acpBridge: { checkpoints: true } } })).toBe(true);
    expect(advertisesCheckpoints({ _meta: { acpBridge: { checkpoints: "yes" } } })).toBe(false);
    expect(advertisesCheckpoints({ loadSession: true })).toBe(false);
    expect(advertisesCheckpoints(undefined)).toBe(false);
  });

  it("numbers the prompt's message from its answer, and a steered message's answer numbers nothing new", () => {
    const s = withCheckpoints(stateAfter());
    applyEvent(s, { type: "userPrompt", text: "first" });
    expect(canRestoreTurn(s, s.timeline[0]!)).toBe(false); // not numbered yet
    const change = applyEvent(s, { type: "turnEnded", stopReason: "end_turn", turn: 1 });
    expect(change.items).toEqual([s.timeline[0]!.id]);
    applyEvent(s, { type: "userPrompt", text: "second" });
    applyEvent(s, { type: "turnEnded", stopReason: "end_turn" }); // an agent that does not number it
    expect(s.timeline.map((i) => (i.type === "user" ? i.turn : "-"))).toEqual([1, undefined]);
    expect(canRestoreTurn(s, s.timeline[0]!)).toBe(true);
    expect(canRestoreTurn(s, s.timeline[1]!)).toBe(false);
  });

  it("numbers a replayed message from its first chunk's _meta.acpBridge.turn (session/load)", () => {
    const s = withCheckpoints(stateAfter());
    applyEvent(s, userChunk("fix the ", { acpBridge: { turn: 3 } }));
    applyEvent(s, userChunk("bug"));
    applyEvent(s, update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "done" } }));
    applyEvent(s, userChunk("and now", { acpBridge: { turn: "4" } })); // not a number: not numbered
    expect(s.timeline.map((i) => (i.type === "user" ? [i.text, i.turn] : i.type))).toEqual([["fix the bug", 3], "agent", ["and now", undefined]]);
  });

  it("offers nothing without the agent's checkpoints; revert only on a finished card, once", () => {
    const plain = stateAfter({ type: "userPrompt", text: "x" }, { type: "turnEnded", stopReason: "end_turn", turn: 1 }, toolCall("e", { status: "completed" }));
    expect(canRestoreTurn(plain, plain.timeline[0]!)).toBe(false);
    expect(canRevertFile(plain, plain.cards.e!, "/ws/a")).toBe(false);
    const s = withCheckpoints(stateAfter());
    applyEvent(s, toolCall("run", { status: "in_progress" }));
    expect(canRevertFile(s, s.cards.run!, "/ws/a")).toBe(false);
    applyEvent(s, toolCall("run", { status: "completed" }));
    expect(canRevertFile(s, s.cards.run!, "/ws/a")).toBe(true);
    applyEvent(s, { type: "restored", toolCallId: "run", path: "/ws/a", status: "restored", restored: [{ path: "/ws/a", action: "restored" }], conflicts: [] });
    expect(canRevertFile(s, s.cards.run!, "/ws/a")).toBe(false);
    expect(canRevertFile(s, s.cards.run!, "/ws/b")).toBe(true);
  });

  it("a declined conflict marks the file not reverted, with why", () => {
    const s = withCheckpoints(stateAfter());
    applyEvent(s, toolCall("run", { status: "completed" }));
    applyEvent(s, { type: "restored", toolCallId: "run", path: "/ws/a", status: "conflict", restored: [], conflicts: [{ path: "/ws/a", reason: "changed since" }] });
    expect(s.cards.run!.reverted).toEqual({ "/ws/a": { state: "failed", reason: "The file was changed since: it was left as it is." } });
    expect(canRevertFile(s, s.cards.run!, "/ws/a")).toBe(true); // may be tried again
  });

  it("reads an answer leniently and says what it did", () => {
    const result = readRestoreResult({ status: "restored", restored: [{ path: "/ws/a", action: "removed" }, { action: "restored" }, { path: "/ws/b", action: "recreated" }], conflicts: "none" });
    expect(result).toEqual({ status: "restored", restored: [{ path: "/ws/a", action: "removed" }, { path: "/ws/b", action: "recreated" }], conflicts: [] });
    expect(readRestoreResult(null)).toEqual({ status: "nothing", restored: [], conflicts: [] });
    const item = (v: Partial<RestoreView>): RestoreView => ({ type: "restore", id: "i1", status: "restored", restored: [], conflicts: [], ...v });
    expect(restoreText(item({ turn: 2, ...result }))).toEqual({
      title: "Restored to before turn 2: 2 files",
      lines: [
        { path: "/ws/a", text: "removed (the turn created it)" },
        { path: "/ws/b", text: "recreated (it had been deleted)" },
      ],
    });
    expect(restoreText(item({ turn: 2, status: "nothing" })).title).toBe("Nothing to restore: no file changed since turn 2 began");
    expect(restoreText(item({ turn: 2, status: "conflict", conflicts: [{ path: "/ws/c", reason: "edited by you" }] }))).toEqual({ title: "Not restored to before turn 2: changed since by someone other than the agent", lines: [{ path: "/ws/c", text: "edited by you" }] });
    expect(restoreText(item({ status: "failed", error: "no such call" })).title).toBe("Could not restore this file: no such call");
  });

  it("a kept view (session/resume) keeps the numbers; a new session forgets the capability it does not have", () => {
    const s = withCheckpoints(stateAfter());
    applyEvent(s, { type: "userPrompt", text: "first" });
    applyEvent(s, { type: "turnEnded", stopReason: "end_turn", turn: 1 });
    const kept = structuredClone(s);
    applyEvent(s, { type: "sessionStarted", sessionId: "s3", cwd: "/ws", checkpoints: true });
    applyEvent(s, { type: "viewRestored", view: kept });
    expect(s.timeline[0]).toMatchObject({ type: "user", turn: 1 });
    applyEvent(s, { type: "sessionStarted", sessionId: "s4", cwd: "/ws" });
    expect(s.checkpoints).toBe(false);
  });
});
