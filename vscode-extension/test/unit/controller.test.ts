import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { TerminalManager } from "../../src/acp/terminals";
import { type ControllerDeps, type KeyValueStore, SessionController } from "../../src/session/controller";
import { SessionArchive } from "../../src/session/sessionArchive";
import { PermissionBroker } from "../../src/review/permissions";
import { QuestionBroker } from "../../src/review/questions";
import { pickHistory } from "../../src/session/pickers";
import { SessionStore } from "../../src/session/store";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

let agentJs: string;
beforeAll(async () => {
  agentJs = join(mkdtempSync(join(tmpdir(), "acp-fake-")), "fakeAgent.mjs");
  await build({ entryPoints: [join(__dirname, "..", "agent", "fakeAgent.ts")], outfile: agentJs, bundle: true, platform: "node", format: "esm", logLevel: "error", banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
  const settings: Record<string, unknown> = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs] }] };
  vi.spyOn(vscode.workspace, "getConfiguration").mockReturnValue({ get: (k: string, d?: unknown) => settings[k] ?? d } as unknown as vscode.WorkspaceConfiguration);
});

function controller(historyDir?: string, extra: Partial<ControllerDeps> = {}) {
  const store = new SessionStore();
  const output = { append: vi.fn(), appendLine: vi.fn(), show: vi.fn() } as unknown as vscode.OutputChannel;
  const permissions = new PermissionBroker(store, undefined);
  const c = new SessionController({ store, permissions, questions: new QuestionBroker(store), terminals: new TerminalManager(), output, version: "0", historyDir, ...extra });
  return { c, store, output };
}

/** The workspace state a window keeps (VS Code's Memento), shared by the "windows" of a test. */
function memory(): KeyValueStore {
  const values = new Map<string, unknown>();
  return { get: <T>(k: string) => values.get(k) as T | undefined, update: async (k, v) => void values.set(k, v) };
}

