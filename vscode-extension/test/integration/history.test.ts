/**
 * Session history against the REAL Python bridge started with --state-dir (as the extension starts the
 * built-in bridge): a turn runs live, then a NEW connection finds it with session/list and session/load
 * replays it. The reducer state after the load must show the same conversation and cards (titles, kinds,
 * statuses, diffs, locations, terminals) as the reducer state of the live run.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { cardTerminalIds } from "../../shared/reducer";
import type { SessionState, ToolCard } from "../../shared/state";
import { autoAnswer, bridgeSpec, connect, type Harness, open, until, withStateDir, workspace } from "./harness";

const NOTES = "alpha\nbeta\ngamma\n";
const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

async function track(h: Promise<Harness>): Promise<Harness> {
  opened.push(await h);
  return opened[opened.length - 1]!;
}

/** A prompt as the controller sends it: the user item, the turn, its end. */
async function promptTurn(h: Harness, text: string): Promise<string> {
  h.store.dispatch({ type: "userPrompt", text });
  const res = await h.conn.prompt(h.sessionId, text);
  h.store.dispatch({ type: "turnEnded", stopReason: res.stopReason });
  return res.stopReason;
}

/** A new connection (a new agent process) that lists the stored sessions and loads `sessionId`. */
async function reload(spec: Parameters<typeof open>[0], cwd: string, sessionId: string): Promise<{ h: Harness; listed: { cwd: string; title?: string | null } | undefined }> {
  const h = await track(open(spec));
  assert.ok(h.conn.canListSessions && h.conn.canLoadSession, `with --state-dir the bridge offers history: ${JSON.stringify(h.conn.init.agentCapabilities)}`);
  const { sessions } = await h.conn.listSessions(cwd);
  const everywhere = await h.conn.listSessions();
  assert.ok(everywhere.sessions.some((s) => s.sessionId === sessionId), "listed without a cwd filter too");
  h.sessionId = sessionId;
  h.store.dispatch({ type: "sessionStarted", sessionId, cwd });
  await h.conn.loadSession(sessionId, cwd);
  return { h, listed: sessions.find((s) => s.sessionId === sessionId) };
}

type TerminalShape = { command?: string; output?: string; exit?: unknown };

/** What a card shows, minus the client-only permission question (a replay asks nothing). */
function cardShape(s: SessionState, c: ToolCard, withOutput: boolean) {
  return {
    title: c.title,
    kind: c.kind,
    status: c.status,
    locations: c.locations,
    rawInput: c.rawInput,
    diffs: c.content.filter((b) => b.type === "diff"),
    terminals: cardTerminalIds(c).map((id): TerminalShape => {
      const t = s.terminals[id];
      return withOutput ? { command: t?.command, output: t?.output, exit: t?.exit } : { command: t?.command, exit: t?.exit };
    }),
  };
}

/** The conversation and cards as the Agent view shows them. */
function shown(s: SessionState, withOutput = true) {
  return {
    title: s.title,
    plan: s.plan,
    timeline: s.timeline.map((i) => (i.type === "tool" ? `tool ${i.id}` : i.type === "notice" ? `notice ${i.text}` : i.type === "compaction" ? `compaction ${i.compactionId} ${i.status}` : i.type === "question" ? `question ${i.message}` : i.type === "restore" ? `restore ${i.status}` : `${i.type} ${i.text}`)),
    cards: Object.fromEntries(Object.values(s.cards).map((c) => [c.toolCallId, cardShape(s, c, withOutput)])),
  };
}

/** Every text block a replayed card shows, the live card showed too (the live one may have more: the
 * approval question's toolCall can carry extra text, such as the command to approve). */
function assertTextSubset(live: SessionState, loaded: SessionState): void {
  const texts = (c: ToolCard | undefined) => (c?.content ?? []).flatMap((b) => (b.type === "content" && b.content.type === "text" ? [b.content.text] : []));
  for (const card of Object.values(loaded.cards)) {
    const liveTexts = texts(live.cards[card.toolCallId]);
    for (const t of texts(card)) assert.ok(liveTexts.includes(t), `${card.toolCallId}: replayed text not shown live: ${JSON.stringify(t)}`);
  }
}

