/**
 * Model controls against the REAL Python bridge: config options (mode, model, and the Auto-compact toggle,
 * the extension advertising boolean options) from session/new, replaced by the set_config_option answer; the context gauge from usage_update; a `/compact` shown as one
 * compaction entry (the client advertises `session.compaction`) with the summary; and login: a missing
 * key is `auth_required` with a terminal method whose command line (the agent's own, plus its args)
 * stores a key that the running bridge then uses against a local OpenAI-compatible endpoint.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { toggleOptions } from "../../shared/configOptions";
import type { CompactionView } from "../../shared/state";
import { isAuthRequired, loginInvocation } from "../../src/acp/auth";
import { bridgeCommand, bridgeSpec, connect, type Harness, until, workspace } from "./harness";

const opened: Harness[] = [];
const servers: Array<{ close(): void }> = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
  for (const s of servers) s.close();
});

async function promptTurn(h: Harness, text: string): Promise<string> {
  h.store.dispatch({ type: "userPrompt", text });
  const res = await h.conn.prompt(h.sessionId, text);
  h.store.dispatch({ type: "turnEnded", stopReason: res.stopReason });
  return res.stopReason;
}

/** An OpenAI-compatible endpoint on 127.0.0.1 that accepts one key: GET /v1/models and a streamed answer. */
async function endpoint(key: string): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.headers.authorization !== `Bearer ${key}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "bad key" } }));
      return;
    }
    if (req.method === "GET" && req.url === "/v1/models") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data: [{ id: "local-model", object: "model" }] }));
      return;
    }
    req.resume();
    req.on("end", () => {
      const chunk = (delta: Record<string, unknown>, finish: string | null) => `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model: "local-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(chunk({ role: "assistant", content: "Logged in and answering." }, null) + chunk({}, "stop") + "data: [DONE]\n\n");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

describe("model controls vs the real bridge", () => {
  it("config options come with the session and are replaced by the set_config_option answer", async () => {
    const ws = workspace({});
    const h = await connect(bridgeSpec("compact.json", ws), ws);
    opened.push(h);
    const res = await h.conn.newSession(ws);
    const categories = (res.configOptions ?? []).map((o) => o.category);
    assert.ok(categories.includes("mode") && categories.includes("model"), JSON.stringify(res.configOptions));
    h.sessionId = res.sessionId;
    h.store.dispatch({ type: "sessionStarted", sessionId: res.sessionId, cwd: ws, configOptions: res.configOptions });
    const set = await h.conn.setConfigOption(h.sessionId, "mode", "plan");
    h.store.dispatch({ type: "configOptions", configOptions: set.configOptions });
    assert.equal(h.store.state.configOptions.find((o) => o.id === "mode")?.currentValue, "plan");
    assert.deepEqual(toggleOptions(h.store.state.configOptions).map((o) => [o.id, o.currentValue]), [["auto_compact", true]]);
    const off = await h.conn.setConfigOption(h.sessionId, "auto_compact", false);
    assert.deepEqual(toggleOptions(off.configOptions).map((o) => [o.id, o.currentValue]), [["auto_compact", false]]);
  });

  it("reports usage against the window, and shows /compact as one compaction entry with its summary", async () => {
    const ws = workspace({});
    const h = await connect(bridgeSpec("compact.json", ws), ws);
    opened.push(h);
    assert.equal(await promptTurn(h, "hello there"), "end_turn", h.stderr());
    await until("a usage update", () => h.store.state.usage !== undefined);
    assert.equal(h.store.state.usage!.size, 4000);
    assert.ok(h.store.state.usage!.used > 0);
    assert.equal(await promptTurn(h, "/compact"), "end_turn", h.stderr());
    const entries = h.store.state.timeline.filter((i): i is CompactionView => i.type === "compaction");
    assert.equal(entries.length, 1, JSON.stringify(h.store.state.timeline));
    assert.equal(entries[0]!.status, "completed");
    assert.deepEqual(entries[0]!.summary, [{ type: "text", text: "The user asked for a greeting and got one." }]);
    assert.ok(!h.store.state.timeline.some((i) => i.type === "agent" && /compact/i.test(i.text)), "reported as a compaction, not as agent text");
  });

  it("a missing key is auth_required; the terminal method's command stores a key the running bridge then uses", async () => {
    const ws = workspace({});
    const url = await endpoint("good-key");
    const config = mkdtempSync(join(tmpdir(), "acp-config-"));
    const [command, ...args] = bridgeCommand();
    const spec = {
      name: "acp-bridge",
      command: command!,
      args: [...args, "serve", "--no-history", "--model", "openai:local-model", "--base-url", url],
      env: { XDG_CONFIG_HOME: config, ACP_BRIDGE_API_KEY: "", DEEPSEEK_API_KEY: "", OPENAI_API_KEY: "" },
      cwd: ws,
    };
    const h = await connect(spec, ws);
    opened.push(h);
    const err = await h.conn.prompt(h.sessionId, "hello").then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(isAuthRequired(err), `auth_required: ${JSON.stringify(err)}`);
    const [method] = h.conn.terminalAuthMethods;
    assert.ok(method, `a terminal auth method: ${JSON.stringify(h.conn.init.authMethods)}`);
    // What the "Log in" button runs in a terminal; the key typed there comes on stdin here.
    const inv = loginInvocation(spec, method);
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(inv.command, inv.args, { cwd: inv.cwd, env: { ...process.env, ...inv.env }, stdio: ["pipe", "ignore", "ignore"] });
      child.stdin.end("good-key\n");
      child.once("exit", resolve);
    });
    assert.equal(code, 0, "the login checked the key against the endpoint and stored it");
    assert.equal(await promptTurn(h, "hello again"), "end_turn", h.stderr());
    assert.ok(h.store.state.timeline.some((i) => i.type === "agent" && i.text.includes("Logged in and answering.")));
  });
});
