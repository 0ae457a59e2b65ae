/**
 * Code Mode against the REAL Python bridge: a `run_code` program reads and edits a file. Its two
 * sub-calls are cards nested under the program's card, in order; the edit's approval is asked on the
 * nested card (answered there, the file changes); and `session/load` in a new connection rebuilds the
 * same nesting.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { SessionState } from "../../shared/state";
import { autoAnswer, bridgeSpec, connect, type Harness, open, withStateDir, workspace } from "./harness";

const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

function nesting(s: SessionState) {
  return {
    timeline: s.timeline.filter((i) => i.type === "tool").map((i) => i.id),
    children: Object.fromEntries(Object.values(s.cards).map((c) => [c.toolCallId, { parent: c.parentId ?? null, children: c.children ?? [], status: c.status, kind: c.kind }])),
  };
}

describe("Code Mode sub-calls vs the real bridge", () => {
  it("nests the program's calls under its card, asks on the nested card, and load replays the nesting", async () => {
    const ws = workspace({ "notes.txt": "alpha\nbeta\ngamma\n" });
    const spec = withStateDir(bridgeSpec("code.json", ws), mkdtempSync(join(tmpdir(), "acp-state-")));
    const live = await connect(spec, ws);
    opened.push(live);
    const asked: string[] = [];
    live.store.listen((e) => {
      if (e.type === "permissionRequested") asked.push(e.toolCall.toolCallId);
    });
    autoAnswer(live, "allow_once");
    live.store.dispatch({ type: "userPrompt", text: "go" });
    const res = await live.conn.prompt(live.sessionId, "go");
    assert.equal(res.stopReason, "end_turn", live.stderr());
    assert.equal(readFileSync(join(ws, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");

    const s = live.store.state;
    assert.deepEqual(asked, ["prog:code:2"], "the edit inside the program asked, as its own call");
    assert.deepEqual(nesting(s).timeline, ["prog"], "only the program's card is in the timeline");
    assert.deepEqual(s.cards.prog!.children, ["prog:code:1", "prog:code:2"]);
    const edit = s.cards["prog:code:2"]!;
    assert.equal(edit.parentId, "prog");
    assert.equal(edit.status, "completed");
    assert.ok(edit.permission?.outcome === "allow_once", JSON.stringify(edit.permission));
    assert.ok(edit.content.some((c) => c.type === "diff"), "the nested edit shows its diff");
    await live.close();

    const h = await open(spec);
    opened.push(h);
    h.sessionId = live.sessionId;
    h.store.dispatch({ type: "sessionStarted", sessionId: live.sessionId, cwd: ws });
    await h.conn.loadSession(live.sessionId, ws);
    assert.deepEqual(nesting(h.store.state), nesting(s));
  });
});
