/**
 * The client module against a throwaway agent (test/agent/fakeAgent.ts) for what the bridge does not
 * exercise: ACP `terminal/*` run by the client, an agent that crashes mid-turn, renaming through the
 * extension method with an agent that does not advertise `session/set_title` (and through it with one
 * that does), and a boolean config option set with `type: "boolean"`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { connect, EXT_DIR, type Harness, workspace } from "./harness";

const open: Harness[] = [];
after(async () => {
  await Promise.all(open.map((h) => h.close()));
});

async function start(env: Record<string, string> = {}): Promise<Harness> {
  const ws = workspace({});
  const h = await connect({ name: "fake", command: process.execPath, args: [join(EXT_DIR, "out", "agent", "fakeAgent.mjs")], cwd: ws, env }, ws);
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

  it("renames with session/set_title when the agent advertises title, else with _acpBridge/setSessionTitle", async () => {
    const older = await start({ FAKE_AGENT_TITLE: "alias" });
    assert.equal(older.conn.canSetTitle, false);
    assert.deepEqual(await older.conn.setSessionTitle(older.sessionId, "Named"), { title: "alias: Named" });
    const current = await start({ FAKE_AGENT_TITLE: "acp" });
    assert.equal(current.conn.canSetTitle, true);
    assert.deepEqual(await current.conn.setSessionTitle(current.sessionId, "Named"), { title: "acp: Named" });
  });

  it("advertises boolean config options and sets one with type boolean", async () => {
    const h = await start();
    const res = await h.conn.newSession(workspace({}));
    assert.deepEqual(res.configOptions?.find((o) => o.id === "auto"), { id: "auto", name: "Auto", type: "boolean", currentValue: true });
    const set = await h.conn.setConfigOption(res.sessionId, "auto", false);
    assert.equal(set.configOptions.find((o) => o.id === "auto")?.currentValue, false);
  });

  it("cancel resolves a hanging turn", async () => {
    const h = await start();
    const turn = h.conn.prompt(h.sessionId, "hang");
    await new Promise((r) => setTimeout(r, 100));
    await h.conn.cancel(h.sessionId);
    assert.equal((await turn).stopReason, "cancelled");
  });
});
