/**
 * SessionController: owns the agent process and the current session, and turns user actions (from the
 * webview, commands and notifications) into ACP calls and SessionEvents. It is the only place that
 * knows which connection and which session are current; a crash drops both and offers a restart.
 */
import { mkdir } from "node:fs/promises";
import * as os from "node:os";
import * as vscode from "vscode";
import type { SessionNotification } from "../shared/acp";
import { AgentConnection } from "./acp/connection";
import type { TerminalManager } from "./acp/terminals";
import { resolveAgent, selectedAgentName, traceEnabled } from "./config";
import { readTextFile, writeTextFile } from "./fsHandlers";
import type { PermissionBroker } from "./permissions";
import type { SessionStore } from "./store";

export interface ControllerDeps {
  store: SessionStore;
  permissions: PermissionBroker;
  terminals: TerminalManager;
  output: vscode.OutputChannel;
  version: string;
  /** Where the built-in bridge keeps session logs (`--state-dir`); created on start. None: no history. */
  historyDir?: string;
}

export class SessionController implements vscode.Disposable {
  private conn: AgentConnection | undefined;
  private starting: Promise<AgentConnection> | undefined;
  private session: { id: string; conn: AgentConnection } | undefined;
  private sessionStarting: Promise<string> | undefined;
  private turn: Promise<unknown> | undefined;

  constructor(private readonly d: ControllerDeps) {}