describe("session history (--state-dir) vs the real bridge", () => {
  it("a session that edited a file is listed in a new connection and loads back into the same cards", async () => {
    const ws = workspace({ "notes.txt": NOTES });
    const spec = withStateDir(bridgeSpec("scenario.json", ws), mkdtempSync(join(tmpdir(), "acp-state-")));
    const live = await track(connect(spec, ws));
    autoAnswer(live, "allow_once");
    const prompt = "capitalise beta and check";
    assert.equal(await promptTurn(live, prompt), "end_turn", live.stderr());
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");
    await live.close();

    const { h, listed } = await reload(spec, ws, live.sessionId);
    assert.ok(listed, "session/list (this cwd) has the session");
    assert.equal(listed.cwd, ws);
    if (listed.title != null) assert.ok(prompt.startsWith(listed.title.replace(/…$/, "")), `title from the first prompt: ${listed.title}`);

    const before = live.store.state;
    const after = h.store.state;
    assert.deepEqual(shown(after), shown(before));
    assertTextSubset(before, after);
    // The comparison is not vacuous: the edit card came back completed with its diff, the bash card with its terminal.
    const edit = after.cards.call_edit!;
    assert.equal(edit.status, "completed");
    assert.equal(edit.kind, "edit");
    const diff = edit.content.find((b) => b.type === "diff");
    assert.ok(diff && diff.type === "diff" && diff.oldText?.includes("beta") && diff.newText.includes("BETA"), JSON.stringify(edit.content));
    const bash = after.terminals[after.cards.call_bash?.metaTerminalId ?? ""];
    assert.ok(bash && bash.output.includes("\u001b[32mchecked") && bash.exit?.exitCode === 0, JSON.stringify(bash));
    assert.equal(Object.keys(after.cards).length, Object.keys(before.cards).length);
    assert.equal(after.plan.length, 3);

    // The loaded session goes on: the next prompt runs in it (the scripted model's second turn).
    autoAnswer(h, "allow_once");
    const next = h.conn.prompt(h.sessionId, "run something slow");
    await until("the loaded session's next turn", () => h.store.state.cards.call_slow !== undefined);
    await h.conn.cancel(h.sessionId);
    assert.equal((await next).stopReason, "cancelled");
  });

  it("a command cancelled while running loads back as the same failed card with the same exit", async () => {
    const ws = workspace({ "notes.txt": NOTES });
    const spec = withStateDir(bridgeSpec("sleep.json", ws), mkdtempSync(join(tmpdir(), "acp-state-")));
    const live = await track(connect(spec, ws));
    autoAnswer(live, "allow_once");
    live.store.dispatch({ type: "userPrompt", text: "go" });
    const turn = live.conn.prompt(live.sessionId, "go");
    await until("the command's first output", () => Object.values(live.store.state.terminals).some((t) => t.output.includes("started")));
    await live.conn.cancel(live.sessionId);
    live.store.dispatch({ type: "turnCancelled" });
    const res = await turn;
    live.store.dispatch({ type: "turnEnded", stopReason: res.stopReason });
    assert.equal(res.stopReason, "cancelled");
    const card = live.store.state.cards.call_sleep!;
    assert.equal(card.status, "failed", "the agent's final update wins over the local cancel");
    assert.ok(live.store.state.terminals[card.metaTerminalId ?? ""]?.exit, "the terminal was closed with an exit");
    await live.close();

    const { h } = await reload(spec, ws, live.sessionId);
    // Output is not compared: the live card streamed it, the log keeps the tool's result.
    assert.deepEqual(shown(h.store.state, false), shown(live.store.state, false));
    assertTextSubset(live.store.state, h.store.state);
  });
});
