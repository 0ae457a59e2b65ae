/**
 * The extension's ACP client module against the REAL Python bridge on scripted models: approving an
 * edit changes the file, rejecting leaves it unchanged (with the user's reason reaching the agent), an
 * approval's diff is numbered where it is in the file and rebuilds the whole file, cancel ends the turn
 * `cancelled`, and a read → edit → bash turn produces the cards the Agent view shows.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { ToolCallContent, ToolCallLocation } from "../../shared/acp";
import { blockAnchors, formatHunkHeader, hunks } from "../../shared/diff";
import { editBlocksFor, editFile } from "../../shared/fileEdits";
import { autoAnswer, bridgeSpec, connect, type Harness, until, workspace } from "./harness";

const NOTES = "alpha\nbeta\ngamma\n";
const open: Harness[] = [];
after(async () => {
  await Promise.all(open.map((h) => h.close()));
});

async function start(script: string): Promise<{ h: Harness; ws: string }> {
  const ws = workspace({ "notes.txt": NOTES });
  const h = await connect(bridgeSpec(script, ws), ws);
  open.push(h);
  return { h, ws };
}

describe("client module vs the real bridge", () => {
  it("an approved edit changes the file and completes its card with a diff", async () => {
    const { h, ws } = await start("edit.json");
    autoAnswer(h, "allow_once");
    const res = await h.conn.prompt(h.sessionId, "capitalise beta");
    assert.equal(res.stopReason, "end_turn");
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");
    const card = h.store.state.cards.call_edit!;
    assert.equal(card.status, "completed");
    assert.equal(card.kind, "edit");
    assert.match(card.title, /notes\.txt/);
    assert.ok(!card.title.includes(ws), `title is relative to cwd: ${card.title}`);
    const diff = card.content.find((c) => c.type === "diff");
    assert.ok(diff && diff.type === "diff", "the card carries a diff block");
    assert.equal(diff.path, join(ws, "notes.txt"));
    assert.equal(diff.newText.includes("BETA"), true);
    assert.ok(card.locations.some((l) => l.path === join(ws, "notes.txt") && l.line === 2), JSON.stringify(card.locations));
    const kinds = card.permission!.options.map((o) => o.kind).sort();
    assert.deepEqual(kinds, ["allow_always", "allow_once", "reject_always", "reject_once"]);
    assert.equal(card.permission!.outcome !== undefined && card.permission!.outcome !== "cancelled", true);
  });

  it("a rejected edit leaves the file unchanged and fails its card", async () => {
    const { h, ws } = await start("edit.json");
    autoAnswer(h, "reject_once");
    const res = await h.conn.prompt(h.sessionId, "capitalise beta");
    assert.equal(res.stopReason, "end_turn");
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), NOTES);
    assert.equal(h.store.state.cards.call_edit!.status, "failed");
    assert.deepEqual(h.writes, []);
  });

  it("a rejection's reason reaches the agent (`_meta.feedback`), and the card keeps the proposed diff", async () => {
    const { h, ws } = await start("edit.json");
    h.store.listen((event) => {
      if (event.type === "permissionRequested") setTimeout(() => h.permissions.answer(event.requestId, "reject_once", "keep it lowercase"), 0);
    });
    await h.conn.prompt(h.sessionId, "capitalise beta");
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), NOTES);
    const card = h.store.state.cards.call_edit!;
    assert.equal(card.status, "failed");
    assert.match(JSON.stringify(card.content), /keep it lowercase/, "the agent heard the reason");
    assert.ok(card.proposed?.some((c) => c.type === "diff" && c.newText.includes("BETA")), JSON.stringify(card.proposed));
  });

  it("the approval of an edit at line 13 carries what numbers its diff from line 10, and rebuilds the whole file", async () => {
    const app = Array.from({ length: 20 }, (_, i) => `line ${i + 1}\n`).join("");
    const ws = workspace({ "app.txt": app });
    const h = await connect(bridgeSpec("edit13.json", ws), ws);
    open.push(h);
    let asked: { content: ToolCallContent[]; locations: ToolCallLocation[] } | undefined;
    h.store.listen((event) => {
      if (event.type !== "permissionRequested") return;
      const card = h.store.state.cards[event.toolCall.toolCallId]!;
      asked = structuredClone({ content: card.content, locations: card.locations });
      setTimeout(() => h.permissions.answer(event.requestId, "allow_once"), 0);
    });
    await h.conn.prompt(h.sessionId, "go");
    assert.ok(asked, "asked");
    const diff = asked.content.find((c) => c.type === "diff");
    assert.ok(diff && diff.type === "diff");
    const [anchor] = blockAnchors([diff], asked.locations);
    assert.equal(formatHunkHeader(hunks(diff.oldText, diff.newText, 3, anchor)[0]!), "@@ -10,7 +10,8 @@");
    const proposed = editFile(app, editBlocksFor(asked.content, asked.locations, diff.path), "apply");
    assert.deepEqual(proposed, { ok: true, text: readFileSync(join(ws, "app.txt"), "utf8") }, "the review's whole file is what the edit wrote");
  });

  it("cancel while an approval is open answers `cancelled` and ends the turn cancelled", async () => {
    const { h } = await start("sleep.json");
    const turn = h.conn.prompt(h.sessionId, "go");
    await until("the approval question", () => h.permissions.openCount === 1);
    await h.conn.cancel(h.sessionId);
    h.permissions.cancelAll();
    const res = await turn;
    assert.equal(res.stopReason, "cancelled");
    assert.equal(h.store.state.cards.call_sleep!.permission!.outcome, "cancelled");
    assert.notEqual(h.store.state.cards.call_sleep!.status, "completed");
  });

  it("cancel while a command runs stops it and ends the turn cancelled", async () => {
    const { h } = await start("sleep.json");
    autoAnswer(h, "allow_once");
    const turn = h.conn.prompt(h.sessionId, "go");
    await until("the command's first output", () => Object.values(h.store.state.terminals).some((t) => t.output.includes("started")));
    const t = Date.now();
    await h.conn.cancel(h.sessionId);
    const res = await turn;
    assert.equal(res.stopReason, "cancelled");
    assert.ok(Date.now() - t < 5000, `cancel took ${Date.now() - t} ms`);
    const card = h.store.state.cards.call_sleep!;
    assert.notEqual(card.status, "completed");
    const out = Object.values(h.store.state.terminals).map((x) => x.output).join("");
    assert.ok(!out.includes("finished"), "the command did not run to the end");
  });

  it("a read → edit → bash turn yields plan, read, diff and terminal cards", async () => {
    const { h, ws } = await start("scenario.json");
    autoAnswer(h, "allow_once");
    const res = await h.conn.prompt(h.sessionId, "capitalise beta and check");
    assert.equal(res.stopReason, "end_turn", h.stderr());
    const s = h.store.state;
    assert.deepEqual(s.plan.map((p) => p.content), ["Read notes.txt", "Capitalise beta", "Check the result"]);
    assert.equal(s.cards.call_read!.kind, "read");
    assert.equal(s.cards.call_read!.status, "completed");
    assert.ok(JSON.stringify(s.cards.call_read!.content).includes("alpha"), "the read card shows the file");
    assert.equal(s.cards.call_edit!.status, "completed");
    const bash = s.cards.call_bash!;
    assert.equal(bash.kind, "execute");
    assert.equal(bash.status, "completed");
    const term = s.terminals[bash.metaTerminalId ?? ""];
    assert.ok(term, `bash used the _meta terminal convention: ${JSON.stringify(bash)}`);
    assert.ok(term.output.includes("\u001b[32mchecked"), JSON.stringify(term.output));
    assert.match(term.output, /2:BETA/);
    assert.deepEqual(term.exit, { exitCode: 0, signal: null });
    const texts = s.timeline.flatMap((i) => (i.type === "agent" ? [i.text] : []));
    assert.ok(texts.join(" ").includes("All done"), texts.join("|"));
    assert.ok(s.timeline.some((i) => i.type === "thought"));
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");
  });
});
