/**
 * The user's MCP servers as ACP `mcpServers`: VS Code's `.vscode/mcp.json` format (with comments and
 * trailing commas) and the setting's map, variables replaced, `${input:…}` servers skipped with a
 * reason, the workspace file winning over the setting for one name.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { mergeServers, readMcpJson, serverMap, stripJsonc, toAcpServers } from "../../src/session/mcpConfig";

const vars = { workspaceFolder: "/ws", userHome: "/home/u", env: { TOKEN: "t0k" } };

describe("MCP servers from VS Code's mcp.json format", () => {
  it("turns stdio, http and sse servers into ACP entries, with variables replaced", () => {
    const map = serverMap({
      servers: {
        files: { type: "stdio", command: "node", args: ["${workspaceFolder}/server.js", "${userHome}/x"], env: { TOKEN: "${env:TOKEN}", N: 3 } },
        bare: { command: "uvx", args: ["tool"] },
        web: { type: "http", url: "https://example.invalid/mcp", headers: { Authorization: "Bearer ${env:TOKEN}" } },
        old: { type: "sse", url: "http://127.0.0.1:9/sse" },
      },
    });
    expect(toAcpServers(map, "mcp.json", vars)).toEqual({
      servers: [
        { name: "files", command: "node", args: ["/ws/server.js", "/home/u/x"], env: [{ name: "TOKEN", value: "t0k" }, { name: "N", value: "3" }] },
        { name: "bare", command: "uvx", args: ["tool"], env: [] },
        { type: "http", name: "web", url: "https://example.invalid/mcp", headers: [{ name: "Authorization", value: "Bearer t0k" }] },
        { type: "sse", name: "old", url: "http://127.0.0.1:9/sse", headers: [] },
      ],
      skipped: [],
    });
  });

  it("skips a server that needs ${input:…}, and entries that are not servers, saying why", () => {
    const { servers, skipped } = toAcpServers(
      { gh: { command: "gh-mcp", env: { GITHUB_TOKEN: "${input:github_token}" } }, broken: { type: "stdio" }, odd: { type: "websocket", url: "ws://x" }, junk: 3 },
      "mcp.json",
      vars,
    );
    expect(servers).toEqual([]);
    expect(skipped.map((s) => s.name)).toEqual(["gh", "broken", "odd", "junk"]);
    expect(skipped[0]!.reason).toMatch(/\$\{input:github_token\}/);
  });

  it("reads a .vscode/mcp.json with comments and trailing commas; a missing file has no servers", async () => {
    const ws = mkdtempSync(join(tmpdir(), "acp-mcp-"));
    mkdirSync(join(ws, ".vscode"));
    const path = join(ws, ".vscode", "mcp.json");
    writeFileSync(path, '{\n  // my servers\n  "servers": {\n    "echo": { "command": "node", "args": ["a // not a comment", "b"], }, /* done */\n  },\n  "inputs": [],\n}\n');
    expect((await readMcpJson(path, vars)).servers).toEqual([{ name: "echo", command: "node", args: ["a // not a comment", "b"], env: [] }]);
    expect(await readMcpJson(join(ws, "none.json"), vars)).toEqual({ servers: [], skipped: [] });
    writeFileSync(path, "{ nope");
    expect((await readMcpJson(path, vars)).skipped[0]!.reason).toMatch(/not valid JSON/);
  });

  it("uses a name once: the workspace file wins over the setting", () => {
    const file = toAcpServers({ a: { command: "from-file" } }, "mcp.json", vars);
    const setting = toAcpServers(serverMap({ a: { command: "from-setting" }, b: { command: "b" } }), "setting", vars);
    expect(mergeServers([file, setting]).servers.map((s) => ("command" in s ? s.command : s.url))).toEqual(["from-file", "b"]);
  });

  it("keeps strings intact when removing comments", () => {
    expect(JSON.parse(stripJsonc('{"u": "http://x/*y*/", "e": "a\\"//b"}'))).toEqual({ u: "http://x/*y*/", e: 'a"//b' });
  });
});
