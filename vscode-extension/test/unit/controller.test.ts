import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { TerminalManager } from "../../src/acp/terminals";
import { SessionController } from "../../src/controller";
import { PermissionBroker } from "../../src/permissions";
import { pickHistory } from "../../src/pickers";
import { SessionStore } from "../../src/store";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

let agentJs: string;
beforeAll(async () => {
  agentJs = join(mkdtempSync(join(tmpdir(), "acp-fake-")), "fakeAgent.mjs");
  await build({ entryPoints: [join(__dirname, "..", "agent", "fakeAgent.ts")], outfile: agentJs, bundle: true, platform: "node", format: "esm", logLevel: "error", banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
  const settings: Record<string, unknown> = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs] }] };
  vi.spyOn(vscode.workspace, "getConfiguration").mockReturnValue({ get: (k: string, d?: unknown) => settings[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
});

function controller(historyDir?: string) {
  const store = new SessionStore();
  const output = { append: vi.fn(), appendLine: vi.fn(), show: vi.fn() } as unknown as vscode.OutputChannel;
  const permissions = new PermissionBroker(store, undefined);
  const c = new SessionController({ store, permissions, terminals: new TerminalManager(), output, version: "0", historyDir });
  return { c, store, output };
}

/** Runs `fn` with other settings in place, then restores the suite's. */
async function withSettings(settings: Record<string, unknown>, fn: () => Promise<void>): Promise<void> {
  const cfg = vi.mocked(vscode.workspace.getConfiguration);
  const previous = cfg.getMockImplementation();
  cfg.mockReturnValue({ get: (k: string, d?: unknown) => settings[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
  try {
    await fn();
  } finally {
    if (previous) cfg.mockImplementation(previous);
  }
}

describe("session controller", () => {
  it("starts the agent and a session on demand, and runs a prompt to the end of the turn", async () => {
    const { c, store } = controller();
    await c.prompt("hello");
    expect(store.state.connection).toMatchObject({ status: "ready", agentName: "fake" });
    expect(store.state.sessionId).toMatch(/^fake-/);
    expect(store.state.timeline.map((i) => i.type)).toEqual(["user", "agent"]);
    expect(store.state).toMatchObject({ running: false, stopReason: "end_turn" });
    await c.dispose();
  });

  it("cancel ends a running turn `cancelled`", async () => {
    const { c, store } = controller();
    const turn = c.prompt("hang");
    await vi.waitFor(() => expect(store.state.running).toBe(true));
    await c.cancel();
    await turn;
    expect(store.state.stopReason).toBe("cancelled");
    await c.dispose();
  });

  it("a crash shows a clear error with a Restart action, and restart brings the agent back", async () => {
    const { c, store } = controller();
    const shown = vi.mocked(vscode.window.showErrorMessage).mockResolvedValue(undefined as never);
    await c.prompt("crash");
    await vi.waitFor(() => expect(store.state.connection.status).toBe("crashed"));
    expect(store.state.running).toBe(false);
    expect(shown).toHaveBeenCalledWith(expect.stringContaining('ACP agent "fake" stopped'), "Restart", "Show Output");
    await c.restart();
    expect(store.state.connection.status).toBe("ready");
    await c.prompt("again");
    expect(store.state.stopReason).toBe("end_turn");
    await c.dispose();
  });

  it("offers the agent's modes and model, and switches them", async () => {
    const { c, store } = controller();
    await c.ensureSession();
    expect(store.state.modes?.currentModeId).toBe("ask");
    await c.setMode("code");
    expect(store.state.modes?.currentModeId).toBe("code");
    await c.setConfigOption("model", "large");
    expect(store.state.configOptions[0]).toMatchObject({ category: "model", currentValue: "large" });
    await c.dispose();
  });

  it("loads a session from history: session/load replays its messages into the view", async () => {
    const { c, store } = controller();
    await c.prompt("first question");
    const first = store.state.sessionId!;
    await c.newSession();
    expect(store.state.sessionId).not.toBe(first);
    expect(store.state.timeline).toEqual([]);
    expect(store.state.canLoadSessions).toBe(true);
    const { sessions } = await c.connection!.listSessions(c.cwd);
    expect(sessions.map((s) => s.title)).toContain("first question");
    await c.loadSession(first, c.cwd);
    expect(store.state.sessionId).toBe(first);
    expect(store.state.timeline.map((i) => (i.type === "user" || i.type === "agent" ? i.text : i.type))).toEqual(["first question", "ok"]);
    await c.prompt("follow-up");
    expect(store.state.stopReason).toBe("end_turn");
    await c.dispose();
  });

  it("the history picker offers the stored sessions (title, current, folder) and loads the pick", async () => {
    const { c, store } = controller();
    await c.prompt("first question");
    const first = store.state.sessionId!;
    await c.newSession();
    const pick = vi.mocked(vscode.window.showQuickPick).mockImplementation(async (items) => {
      const list = (await items) as unknown as Array<{ label: string; description: string; detail: string }>;
      return list.find((i) => i.label === "first question") as never;
    });
    await pickHistory(c, store);
    const offered = (await pick.mock.calls[0]![0]) as unknown as Array<{ label: string; description: string; detail: string }>;
    expect(offered.map((i) => i.label)).toEqual(["first question", "(empty)"]);
    expect(offered[1]!.description).toBe("current");
    expect(offered.every((i) => i.detail === c.cwd)).toBe(true);
    expect(store.state.sessionId).toBe(first);
    expect(store.state.timeline.map((i) => i.type)).toEqual(["user", "agent"]);
    pick.mockReset();
    await c.dispose();
  });

  it("starts the built-in bridge with --state-dir in the history dir, creating it", async () => {
    // A stand-in for `acp.pythonCommand`: records the arguments it gets, then runs the fake agent.
    const tmp = mkdtempSync(join(tmpdir(), "acp-hist-"));
    const python = join(tmp, "python");
    writeFileSync(python, `#!/bin/sh\nprintf '%s\\n' "$@" > "${tmp}/argv.txt"\nexec "${process.execPath}" "${agentJs}"\n`);
    chmodSync(python, 0o755);
    const historyDir = join(tmp, "globalStorage", "sessions");
    await withSettings({ pythonCommand: python, bridgeArgs: ["--model", "scripted"] }, async () => {
      const { c, store } = controller(historyDir);
      await c.ensureSession();
      expect(existsSync(historyDir)).toBe(true);
      expect(readFileSync(join(tmp, "argv.txt"), "utf8").split("\n").slice(0, -1)).toEqual(["-m", "acp_bridge", "serve", "--model", "scripted", "--state-dir", historyDir]);
      expect(store.state.canLoadSessions).toBe(true);
      await c.dispose();
    });
  });

  it("reports an agent that cannot be started", async () => {
    const { c, store } = controller();
    await withSettings({ agent: "nope", agents: [{ name: "nope", command: "/nonexistent/agent" }] }, () => c.prompt("hi"));
    expect(store.state.connection.status).toBe("crashed");
    expect(store.state.connection.error).toMatch(/cannot start agent "nope"/);
    expect(store.state.timeline.at(-1)).toMatchObject({ type: "notice", severity: "error" });
  });
});