/** The fake agent keeping its sessions in a file, so a new process (a reopened window) still has them. */
function persistentFake(env: Record<string, string> = {}): Record<string, unknown> {
  const state = join(mkdtempSync(join(tmpdir(), "acp-fake-state-")), "sessions.json");
  return { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs], env: { FAKE_AGENT_STATE: state, ...env } }] };
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
    // The turn starts once the fake agent (a new Node process) has started: over vi.waitFor's default
    // second on a busy machine.
    await vi.waitFor(() => expect(store.state.running).toBe(true), { timeout: 10_000 });
    await c.cancel();
    await turn;
    expect(store.state.stopReason).toBe("cancelled");
    await c.dispose();
  });

  it("sending while the agent works sends at once (Send now) with the client's id, and shows it once", async () => {
    const { c, store } = controller();
    const warned = vi.mocked(vscode.window.showWarningMessage);
    warned.mockClear();
    const turn = c.prompt("hang");
    await vi.waitFor(() => expect(store.state.running).toBe(true));
    await c.prompt("meta");
    expect(warned).not.toHaveBeenCalled();
    const said = store.state.timeline.flatMap((i) => (i.type === "agent" ? [i.text] : []));
    expect(JSON.parse(said[0]!)).toEqual({ acpBridge: { messageId: expect.stringMatching(/^steer-/) } });
    // This agent does not say where it took the message: shown once, when it was answered.
    expect(store.state.timeline.filter((i) => i.type === "user").map((i) => i.type === "user" && [i.text, i.steered])).toEqual([
      ["hang", undefined],
      ["meta", true],
    ]);
    expect(store.state.running).toBe(true); // the turn's own prompt still runs
    await c.cancel();
    await turn;
    expect(store.state).toMatchObject({ running: false, stopReason: "cancelled", steers: [] });
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

  it("opening the view three times reopens the last conversation; no empty session is created", async () => {
    await withSettings(persistentFake(), async () => {
      const mem = memory();
      const first = controller(undefined, { memory: mem });
      await first.c.openLastOrNew(); // a new user: a new session
      await first.c.prompt("first question");
      const id = first.store.state.sessionId;
      await first.c.dispose();
      for (let reopen = 1; reopen <= 3; reopen++) {
        const w = controller(undefined, { memory: mem });
        expect(await w.c.openLastOrNew()).toBe(id);
        expect(w.store.state.timeline.map((i) => (i.type === "user" || i.type === "agent" ? i.text : i.type))).toEqual(["first question", "ok"]);
        expect(w.store.state.title).toBe("first question");
        const { sessions } = await w.c.connection!.listSessions(w.c.cwd);
        expect(sessions.map((s) => s.sessionId)).toEqual([id]);
        await w.c.dispose();
      }
    });
  });

  it("a session without a prompt is not reopened: the next window starts its own", async () => {
    await withSettings(persistentFake(), async () => {
      const mem = memory();
      const a = controller(undefined, { memory: mem });
      const empty = await a.c.openLastOrNew();
      await a.c.dispose();
      const b = controller(undefined, { memory: mem });
      expect(await b.c.openLastOrNew()).not.toBe(empty);
      await b.c.dispose();
    });
  });

  it("resumes with session/resume when the agent offers it, showing the view the client kept", async () => {
    await withSettings(persistentFake({ FAKE_AGENT_RESUME: "1" }), async () => {
      const mem = memory();
      const archive = new SessionArchive(mkdtempSync(join(tmpdir(), "acp-views-")));
      const a = controller(undefined, { memory: mem, archive });
      await a.c.prompt("remember me");
      const id = a.store.state.sessionId;
      await archive.flushed();
      await a.c.dispose();
      const b = controller(undefined, { memory: mem, archive });
      expect(b.c.connection).toBeUndefined();
      expect(await b.c.openLastOrNew()).toBe(id);
      expect(b.c.connection!.canResumeSession && !b.c.connection!.canLoadSession).toBe(true);
      expect(b.store.state.timeline.map((i) => (i.type === "user" || i.type === "agent" ? i.text : i.type))).toEqual(["remember me", "ok"]);
      await b.c.prompt("and then");
      expect(b.store.state.stopReason).toBe("end_turn");
      await b.c.dispose();
    });
  });

  it("tells the agent about an undone edit with the next prompt, after the user's text", async () => {
    const { c } = controller();
    await c.ensureSession();
    const sent = vi.spyOn(c.connection!, "prompt");
    c.noteForAgent("(The user undid your edit.)");
    await c.prompt("next");
    await c.prompt("after");
    expect(sent.mock.calls.map((call) => call.slice(1))).toEqual([["next", ["(The user undid your edit.)"]], ["after", []]]);
    await c.dispose();
  });

  it("reports an agent that cannot be started", async () => {
    const { c, store } = controller();
    await withSettings({ agent: "nope", agents: [{ name: "nope", command: "/nonexistent/agent" }] }, () => c.prompt("hi"));
    expect(store.state.connection.status).toBe("crashed");
    expect(store.state.connection.error).toMatch(/cannot start agent "nope"/);
    expect(store.state.timeline.at(-1)).toMatchObject({ type: "notice", severity: "error" });
  });

  it("an agent that wants a login: the view offers its terminal method, which runs the agent's own command with its args; then prompts work", async () => {
    const marker = join(mkdtempSync(join(tmpdir(), "acp-login-")), "logged-in");
    const settings = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs], env: { FAKE_AGENT_LOGIN: marker } }] };
    await withSettings(settings, async () => {
      const ran: string[][] = [];
      // The terminal, as a plain process: the same command line VS Code's terminal would run.
      const runInTerminal = vi.fn(async (inv: { command: string; args: string[]; env: Record<string, string> }) => {
        ran.push([inv.command, ...inv.args]);
        const child = spawn(inv.command, inv.args, { env: { ...process.env, ...inv.env }, stdio: "ignore" });
        return new Promise<number | undefined>((r) => child.once("exit", (code) => r(code ?? undefined)));
      });
      const warn = vi.mocked(vscode.window.showWarningMessage).mockResolvedValue(undefined as never);
      const { c, store } = controller(undefined, { runInTerminal });
      await c.prompt("hello");
      expect(store.state.auth).toMatchObject({ message: expect.stringContaining("log in first"), methods: [{ id: "fake-login", name: "Log in to the fake agent" }] });
      expect(store.state.timeline.some((i) => i.type === "notice")).toBe(false);
      expect(warn).toHaveBeenCalledWith(expect.stringContaining("needs you to log in"), "Log in");
      await c.login("fake-login");
      expect(ran).toEqual([[process.execPath, agentJs, "--login"]]);
      expect(existsSync(marker)).toBe(true);
      expect(store.state.auth).toBeUndefined();
      await c.prompt("hello again");
      expect(store.state.stopReason).toBe("end_turn");
      warn.mockClear();
      await c.dispose();
    });
  });

  it("a failed login keeps the login banner and says why", async () => {
    const settings = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs], env: { FAKE_AGENT_LOGIN: join(tmpdir(), "acp-never-created", "x") } }] };
    await withSettings(settings, async () => {
      const warn = vi.mocked(vscode.window.showWarningMessage).mockResolvedValue(undefined as never);
      const { c, store } = controller(undefined, { runInTerminal: async () => 1 });
      await c.prompt("hello");
      await c.login();
      expect(store.state.auth).toMatchObject({ running: false, methods: [{ id: "fake-login" }] });
      expect(warn).toHaveBeenLastCalledWith("The login did not complete (exit status 1).");
      warn.mockClear();
      await c.dispose();
    });
  });

  it("shows the agent's notices as toasts at their severity", async () => {
    const warn = vi.mocked(vscode.window.showWarningMessage).mockResolvedValue(undefined as never);
    const { c } = controller();
    await c.prompt("notice");
    expect(warn).toHaveBeenCalledWith("ACP agent: Heads up: the context is nearly full");
    warn.mockClear();
    await c.dispose();
  });

  it("opens sessions with the workspace's .vscode/mcp.json and the setting's MCP servers (saying which it left out) and the other folders as extra roots", async () => {
    const ws = mkdtempSync(join(tmpdir(), "acp-ws-"));
    mkdirSync(join(ws, ".vscode"));
    writeFileSync(
      join(ws, ".vscode", "mcp.json"),
      JSON.stringify({ servers: { files: { type: "stdio", command: "node", args: ["${workspaceFolder}/s.js"], env: { A: "1" } }, gh: { command: "gh", env: { T: "${input:token}" } }, web: { type: "http", url: "http://127.0.0.1:9/mcp" } } }),
    );
    const settings = { agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs] }], mcpServers: { extra: { command: "extra-server" } } };
    const workspace = vscode.workspace as unknown as { setWorkspaceFolders(f: unknown): void };
    const second = mkdtempSync(join(tmpdir(), "acp-ws2-"));
    workspace.setWorkspaceFolders([
      { uri: vscode.Uri.file(ws), name: "ws", index: 0 },
      { uri: vscode.Uri.file(second), name: "ws2", index: 1 },
    ]);
    try {
      await withSettings(settings, async () => {
        const { c, store } = controller();
        await c.prompt("setup");
        const agent = store.state.timeline.find((i) => i.type === "agent");
        const got = JSON.parse(agent && agent.type === "agent" ? agent.text : "null") as { mcpServers: unknown[]; additionalDirectories: unknown };
        expect(got.additionalDirectories).toEqual([second]);
        expect(got.mcpServers).toEqual([
          { name: "files", command: "node", args: [`${ws}/s.js`], env: [{ name: "A", value: "1" }] },
          { name: "extra", command: "extra-server", args: [], env: [] },
        ]);
        const notes = store.state.timeline.flatMap((i) => (i.type === "notice" ? [i.text] : []));
        expect(notes).toEqual([expect.stringMatching(/^MCP server "gh" .* not started: .*\$\{input:token\}/), expect.stringMatching(/^MCP server "web" was not passed on: fake does not take http MCP servers/)]);
        await c.dispose();
      });
    } finally {
      workspace.setWorkspaceFolders(undefined);
    }
  });

  it("deletes a stored session (the open one: a new session takes its place); renaming needs the bridge's method", async () => {
    await withSettings(persistentFake(), async () => {
      const mem = memory();
      const archive = new SessionArchive(mkdtempSync(join(tmpdir(), "acp-views-")));
      const { c, store } = controller(undefined, { memory: mem, archive });
      await c.prompt("to be deleted");
      const id = store.state.sessionId!;
      await archive.recordAnswer(id, "call", { label: "Allowed once" });
      await c.deleteSession(id);
      expect(store.state.sessionId).not.toBe(id);
      expect((await c.connection!.listSessions(c.cwd)).sessions.map((s) => s.sessionId)).not.toContain(id);
      expect(await archive.answers(id)).toEqual({});
      expect(mem.get("acp.lastSession")).toBeUndefined();
      const info = vi.mocked(vscode.window.showInformationMessage).mockResolvedValue(undefined as never);
      await c.renameSession("New name");
      expect(info).toHaveBeenCalledWith('ACP agent "fake" cannot rename sessions.');
      info.mockClear();
      await c.dispose();
    });
  });

  it("forks the open session: the view moves to the new session with the conversation as it was; not while a turn runs", async () => {
    await withSettings(persistentFake(), async () => {
      const mem = memory();
      const { c, store } = controller(undefined, { memory: mem });
      await c.prompt("first");
      const source = store.state.sessionId!;
      const shown = store.state.timeline.map((i) => i.type);
      expect(shown).toEqual(["user", "agent"]);
      await c.forkSession();
      const fork = store.state.sessionId!;
      expect(fork).not.toBe(source);
      expect(store.state.timeline.map((i) => i.type)).toEqual(shown);
      expect(mem.get<{ sessionId: string }>("acp.lastSession")?.sessionId).toBe(fork);
      const listed = (await c.connection!.listSessions(c.cwd)).sessions.map((x) => x.sessionId);
      expect(listed).toEqual(expect.arrayContaining([source, fork]));
      await c.prompt("setup"); // the fork was opened with the workspace's roots and MCP servers, as a new session is
      const agent = store.state.timeline.filter((i) => i.type === "agent").at(-1);
      expect(JSON.parse(agent && agent.type === "agent" ? agent.text : "null")).toEqual({ mcpServers: [], additionalDirectories: null });

      const warn = vi.mocked(vscode.window.showWarningMessage).mockResolvedValue(undefined as never);
      const turn = c.prompt("hang");
      await vi.waitFor(() => expect(store.state.running).toBe(true));
      await c.forkSession();
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/still working/));
      expect(store.state.sessionId).toBe(fork);
      await c.cancel();
      await turn;
      warn.mockClear();
      await c.dispose();
    });
  });

  it("checkpoints: the answer numbers the turn; a restore asks before overwriting the user's changes, sends force only then, and says what it did", async () => {
    await withSettings({ agent: "fake", agents: [{ name: "fake", command: process.execPath, args: [agentJs], env: { FAKE_AGENT_CHECKPOINTS: "1" } }] }, async () => {
      const { c, store } = controller();
      await c.prompt("first");
      await c.prompt("second");
      expect(store.state.checkpoints).toBe(true);
      expect(store.state.timeline.flatMap((i) => (i.type === "user" ? [[i.text, i.turn]] : []))).toEqual([["first", 1], ["second", 2]]);

      const modal = vi.mocked(vscode.window.showWarningMessage);
      modal.mockResolvedValueOnce(undefined as never); // the user keeps their changes
      await c.rewind(1);
      expect(modal).toHaveBeenLastCalledWith(expect.stringMatching(/Overwrite my changes\?/), expect.objectContaining({ modal: true, detail: expect.stringContaining("mine.txt") }), "Overwrite");
      expect(store.state.timeline.at(-1)).toMatchObject({ type: "restore", turn: 1, status: "conflict", restored: [], conflicts: [{ path: "/ws/mine.txt" }] });

      modal.mockResolvedValueOnce("Overwrite" as never);
      await c.rewind(1);
      expect(store.state.timeline.at(-1)).toMatchObject({ type: "restore", turn: 1, status: "restored", restored: [{ path: "/ws/a.txt", action: "restored" }, { path: "/ws/new.txt", action: "removed" }] });

      await c.rewind(7); // a turn the agent does not know: its refusal is said, nothing else happens
      expect(store.state.timeline.at(-1)).toMatchObject({ type: "restore", turn: 7, status: "failed", error: expect.stringMatching(/unknown turn 7/) });

      store.dispatch({ type: "update", update: { sessionUpdate: "tool_call", toolCallId: "edit-1", title: "Edit a.txt", kind: "edit", status: "completed", content: [{ type: "diff", path: "/ws/a.txt", oldText: "a", newText: "b" }] } });
      await c.revertFile("edit-1", "/ws/a.txt");
      expect(store.state.cards["edit-1"]!.reverted).toEqual({ "/ws/a.txt": { state: "undone" } });
      expect(store.state.timeline.at(-1)).toMatchObject({ type: "restore", toolCallId: "edit-1", path: "/ws/a.txt", status: "restored" });
      modal.mockReset();
      await c.dispose();
    });
  });

  it("without the agent's checkpoints nothing is numbered and a restore says the agent keeps none", async () => {
    const { c, store } = controller();
    await c.prompt("first");
    expect(store.state.checkpoints).toBe(false);
    expect(store.state.timeline.find((i) => i.type === "user")).not.toHaveProperty("turn");
    await c.rewind(1);
    expect(store.state.timeline.at(-1)).toMatchObject({ type: "restore", status: "failed", error: 'ACP agent "fake" keeps no checkpoints' });
    await c.dispose();
  });

  it("Stop on a background command's card asks the agent to kill it; a refusal is said on the card", async () => {
    const { c, store } = controller();
    await c.prompt("first");
    const bash = (id: string) => ({ type: "update" as const, update: { sessionUpdate: "tool_call" as const, toolCallId: id, title: "npm run dev", kind: "execute" as const, status: "in_progress" as const, rawInput: { command: "npm run dev", run_in_background: true } } });
    store.dispatch(bash("bash-1"));
    store.dispatch(bash("bash-2"));
    await c.stopBackground("bash-1");
    expect(store.state.cards["bash-1"]!.stop).toEqual({ state: "stopping" }); // until the agent's update ends the card
    await c.stopBackground("bash-2");
    expect(store.state.cards["bash-2"]!.stop).toEqual({ state: "failed", reason: expect.stringMatching(/^Could not stop it: .*no background command bash-2/) });
    await c.dispose();
  });

  it("sends what the user attached after the text, as the agent takes it, and shows it on the prompt", async () => {
    const { c, store } = controller();
    const selection = { type: "resource" as const, resource: { uri: "file:///ws/a.py#L1-2", mimeType: "text/x-python", text: "x = 1" } };
    const image = { type: "image" as const, mimeType: "image/png", data: "AAAA", uri: "file:///ws/p.png" };
    const link = { type: "resource_link" as const, uri: "file:///ws/b.py", name: "b.py" };
    await c.prompt("blocks", [selection, image, link]);
    const agent = store.state.timeline.find((i) => i.type === "agent");
    // The fake agent takes neither embedded context nor images (ACP's baseline: text and links).
    expect(JSON.parse(agent && agent.type === "agent" ? agent.text : "null")).toEqual([
      { type: "text", text: "file:///ws/a.py#L1-2:\n```\nx = 1\n```" },
      { type: "resource_link", uri: "file:///ws/b.py" },
    ]);
    const user = store.state.timeline.find((i) => i.type === "user");
    expect(user && user.type === "user" && user.blocks.map((b) => b.type)).toEqual(["text", "resource_link"]);
    expect(store.state.timeline.some((i) => i.type === "notice" && /Not sent: p\.png/.test(i.text))).toBe(true);
    await c.dispose();
  });
});
