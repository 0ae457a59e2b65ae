/**
 * Issue 22's and 23's client side against the REAL Python bridge (scripted model, test/fixtures/checkpoints.json),
 * through the extension's AgentConnection and store:
 * - checkpoints: the bridge advertises them; each prompt's answer numbers its turn; "Restore to before
 *   turn 1" puts the files back (the file the turn created removed, the one it changed restored); a file
 *   the user changed since is a conflict that writes nothing, and `force` overwrites it; "Revert this
 *   file" puts one file of one card back; `session/load` replays each turn's message numbered;
 * - a background command's card stays live after its turn, and `_acpBridge/killBackground` ends it;
 * - a subagent's (`task`) calls are nested under its card, whose fold starts closed.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { nestedFold } from "../../shared/cardView";
import { turnOf } from "../../shared/checkpoints";
import { autoAnswer, bridgeSpec, connect, type Harness, open, until, withStateDir, workspace } from "./harness";

const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

const NOTES = "alpha\nbeta\ngamma\n";

async function prompt(h: Harness, text: string): Promise<number | undefined> {
  h.store.dispatch({ type: "userPrompt", text });
  const res = await h.conn.prompt(h.sessionId, text);
  const { turn } = turnOf(res._meta);
  h.store.dispatch({ type: "turnEnded", stopReason: res.stopReason, turn });
  assert.equal(res.stopReason, "end_turn", h.stderr());
  return turn;
}

describe("checkpoints, background commands and subagents vs the real bridge", () => {
  it("restores a turn, asks before overwriting the user's change, reverts one file, stops a background command, nests a task's calls", async () => {
    const ws = workspace({ "notes.txt": NOTES });
    const spec = withStateDir(bridgeSpec("checkpoints.json", ws), mkdtempSync(join(tmpdir(), "acp-state-")));
    const h = await connect(spec, ws);
    opened.push(h);
    autoAnswer(h, "allow_once");
    assert.equal(h.conn.hasCheckpoints, true, "the bridge advertises checkpoints");

    assert.equal(await prompt(h, "first"), 1);
    assert.equal(readFileSync(join(ws, "new.txt"), "utf8"), "fresh\n");
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "ALPHA\nbeta\ngamma\n");
    assert.equal(await prompt(h, "second"), 2);
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "ALPHA\nBETA\ngamma\n");

    // One file of one card: notes.txt as it was before call_beta.
    const reverted = await h.conn.revertFile(h.sessionId, "call_beta", join(ws, "notes.txt"));
    assert.equal(reverted.status, "restored", JSON.stringify(reverted));
    assert.deepEqual(reverted.restored.map((f) => f.path), [join(ws, "notes.txt")]);
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "ALPHA\nbeta\ngamma\n");

    // The user's own change since: the rewind writes nothing until told to overwrite.
    writeFileSync(join(ws, "notes.txt"), "mine\n");
    const refused = await h.conn.rewind(h.sessionId, 1);
    assert.equal(refused.status, "conflict", JSON.stringify(refused));
    assert.deepEqual(refused.conflicts.map((c) => c.path), [join(ws, "notes.txt")]);
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "mine\n");
    assert.ok(existsSync(join(ws, "new.txt")));
    const forced = await h.conn.rewind(h.sessionId, 1, true);
    assert.equal(forced.status, "restored", JSON.stringify(forced));
    assert.deepEqual(Object.fromEntries(forced.restored.map((f) => [f.path, f.action])), { [join(ws, "new.txt")]: "removed", [join(ws, "notes.txt")]: "restored" });
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), NOTES);
    assert.ok(!existsSync(join(ws, "new.txt")));

    // A background command: its card stays live after the turn; Stop ends it.
    await prompt(h, "third");
    await until("the server's output", () => (h.store.state.terminals.call_server?.output ?? "").includes("serving"));
    assert.equal(h.store.state.cards.call_server!.status, "in_progress", "live after its turn");
    assert.equal(await h.conn.killBackground(h.sessionId, "call_server"), true);
    await until("the background card to end", () => h.store.state.cards.call_server!.status !== "in_progress");
    assert.equal(await h.conn.killBackground(h.sessionId, "call_server"), false, "already ended: nothing to stop");

    // A subagent: its calls nested under the task card, folded to start with.
    await prompt(h, "fourth");
    const s = h.store.state;
    assert.deepEqual(s.cards.call_task!.children, ["call_task:task:1", "call_task:task:2"]);
    assert.equal(s.cards["call_task:task:1"]!.parentId, "call_task");
    assert.ok(!s.timeline.some((i) => i.id === "call_task:task:1"), "nested, not in the timeline");
    assert.deepEqual(nestedFold(s, s.cards.call_task!), { count: 2, running: 0, failed: 0, startsCollapsed: true, forcedOpen: false });
    await h.close();

    // Replayed: each turn's message carries its number.
    const again = await open(spec);
    opened.push(again);
    again.sessionId = h.sessionId;
    again.store.dispatch({ type: "sessionStarted", sessionId: h.sessionId, cwd: ws, checkpoints: again.conn.hasCheckpoints });
    await again.conn.loadSession(h.sessionId, ws);
    const users = again.store.state.timeline.flatMap((i) => (i.type === "user" ? [[i.text, i.turn]] : []));
    assert.deepEqual(users, [["first", 1], ["second", 2], ["third", 3], ["fourth", 4]]);
  });
});