  get cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
  }

  get connection(): AgentConnection | undefined {
    return this.conn;
  }

  /** The running agent, started on first use. */
  async connect(): Promise<AgentConnection> {
    if (this.conn) return this.conn;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<AgentConnection> {
    const { store, output, historyDir } = this.d;
    const spec = resolveAgent(selectedAgentName(), vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, historyDir);
    store.dispatch({ type: "connection", status: "starting", agentName: spec.name });
    output.appendLine(`[acp] starting ${spec.name}: ${spec.command} ${spec.args.join(" ")}`);
    try {
      if (historyDir && spec.args.includes(historyDir)) await mkdir(historyDir, { recursive: true });
      const conn = await AgentConnection.start(
        spec,
        {
          onUpdate: (n, t0) => this.onUpdate(n, t0),
          requestPermission: (p, signal) => this.d.permissions.request(p, signal),
          readTextFile,
          writeTextFile,
          terminal: this.d.terminals,
        },
        {
          clientName: "acp-bridge-vscode",
          clientVersion: this.d.version,
          onStderr: (text) => output.append(text),
          trace: traceEnabled() ? (dir, text) => output.append(text.replace(/^(?=.)/gm, `${dir} `)) : undefined,
          onExit: (exit, expected) => {
            output.appendLine(`[acp] ${spec.name} exited (code ${exit.code}, signal ${exit.signal})`);
            if (!expected && this.conn === conn) this.crashed(spec.name, `exited with code ${exit.code ?? exit.signal}`);
          },
        },
      );
      this.conn = conn;
      const info = conn.init.agentInfo;
      output.appendLine(`[acp] connected to ${info ? `${info.name} ${info.version}` : spec.name}`);
      store.dispatch({ type: "connection", status: "ready", agentName: spec.name });
      return conn;
    } catch (err) {
      this.crashed(spec.name, err instanceof Error ? err.message : String(err));
      throw err;
    }
  }

  private crashed(agentName: string, message: string): void {
    this.conn = undefined;
    this.session = undefined;
    this.d.permissions.cancelAll();
    this.d.store.dispatch({ type: "connection", status: "crashed", agentName, error: message });
    void vscode.window.showErrorMessage(`ACP agent "${agentName}" stopped: ${message.split("\n")[0]}`, "Restart", "Show Output").then((pick) => {
      if (pick === "Restart") void this.restart();
      if (pick === "Show Output") this.d.output.show(true);
    });
  }

  private onUpdate(n: SessionNotification, t0: number): void {
    if (n.sessionId === this.d.store.state.sessionId) this.d.store.dispatch({ type: "update", update: n.update }, t0);
  }

  /** The current session's id, creating a session (cwd = the workspace folder) if there is none. */
  async ensureSession(): Promise<string> {
    const conn = await this.connect();
    if (this.session?.conn === conn) return this.session.id;
    this.sessionStarting ??= this.startSession(conn).finally(() => (this.sessionStarting = undefined));
    return this.sessionStarting;
  }

  private async startSession(conn: AgentConnection): Promise<string> {
    const res = await conn.newSession(this.cwd);
    this.session = { id: res.sessionId, conn };
    this.d.store.dispatch({
      type: "sessionStarted",
      sessionId: res.sessionId,
      cwd: this.cwd,
      modes: res.modes,
      configOptions: res.configOptions,
      canLoadSessions: conn.canLoadSession && conn.canListSessions,
    });
    return res.sessionId;
  }

  async prompt(text: string): Promise<void> {
    if (!text.trim()) return;
    if (this.d.store.state.running) {
      void vscode.window.showWarningMessage("The agent is still working on the last prompt. Cancel it first.");
      return;
    }
    let conn: AgentConnection;
    let sessionId: string;
    try {
      sessionId = await this.ensureSession();
      conn = this.session!.conn;
    } catch (err) {
      this.d.store.dispatch({ type: "error", message: `Could not start a session: ${errorText(err)}` });
      return;
    }
    this.d.store.dispatch({ type: "userPrompt", text });
    const turn = conn.prompt(sessionId, text);
    this.turn = turn.catch(() => undefined);
    try {
      const res = await turn;
      this.d.store.dispatch({ type: "turnEnded", stopReason: res.stopReason });
    } catch (err) {
      if (this.session?.conn === conn) this.d.store.dispatch({ type: "error", message: errorText(err) });
      this.d.store.dispatch({ type: "turnEnded", stopReason: "error" });
    }
  }

  /** Cancel the running turn: notify the agent, answer open approvals `cancelled`, mark cards. */
  async cancel(): Promise<void> {
    const s = this.session;
    if (!s || !this.d.store.state.running) return;
    await s.conn.cancel(s.id).catch(() => undefined);
    this.d.permissions.cancelAll();
    this.d.store.dispatch({ type: "turnCancelled" });
  }

  async newSession(): Promise<void> {
    await this.cancel();
    await Promise.race([this.turn, delay(3000)]);
    this.session = undefined;
    await this.ensureSession();
  }

  async restart(): Promise<void> {
    const old = this.conn;
    this.conn = undefined;
    this.session = undefined;
    this.d.permissions.cancelAll();
    this.d.terminals.disposeAll();
    await old?.dispose();
    await this.ensureSession();
  }

  async setMode(modeId: string): Promise<void> {
    const s = this.session;
    if (!s) return;
    await s.conn.setMode(s.id, modeId);
    this.d.store.dispatch({ type: "modeChanged", modeId });
  }

  async setConfigOption(configId: string, value: string): Promise<void> {
    const s = this.session;
    if (!s) return;
    const res = await s.conn.setConfigOption(s.id, configId, value);
    this.d.store.dispatch({ type: "configOptions", configOptions: res.configOptions });
  }

  /** Replace the view with a stored session: `session/load` replays its history as updates. */
  async loadSession(sessionId: string, cwd: string): Promise<void> {
    const conn = await this.connect();
    await this.cancel();
    this.session = { id: sessionId, conn };
    this.d.store.dispatch({ type: "sessionStarted", sessionId, cwd, canLoadSessions: true });
    const res = await conn.loadSession(sessionId, cwd);
    if (res?.modes) this.d.store.dispatch({ type: "modes", modes: res.modes });
    if (res?.configOptions) this.d.store.dispatch({ type: "configOptions", configOptions: res.configOptions });
  }

  async dispose(): Promise<void> {
    this.d.permissions.cancelAll();
    this.d.terminals.disposeAll();
    const c = this.conn;
    this.conn = undefined;
    await c?.dispose();
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export function errorText(err: unknown): string {
  if (err instanceof Error) return err.message;
  if (typeof err === "object" && err && "message" in err) return String((err as { message: unknown }).message);
  return String(err);
}
