/**
 * Sessions against the REAL Python bridge: a second workspace folder passed as `additionalDirectories`
 * is a root of the session (a write there runs in accept-edits mode without an "outside" question);
 * rename (`session/set_title`, which the bridge advertises) shows in the view and in session/list; `session/resume` in a
 * new bridge process continues the conversation; `session/fork` goes on from a conversation under a new
 * id; `session/delete` removes it from session/list; the
 * remembered "always" rules are listed and revoked (`_acpBridge/listRules`, `forgetRules`), per project
 * with `--remember project`.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { AgentSpec } from "../../src/acp/agentSpec";
import { autoAnswer, bridgeCommand, bridgeSpec, connect, type Harness, open, until, withStateDir, workspace } from "./harness";

const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

async function track(h: Promise<Harness>): Promise<Harness> {
  opened.push(await h);
  return opened[opened.length - 1]!;
}

/** The bridge on a script written for this test (it names paths only known now). */
function scriptSpec(script: unknown, cwd: string, extra: string[] = []): AgentSpec {
  const file = join(mkdtempSync(join(tmpdir(), "acp-script-")), "script.json");
  writeFileSync(file, JSON.stringify(script));
  const [command, ...args] = bridgeCommand();
  return { name: "acp-bridge", command: command!, args: [...args, "serve", "--model", `scripted:${file}`, "--state-dir", mkdtempSync(join(tmpdir(), "acp-state-")), ...extra], cwd };
}

