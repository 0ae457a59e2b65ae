/**
 * The client module against a throwaway agent (test/agent/fakeAgent.ts) for what the bridge does not
 * exercise: ACP `terminal/*` run by the client, and an agent that crashes mid-turn.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { connect, EXT_DIR, type Harness, workspace } from "./harness";

const open: Harness[] = [];
after(async () => {
  await Promise.all(open.map((h) => h.close()));
});

async function start(): Promise<Harness> {
  const ws = workspace({});
  const h = await connect({ name: "fake", command: process.execPath, args: [join(EXT_DIR, "out", "agent", "fakeAgent.mjs")], cwd: ws }, ws);
  open.push(h);
  return h;
}

describe("client module vs a fake agent", () => {
  it("runs terminal/create as a real process, with output, exit status and release", async () => {
    const h = await start();
    const res = await h.conn.prompt(h.sessionId, "terminal printf 'one\\ntwo\\n'; exit 4");
    assert.equal(res.stopReason, "end_turn");
    const card = h.store.state.cards.term!;
    assert.equal(card.status, "failed");
    const terminalId = card.content.find((c) => c.type === "terminal")!;
    assert.ok(terminalId.type === "terminal");
    const term = h.store.state.terminals[terminalId.terminalId]!;
    assert.equal(term.output, "one\ntwo\n");
    assert.deepEqual(term.exit, { exitCode: 4, signal: null });
    assert.deepEqual(card.rawOutput, { output: "one\ntwo\n", exitCode: 4 });
  });

  it("reports a crash: the pending prompt fails and the exit is seen", async () => {
    const h = await start();
    await assert.rejects(h.conn.prompt(h.sessionId, "crash"));
    const exit = await h.conn.exited;
    assert.equal(exit.code, 3);
  });

  it("cancel resolves a hanging turn", async () => {
    const h = await start();
    const turn = h.conn.prompt(h.sessionId, "hang");
    await new Promise((r) => setTimeout(r, 100));
    await h.conn.cancel(h.sessionId);
    assert.equal((await turn).stopReason, "cancelled");
  });
});
