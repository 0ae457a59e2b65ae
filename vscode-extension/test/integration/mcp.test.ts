/**
 * MCP against the REAL Python bridge: a workspace's `.vscode/mcp.json` (VS Code's format) with a stdio
 * MCP server (test/agent/mcpEcho.ts) is read as the extension reads it and passed to session/new; the
 * model calls the server's tool, the call asks first (MCP tools ask by default), and its card shows the
 * server's answer.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readMcpJson } from "../../src/session/mcpConfig";
import { autoAnswer, bridgeSpec, connect, EXT_DIR, type Harness, workspace } from "./harness";

const opened: Harness[] = [];
after(async () => {
  await Promise.all(opened.map((h) => h.close()));
});

describe("MCP servers of .vscode/mcp.json vs the real bridge", () => {
  it("reach the bridge, and a call to one renders as a card with the server's answer", async () => {
    const ws = workspace({});
    mkdirSync(join(ws, ".vscode"));
    const config = { servers: { fixture: { type: "stdio", command: process.execPath, args: [join(EXT_DIR, "out", "agent", "mcpEcho.mjs")] }, needsInput: { command: "x", env: { T: "${input:t}" } } } };
    writeFileSync(join(ws, ".vscode", "mcp.json"), JSON.stringify(config));
    const { servers, skipped } = await readMcpJson(join(ws, ".vscode", "mcp.json"), { workspaceFolder: ws });
    assert.deepEqual(skipped.map((s) => s.name), ["needsInput"]);

    const h = await connect(bridgeSpec("mcp.json", ws), ws, { mcpServers: servers });
    opened.push(h);
    const asked: string[] = [];
    h.store.listen((e) => {
      if (e.type === "permissionRequested") asked.push(e.toolCall.toolCallId);
    });
    autoAnswer(h, "allow_once");
    const res = await h.conn.prompt(h.sessionId, "echo something");
    assert.equal(res.stopReason, "end_turn", h.stderr());
    const card = h.store.state.cards.call_echo;
    assert.ok(card, `an MCP card: ${JSON.stringify(Object.keys(h.store.state.cards))}\n${h.stderr()}`);
    assert.deepEqual(asked, ["call_echo"], "the MCP call asked first");
    assert.equal(card.status, "completed", JSON.stringify(card));
    assert.match(card.title, /fixture/);
    assert.match(JSON.stringify(card.content), /Echo: hi from the test/);
  });
});
