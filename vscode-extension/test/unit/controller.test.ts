import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { TerminalManager } from "../../src/acp/terminals";
import { SessionController } from "../../src/controller";
import { PermissionBroker } from "../../src/permissions";
import { SessionStore } from "../../src/store";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

let agentJs: string;
beforeAll(async () => {
  agentJs = join(mkdtempSync(join(tmpdir(), "acp-fake-")), "fakeAgent.mjs");
  await build({ entryPoints: [join(__dirname, "..", "agent", "fakeAgent.ts")], outfile: agentJs, bundle: true, platform: "node", format: "esm", logLevel: "error", banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
  const settings: Record<string, unknown> = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs] }] };
  vi.spyOn(vscode.workspace, "getConfiguration").mockReturnValue({ get: (k: string, d?: unknown) => settings[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
});

function controller() {
  const store = new SessionStore();
  const output = { append: vi.fn(), appendLine: vi.fn(), show: vi.fn() } as unknown as vscode.OutputChannel;
  const permissions = new PermissionBroker(store, undefined);
  const c = new SessionController({ store, permissions, terminals: new TerminalManager(), output, version: "0" });
  return { c, store, output };
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

  it("reports an agent that cannot be started", async () => {
    const { c, store } = controller();
    const settings: Record<string, unknown> = { agent: "nope", agents: [{ name: "nope", command: "/nonexistent/agent" }] };
    const cfg = vi.mocked(vscode.workspace.getConfiguration);
    const previous = cfg.getMockImplementation();
    cfg.mockReturnValue({ get: (k: string, d?: unknown) => settings[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
    await c.prompt("hi");
    if (previous) cfg.mockImplementation(previous);
    expect(store.state.connection.status).toBe("crashed");
    expect(store.state.connection.error).toMatch(/cannot start agent "nope"/);
    expect(store.state.timeline.at(-1)).toMatchObject({ type: "notice", severity: "error" });
  });
});
