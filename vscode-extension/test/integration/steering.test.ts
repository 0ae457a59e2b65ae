/**
 * Steering against the REAL Python bridge ("Send now"): a message sent while the agent works goes at once
 * (`session/prompt` with the client's `_meta.acpBridge.messageId`), waits in the view until the bridge
 * echoes it where the turn took it (after the running call's card, before the answer it led to), shows
 * there once, and both prompts end the turn together; `session/load` shows it in the same place; and a
 * command sent while the agent works runs once the turn answered, shown where it started. The turn is held
 * by a `bash` call reading a FIFO the test writes to.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, writeFileSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import type { AgentSpec } from "../../src/acp/agentSpec";
import { waitingSteers } from "../../shared/steering";
import { bridgeCommand, connect, type Harness, open, until, workspace } from "./harness";

const opened: Harness[] = [];
const fds: number[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
  for (const fd of fds) closeSync(fd);
});

/** The bridge on a script written for this test (it names a FIFO only known now), keeping its logs in `state`. */
function scriptSpec(script: unknown, cwd: string, state: string, extra: string[] = []): AgentSpec {
  const file = join(mkdtempSync(join(tmpdir(), "acp-script-")), "script.json");
  writeFileSync(file, JSON.stringify(script));
  const [command, ...args] = bridgeCommand();
  return { name: "acp-bridge", command: command!, args: [...args, "serve", "--model", `scripted:${file}`, "--state-dir", state, "--allow-tool", "bash", ...extra], cwd };
}

/** A FIFO `head -n 1` reads from: the call runs until `release`. Held open here, so its open never blocks. */
function gate(dir: string): { command: string; release: () => void } {
  const path = join(dir, "gate");
  execFileSync("mkfifo", [path]);
  const fd = openSync(path, constants.O_RDWR | constants.O_NONBLOCK);
  fds.push(fd);
  return { command: `head -n 1 ${path}`, release: () => void writeSync(fd, "go\n") };
}

/** What the controller does for "Send now" (src/session/controller.ts `steer`), on the harness's store. */
async function sendNow(h: Harness, messageId: string, text: string): Promise<string> {
  h.store.dispatch({ type: "steerSent", messageId, text });
  const res = await h.conn.prompt(h.sessionId, text, [], [], messageId);
  h.store.dispatch({ type: "steerAnswered", messageId, stopReason: res.stopReason });
  return res.stopReason;
}

async function prompt(h: Harness, text: string): Promise<string> {
  h.store.dispatch({ type: "userPrompt", text });
  const res = await h.conn.prompt(h.sessionId, text);
  h.store.dispatch({ type: "turnEnded", stopReason: res.stopReason });
  return res.stopReason;
}

function shape(h: Harness): string[] {
  return h.store.state.timeline.map((i) => (i.type === "tool" ? `tool ${i.id}` : i.type === "user" || i.type === "agent" ? `${i.type} ${i.text}${i.type === "user" && i.steered ? " (steered)" : ""}` : i.type));
}

describe("steering vs the real bridge", () => {
  it("a message sent while a call runs lands after its card, once, and both prompts end the turn", async () => {
    const ws = workspace({});
    const state = mkdtempSync(join(tmpdir(), "acp-state-"));
    const { command, release } = gate(ws);
    const script = { turns: [{ steps: [{ tool_calls: [{ id: "call_gate", name: "bash", arguments: { command } }] }, { text: "Tests too, then." }] }] };
    const spec = scriptSpec(script, ws, state);
    const h = await connect(spec, ws);
    opened.push(h);
    const first = prompt(h, "fix the bug");
    await until("the call to run", () => h.store.state.cards.call_gate?.status === "in_progress");
    const steered = sendNow(h, "m-1", "and run the tests");
    await h.conn.listRules(h.sessionId); // answered after the bridge read the message: it waits in its turn
    assert.deepEqual(waitingSteers(h.store.state).map((m) => m.text), ["and run the tests"]);
    assert.equal(h.store.state.running, true);
    release();
    assert.equal(await first, "end_turn", h.stderr());
    assert.equal(await steered, "end_turn");
    assert.deepEqual(shape(h), ["user fix the bug", "tool call_gate", "user and run the tests (steered)", "agent Tests too, then."]);
    assert.deepEqual(waitingSteers(h.store.state), []);
    assert.equal(h.store.state.running, false);

    // Reloaded in a new bridge process: the message is where it landed.
    const again = await open(spec);
    opened.push(again);
    again.sessionId = h.sessionId;
    again.store.dispatch({ type: "sessionStarted", sessionId: h.sessionId, cwd: ws });
    await again.conn.loadSession(h.sessionId, ws);
    assert.deepEqual(shape(again), ["user fix the bug", "tool call_gate", "user and run the tests", "agent Tests too, then."]);
  });

  it("a command sent while the agent works runs when the turn ends, shown where it starts", async () => {
    const ws = workspace({});
    const { command, release } = gate(ws);
    const script = { turns: [{ steps: [{ tool_calls: [{ id: "call_gate", name: "bash", arguments: { command } }] }, { text: "Done." }] }] };
    const h = await connect(scriptSpec(script, ws, mkdtempSync(join(tmpdir(), "acp-state-"))), ws);
    opened.push(h);
    const first = prompt(h, "one");
    await until("the call to run", () => h.store.state.cards.call_gate?.status === "in_progress");
    const command2 = sendNow(h, "m-2", "/title Renamed");
    await h.conn.listRules(h.sessionId);
    release();
    assert.equal(await first, "end_turn", h.stderr());
    assert.equal(await command2, "end_turn");
    await until("the title", () => h.store.state.title === "Renamed");
    assert.deepEqual(shape(h).slice(0, 3), ["user one", "tool call_gate", "agent Done."]);
    assert.equal(shape(h)[3], "user /title Renamed (steered)");
    assert.equal(h.store.state.running, false);
  });
});