describe("sessions vs the real bridge", () => {
  it("a second workspace folder is a root of the session: a write there needs no question in accept-edits mode", async () => {
    const ws = workspace({});
    const second = workspace({});
    const script = { turns: [{ steps: [{ tool_calls: [{ id: "call_write", name: "write", arguments: { file_path: join(second, "note.txt"), content: "hello\n" } }] }, { text: "DONE" }] }] };
    const h = await track(connect(scriptSpec(script, ws, ["--mode", "accept_edits"]), ws, { additionalDirectories: [second] }));
    const asked: string[] = [];
    h.store.listen((e) => {
      if (e.type === "permissionRequested") asked.push(e.toolCall.toolCallId);
    });
    autoAnswer(h, "reject_once");
    assert.equal((await h.conn.prompt(h.sessionId, "write it")).stopReason, "end_turn", h.stderr());
    assert.deepEqual(asked, [], "no question for a write in a root of the session");
    assert.equal(readFileSync(join(second, "note.txt"), "utf8"), "hello\n");
  });

  it("renames, resumes in a new bridge process, and deletes a stored session", async () => {
    const ws = workspace({});
    const script = { turns: [{ steps: [{ text: "First." }] }, { steps: [{ text: "Second turn." }] }] };
    const spec = scriptSpec(script, ws);
    const first = await track(connect(spec, ws));
    assert.equal((await first.conn.prompt(first.sessionId, "hello")).stopReason, "end_turn");
    assert.equal(first.conn.canSetTitle, true, "the bridge advertises session/set_title");
    const renamed = await first.conn.setSessionTitle(first.sessionId, "My renamed session");
    assert.equal(renamed.title, "My renamed session");
    await until("the title update", () => first.store.state.title === "My renamed session");
    await first.close();

    const second = await track(open(spec));
    assert.ok(second.conn.canResumeSession && second.conn.canDeleteSession, JSON.stringify(second.conn.init.agentCapabilities));
    const listed = (await second.conn.listSessions(ws)).sessions.find((s) => s.sessionId === first.sessionId);
    assert.equal(listed?.title, "My renamed session");
    second.sessionId = first.sessionId;
    second.store.dispatch({ type: "sessionStarted", sessionId: first.sessionId, cwd: ws });
    await second.conn.resumeSession(first.sessionId, ws);
    assert.equal(second.store.state.timeline.length, 0, "resume replays nothing");
    assert.equal((await second.conn.prompt(first.sessionId, "again")).stopReason, "end_turn");
    assert.ok(second.store.state.timeline.some((i) => i.type === "agent" && i.text.includes("Second turn.")), "the conversation went on where it was");
    await second.conn.deleteSession(first.sessionId);
    assert.ok(!(await second.conn.listSessions(ws)).sessions.some((s) => s.sessionId === first.sessionId), "deleted: no longer listed");
  });

  it("forks a session: the fork goes on from the conversation under a fork's title, and the original is kept", async () => {
    const ws = workspace({});
    const script = { turns: [{ steps: [{ text: "First." }] }, { steps: [{ text: "In the fork." }] }] };
    const h = await track(connect(scriptSpec(script, ws), ws));
    assert.ok(h.conn.canForkSession, JSON.stringify(h.conn.init.agentCapabilities));
    assert.equal((await h.conn.prompt(h.sessionId, "hello")).stopReason, "end_turn");
    const source = h.sessionId;
    const fork = await h.conn.forkSession(source, ws);
    assert.notEqual(fork.sessionId, source);
    assert.equal(fork.modes?.currentModeId, "default");
    await until("the fork's title", () => h.store.state.title === "Fork: hello");
    assert.equal((await h.conn.prompt(fork.sessionId, "go on")).stopReason, "end_turn", h.stderr());
    assert.ok(h.store.state.timeline.some((i) => i.type === "agent" && i.text.includes("In the fork.")));
    const titles = Object.fromEntries((await h.conn.listSessions(ws)).sessions.map((x) => [x.sessionId, x.title]));
    assert.deepEqual(titles, { [source]: "hello", [fork.sessionId]: "Fork: hello" });
  });

  it("lists an 'always' rule, keeps it for the project with --remember project, and revokes it", async () => {
    const ws = workspace({ "notes.txt": "alpha\nbeta\ngamma\n" });
    const state = mkdtempSync(join(tmpdir(), "acp-state-"));
    const spec: AgentSpec = { ...withStateDir(bridgeSpec("edit.json", ws), state), args: [...withStateDir(bridgeSpec("edit.json", ws), state).args, "--remember", "project"] };
    const h = await track(connect(spec, ws));
    assert.deepEqual((await h.conn.listRules(h.sessionId)).rules, []);
    autoAnswer(h, "allow_always");
    assert.equal((await h.conn.prompt(h.sessionId, "capitalise beta")).stopReason, "end_turn", h.stderr());
    const listing = await h.conn.listRules(h.sessionId);
    assert.equal(listing.rememberedFor, "this project");
    assert.equal(listing.rules.length, 1, JSON.stringify(listing));
    assert.equal(listing.rules[0]!.allow, true);
    assert.equal(listing.rules[0]!.tool, "edit");

    const other = await track(connect(spec, ws));
    assert.equal((await other.conn.listRules(other.sessionId)).rules.length, 1, "a new session of the project has it too");
    const left = await other.conn.forgetRules(other.sessionId, 1);
    assert.deepEqual(left.rules, []);
    assert.ok(existsSync(state));
  });

  it("attachments (a selection, an image, a mention) reach the bridge: a load replays them with the prompt", async () => {
    const ws = workspace({ "app.py": "a = 1\nb = 2\n" });
    const spec = scriptSpec({ turns: [{ steps: [{ text: "Seen." }] }] }, ws);
    const h = await track(connect(spec, ws));
    const caps = h.conn.promptCapabilities;
    assert.ok(caps?.embeddedContext && caps.image, JSON.stringify(caps));
    const selection = { type: "resource" as const, resource: { uri: `file://${ws}/app.py#L1-2`, mimeType: "text/x-python", text: "a = 1\nb = 2\n" } };
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
    const image = { type: "image" as const, mimeType: "image/png", data: png };
    const mention = { type: "resource_link" as const, uri: `file://${ws}/app.py`, name: "app.py" };
    assert.equal((await h.conn.prompt(h.sessionId, "look at these", [], [selection, image, mention])).stopReason, "end_turn", h.stderr());
    await h.close();

    const again = await track(open(spec));
    again.sessionId = h.sessionId;
    again.store.dispatch({ type: "sessionStarted", sessionId: h.sessionId, cwd: ws });
    await again.conn.loadSession(h.sessionId, ws);
    const user = again.store.state.timeline.find((i) => i.type === "user");
    assert.ok(user && user.type === "user", JSON.stringify(again.store.state.timeline));
    // The bridge replays the prompt as the user sent it (the view shows the same chips as it did live):
    // the typed text, then the selection, the image and the mention, each its own block.
    assert.equal(user.text, "look at these");
    assert.deepEqual(user.blocks.map((b) => b.type), ["resource", "image", "resource_link"]);
    const [shownSelection, shownImage, shownMention] = user.blocks;
    assert.ok(shownSelection?.type === "resource" && shownSelection.resource.uri === selection.resource.uri, JSON.stringify(shownSelection));
    assert.ok("text" in shownSelection.resource && shownSelection.resource.text.includes("b = 2"), JSON.stringify(shownSelection));
    assert.ok(shownImage?.type === "image" && shownImage.data === png, JSON.stringify(shownImage));
    assert.ok(shownMention?.type === "resource_link" && shownMention.uri === mention.uri, JSON.stringify(shownMention));
  });
});
