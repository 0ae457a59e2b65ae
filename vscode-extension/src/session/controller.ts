/**
 * SessionController: owns the agent process and the current session, and turns user actions (from the
 * webview, commands and notifications) into ACP calls and SessionEvents. It is the only place that
 * knows which connection and which session are current.
 *
 * Opening the view reopens the last conversation of the workspace (`session/resume` when the agent
 * offers it, with the view the client kept; else `session/load`, which replays it) instead of starting
 * an empty session each time; a session is remembered as "last" once it has a prompt. A crash drops
 * the connection and says what to do (src/install/failure.ts); a restart reopens the conversation.
 */
import { randomUUID } from "node:crypto";
import { mkdir } from "node:fs/promises";
import * as os from "node:os";
import * as vscode from "vscode";
import type { ContentBlock, SessionNotification } from "../../shared/acp";
import { type RestoreResult, turnOf } from "../../shared/checkpoints";
import type { SessionState } from "../../shared/state";
import { answerText } from "../../shared/cardView";
import { isAuthRequired, loginInvocation } from "../acp/auth";
import { forAgent } from "../prompt/attachments";
import { AgentConnection, type SessionSetup } from "../acp/connection";
import type { AgentSpec } from "../acp/agentSpec";
import type { TerminalManager } from "../acp/terminals";
import { describeAgent } from "../install/agentInfo";
import { isBuiltinAgent, resolveAgent, selectedAgentName, traceEnabled, workspaceMcpServers } from "./config";
import { describeFailure, failureMessage } from "../install/failure";
import { type RunInTerminal, runInTerminal } from "../install/loginTerminal";
import type { McpServers } from "./mcpConfig";
import { showNotice } from "../views/notices";
import { readTextFile, writeTextFile } from "../review/fsHandlers";
import type { PermissionBroker } from "../review/permissions";
import type { QuestionBroker } from "../review/questions";
import type { SessionArchive } from "./sessionArchive";
import type { SessionStore } from "./store";

/** Where "the last conversation" is remembered (a Memento: the workspace's state). */
export interface KeyValueStore {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void>;
}

export interface LastSession {
  agent: string;
  sessionId: string;
  cwd: string;
}

export const LAST_SESSION_KEY = "acp.lastSession";

const INSTALL_ACTION = "Install acp-bridge";

/** JSON-RPC's "method not found": an agent without one of this project's bridge's extension methods. */
const METHOD_NOT_FOUND = -32601;

export interface ControllerDeps {
  store: SessionStore;
  permissions: PermissionBroker;
  questions: QuestionBroker;
  terminals: TerminalManager;
  output: vscode.OutputChannel;
  version: string;
  /** Where the built-in bridge keeps session logs (`--state-dir`); created on start. None: no history. */
  historyDir?: string;
  /** Answers and views the client keeps per session (for `session/load` and `session/resume`). */
  archive?: SessionArchive;
  /** Remembers the last conversation per workspace, to reopen it. */
  memory?: KeyValueStore;
  /** Runs an agent's terminal login (default: a VS Code terminal). */
  runInTerminal?: RunInTerminal;
  /** The user's MCP servers for a new session (default: `.vscode/mcp.json` and the setting). */
  mcpServers?: () => Promise<McpServers>;
  /** The Python of the bridge the extension installed (src/install/installUi.ts), if it did. */
  managedPython?: () => string | undefined;
  /** Installs the built-in bridge (one click from a "not installed" failure). */
  installBridge?: () => Promise<unknown>;
}

export class SessionController implements vscode.Disposable {
  private conn: AgentConnection | undefined;
  private starting: Promise<AgentConnection> | undefined;
  private session: { id: string; conn: AgentConnection } | undefined;
  private sessionStarting: Promise<string> | undefined;
  private turn: Promise<unknown> | undefined;
  /** Said to the agent with the next prompt (e.g. that the user undid one of its edits). */
  private notes: string[] = [];
  /** Set while switchAgent stores the user's choice of agent and restarts on it. */
  private switching = false;
  private readonly storeSub: { dispose(): void };

  constructor(private readonly d: ControllerDeps) {
    this.storeSub = d.store.listen((event) => {
      const s = d.store.state;
      if (event.type === "permissionResolved" && s.sessionId && d.archive) {
        const card = Object.values(s.cards).find((c) => c.permission?.requestId === event.requestId);
        const label = card && answerText({ ...card, permission: { ...card.permission!, feedback: undefined } });
        const kind = card?.permission?.options.find((o) => o.optionId === event.outcome)?.kind;
        if (card && label) void d.archive.recordAnswer(s.sessionId, card.toolCallId, { label, kind, feedback: event.feedback });
      }
      if (event.type === "turnEnded" && s.sessionId && d.archive && this.conn?.canResumeSession) void d.archive.saveView(s.sessionId, s);
      // The agent switched model itself (e.g. a slash command): the header's model follows.
      if (event.type === "update" && event.update.sessionUpdate === "config_option_update" && this.conn) this.describe(this.conn, s.configOptions);
    });
  }

  get cwd(): string {
    return vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir();
  }

  get connection(): AgentConnection | undefined {
    return this.conn;
  }

  /** The open session and its agent, if any. */
  currentSession(): { id: string; conn: AgentConnection } | undefined {
    return this.session;
  }

  /** The running agent, started on first use. */
  async connect(): Promise<AgentConnection> {
    if (this.conn) return this.conn;
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async start(): Promise<AgentConnection> {
    const { store, output, historyDir } = this.d;
    const spec = resolveAgent(selectedAgentName(), vscode.workspace.workspaceFolders?.[0]?.uri.fsPath, historyDir, this.d.managedPython?.());
    store.dispatch({ type: "connection", status: "starting", agentName: spec.name });
    output.appendLine(`[acp] starting ${spec.name}: ${spec.command} ${spec.args.join(" ")}`);
    try {
      if (historyDir && spec.args.includes(historyDir)) await mkdir(historyDir, { recursive: true });
      const conn = await AgentConnection.start(
        spec,
        {
          onUpdate: (n, t0) => this.onUpdate(n, t0),
          requestPermission: (p, signal) => this.d.permissions.request(p, signal),
          elicit: (p, signal) => this.d.questions.request(p, signal),
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
            if (!expected && this.conn === conn) this.crashed(spec, `exited with code ${exit.code ?? exit.signal}`, exit.stderrTail);
          },
        },
      );
      this.conn = conn;
      const info = conn.init.agentInfo;
      output.appendLine(`[acp] connected to ${info ? `${info.name} ${info.version}` : spec.name}`);
      store.dispatch({ type: "connection", status: "ready", agentName: spec.name });
      store.dispatch({ type: "agentInfo", agent: describeAgent(spec, info ?? undefined) });
      return conn;
    } catch (err) {
      this.crashed(spec, errorText(err));
      throw err;
    }
  }

  private crashed(spec: AgentSpec, message: string, stderrTail?: string): void {
    this.conn = undefined;
    this.session = undefined;
    this.d.permissions.cancelAll();
    this.d.questions.cancelAll();
    const failure = describeFailure({ agentName: spec.name, command: spec.command, builtin: isBuiltinAgent(spec.name), message, stderrTail });
    this.d.store.dispatch({ type: "connection", status: "crashed", agentName: spec.name, error: message, failure });
    const install = failure.install && this.d.installBridge;
    const actions = [...(install ? [INSTALL_ACTION] : []), ...(failure.setting ? ["Open Setting"] : []), "Restart", "Show Output"];
    void vscode.window.showErrorMessage(failureMessage(spec.name, failure), ...actions).then((pick) => {
      if (pick === INSTALL_ACTION) void this.installBridge();
      if (pick === "Restart") void this.restart().catch(() => undefined);
      if (pick === "Show Output") this.d.output.show(true);
      if (pick === "Open Setting" && failure.setting) void vscode.commands.executeCommand("workbench.action.openSettings", failure.setting);
    });
  }

  private onUpdate(n: SessionNotification, t0: number): void {
    if (n.sessionId !== this.d.store.state.sessionId) return;
    this.d.store.dispatch({ type: "update", update: n.update }, t0);
    if (n.update.sessionUpdate === "notice") showNotice(n.update);
  }

  /**
   * The agent answered `auth_required`: the view says so with a "Log in" per terminal method it offers,
   * and so does a notification. True if it was that.
   */
  private authRequired(conn: AgentConnection, err: unknown): boolean {
    if (!isAuthRequired(err)) return false;
    const methods = conn.terminalAuthMethods.map((m) => ({ id: m.id, name: m.name, description: m.description ?? undefined }));
    this.d.store.dispatch({ type: "auth", auth: { message: errorText(err), methods } });
    const first = methods[0];
    const actions = first ? ["Log in"] : [];
    void vscode.window.showWarningMessage(`ACP agent "${conn.spec.name}" needs you to log in: ${errorText(err)}`, ...actions).then((pick) => {
      if (pick === "Log in" && first) void this.login(first.id).catch((e) => vscode.window.showErrorMessage(`ACP: ${errorText(e)}`));
    });
    return true;
  }

  /**
   * Run the agent's terminal login `methodId` (the first one if not given): its own command with the
   * method's arguments, in a terminal. Exit 0: logged in, the session starts if it could not before.
   */
  async login(methodId?: string): Promise<void> {
    const conn = await this.connect();
    const method = conn.terminalAuthMethods.find((m) => methodId === undefined || m.id === methodId);
    if (!method) {
      void vscode.window.showInformationMessage(`ACP agent "${conn.spec.name}" offers no login to run in a terminal.`);
      return;
    }
    const { store } = this.d;
    const before = store.state.auth;
    if (before) store.dispatch({ type: "auth", auth: { ...before, running: true } });
    this.d.output.appendLine(`[acp] login: ${conn.spec.command} ${[...conn.spec.args, ...(method.args ?? [])].join(" ")}`);
    const code = await (this.d.runInTerminal ?? runInTerminal)(loginInvocation(conn.spec, method), `Log in: ${conn.spec.name}`);
    if (code !== 0) {
      if (before) store.dispatch({ type: "auth", auth: { ...before, running: false } });
      void vscode.window.showWarningMessage(`The login did not complete (${code === undefined ? "the terminal was closed" : `exit status ${code}`}).`);
      return;
    }
    store.dispatch({ type: "auth", auth: undefined });
    void vscode.window.showInformationMessage("Logged in. Send your prompt again.");
    if (!this.session) await this.openLastOrNew();
  }

  /** The current session's id, creating a session (cwd = the workspace folder) if there is none. */
  async ensureSession(): Promise<string> {
    const conn = await this.connect();
    if (this.session?.conn === conn) return this.session.id;
    this.sessionStarting ??= this.startSession(conn).finally(() => (this.sessionStarting = undefined));
    return this.sessionStarting;
  }

  /**
   * What opening the view does: reopen the workspace's last conversation with this agent if the agent
   * can, else start a new session. Never a second session when one is open.
   */
  async openLastOrNew(): Promise<string> {
    const conn = await this.connect();
    if (this.session?.conn === conn) return this.session.id;
    this.sessionStarting ??= this.reopenOrStart(conn).finally(() => (this.sessionStarting = undefined));
    return this.sessionStarting;
  }

  private async reopenOrStart(conn: AgentConnection): Promise<string> {
    const last = this.d.memory?.get<LastSession>(LAST_SESSION_KEY);
    if (last && last.agent === conn.spec.name && last.cwd === this.cwd && (conn.canResumeSession || conn.canLoadSession)) {
      try {
        await this.reopen(conn, last.sessionId, last.cwd);
        return last.sessionId;
      } catch (err) {
        this.d.output.appendLine(`[acp] could not reopen session ${last.sessionId}: ${errorText(err)}; starting a new one`);
        await this.d.memory?.update(LAST_SESSION_KEY, undefined);
      }
    }
    return this.startSession(conn);
  }

  /**
   * What a session opens with: the user's MCP servers (those the agent can take) and the other workspace
   * folders as extra roots (`additionalDirectories`, when the agent takes them). The servers left out are
   * said in the view once the session is shown.
   */
  private async sessionSetup(conn: AgentConnection): Promise<{ setup: SessionSetup; notes: string[] }> {
    const { servers, skipped } = await (this.d.mcpServers ?? workspaceMcpServers)();
    const notes = skipped.map((s) => `MCP server "${s.name}" (${s.source}) was not started: ${s.reason}.`);
    const mcpServers = servers.filter((s) => {
      if (!("type" in s) || conn.acceptsMcp(s.type)) return true;
      notes.push(`MCP server "${s.name}" was not passed on: ${conn.spec.name} does not take ${s.type} MCP servers.`);
      return false;
    });
    for (const n of notes) this.d.output.appendLine(`[acp] ${n}`);
    // Every workspace folder is a root of the session: the first is its cwd, the others go along.
    const others = (vscode.workspace.workspaceFolders ?? []).slice(1).map((f) => f.uri.fsPath);
    const additionalDirectories = conn.acceptsAdditionalDirectories ? others : [];
    if (others.length > 0 && !conn.acceptsAdditionalDirectories) this.d.output.appendLine(`[acp] ${conn.spec.name} takes no additional directories: only ${this.cwd} is its workspace`);
    return { setup: { mcpServers, additionalDirectories }, notes };
  }

  private showNotes(notes: readonly string[]): void {
    for (const text of notes) this.d.store.dispatch({ type: "notice", severity: "warning", text });
  }

  private async startSession(conn: AgentConnection): Promise<string> {
    let res: Awaited<ReturnType<AgentConnection["newSession"]>>;
    const { setup, notes } = await this.sessionSetup(conn);
    try {
      res = await conn.newSession(this.cwd, setup);
    } catch (err) {
      this.authRequired(conn, err);
      throw err;
    }
    if (this.d.store.state.auth) this.d.store.dispatch({ type: "auth", auth: undefined });
    this.session = { id: res.sessionId, conn };
    this.d.store.dispatch({
      type: "sessionStarted",
      sessionId: res.sessionId,
      cwd: this.cwd,
      modes: res.modes,
      configOptions: res.configOptions,
      canLoadSessions: conn.canLoadSession && conn.canListSessions,
      checkpoints: conn.hasCheckpoints,
    });
    this.describe(conn, res.configOptions);
    this.showNotes(notes);
    return res.sessionId;
  }

  /** The header's agent and model (a session may bring a `model` config option). */
  private describe(conn: AgentConnection, configOptions: Parameters<typeof describeAgent>[2] | null | undefined): void {
    if (configOptions?.some((o) => o.category === "model")) this.d.store.dispatch({ type: "agentInfo", agent: describeAgent(conn.spec, conn.init.agentInfo ?? undefined, configOptions) });
  }

  /** Send a prompt: the text and what the user attached (as this agent takes it, see src/prompt/attachments.ts). */
  async prompt(text: string, attachments: readonly ContentBlock[] = []): Promise<void> {
    if (!text.trim()) return;
    if (this.d.store.state.running && this.session) return this.steer(this.session, text, attachments);
    let conn: AgentConnection;
    let sessionId: string;
    try {
      sessionId = await this.openLastOrNew();
      conn = this.session!.conn;
    } catch (err) {
      if (!isAuthRequired(err)) this.d.store.dispatch({ type: "error", message: `Could not start a session: ${errorText(err)}` });
      return;
    }
    const { blocks, dropped } = forAgent(attachments, conn.promptCapabilities);
    this.d.store.dispatch({ type: "userPrompt", text, ...(blocks.length ? { blocks } : {}) });
    if (dropped.length) this.d.store.dispatch({ type: "notice", severity: "warning", text: `Not sent: ${dropped.join(", ")} (${conn.spec.name} does not take images).` });
    void this.remember(conn, sessionId);
    const notes = this.notes;
    this.notes = [];
    const turn = blocks.length ? conn.prompt(sessionId, text, notes, blocks) : conn.prompt(sessionId, text, notes);
    this.turn = turn.catch(() => undefined);
    try {
      const res = await turn;
      this.d.store.dispatch({ type: "turnEnded", stopReason: res.stopReason, ...turnOf(res._meta) });
    } catch (err) {
      if (this.session?.conn === conn && !this.authRequired(conn, err)) this.d.store.dispatch({ type: "error", message: errorText(err) });
      this.d.store.dispatch({ type: "turnEnded", stopReason: "error" });
    }
  }

  /**
   * "Send now", while the agent works: the prompt goes at once, under a client-side id the bridge echoes
   * where the turn takes it (docs/sessions.md, "Steering"); the view shows it waiting until then, never a
   * copy of its own (shared/reducer.ts). Notes for the agent wait for the next prompt of the user's own.
   */
  private async steer(s: { id: string; conn: AgentConnection }, text: string, attachments: readonly ContentBlock[]): Promise<void> {
    const { blocks, dropped } = forAgent(attachments, s.conn.promptCapabilities);
    const messageId = `steer-${randomUUID()}`;
    this.d.store.dispatch({ type: "steerSent", messageId, text, ...(blocks.length ? { blocks } : {}) });
    if (dropped.length) this.d.store.dispatch({ type: "notice", severity: "warning", text: `Not sent: ${dropped.join(", ")} (${s.conn.spec.name} does not take images).` });
    try {
      const res = await s.conn.prompt(s.id, text, [], blocks, messageId);
      this.d.store.dispatch({ type: "steerAnswered", messageId, stopReason: res.stopReason });
    } catch (err) {
      this.d.store.dispatch({ type: "steerAnswered", messageId, error: errorText(err) });
    }
  }

  /** Something the agent should hear with the next prompt (it cannot be told between turns). */
  noteForAgent(text: string): void {
    this.notes.push(text);
  }

  /** A session with a prompt is the one to reopen next time (an empty one is not worth reopening). */
  private async remember(conn: AgentConnection, sessionId: string): Promise<void> {
    const last: LastSession = { agent: conn.spec.name, sessionId, cwd: this.d.store.state.cwd ?? this.cwd };
    await this.d.memory?.update(LAST_SESSION_KEY, last);
  }

  /** Cancel the running turn: notify the agent, answer open approvals `cancelled`, mark cards. */
  async cancel(): Promise<void> {
    const s = this.session;
    if (!s || !this.d.store.state.running) return;
    await s.conn.cancel(s.id).catch(() => undefined);
    this.d.permissions.cancelAll();
    this.d.questions.cancelAll();
    this.d.store.dispatch({ type: "turnCancelled" });
  }

  /**
   * Stop the background command card `toolCallId`'s call started (`_acpBridge/killBackground`). The card
   * says "Stopping…" until the agent's update ends it; a refusal is said on the card.
   */
  async stopBackground(toolCallId: string): Promise<void> {
    const s = this.session;
    if (!s) return;
    const { store } = this.d;
    store.dispatch({ type: "stopRequested", toolCallId });
    try {
      await s.conn.killBackground(s.id, toolCallId);
      // Stopped, or it had ended meanwhile: either way the agent's own update ends the card.
      store.dispatch({ type: "stopAnswered", toolCallId });
    } catch (err) {
      const reason = (err as { code?: unknown }).code === METHOD_NOT_FOUND ? `ACP agent "${s.conn.spec.name}" cannot stop background commands.` : `Could not stop it: ${errorText(err)}`;
      store.dispatch({ type: "stopAnswered", toolCallId, reason });
    }
  }

  /**
   * "Restore to before this turn": the agent puts the session's files back as they were before turn
   * `turn` (`_acpBridge/rewind`); the conversation goes on. A file someone else changed since is never
   * overwritten without asking: the agent answers "conflict", and a modal asks whether to overwrite.
   */
  async rewind(turn: number): Promise<void> {
    await this.restore({ turn }, (conn, id, force) => conn.rewind(id, turn, force));
  }

  /** "Revert this file": `path` back to what it was before call `toolCallId` (`_acpBridge/revertFile`). */
  async revertFile(toolCallId: string, path: string): Promise<void> {
    await this.restore({ toolCallId, path }, (conn, id, force) => conn.revertFile(id, toolCallId, path, force));
  }

  private async restore(what: { turn?: number; toolCallId?: string; path?: string }, call: (conn: AgentConnection, sessionId: string, force: boolean) => Promise<RestoreResult>): Promise<void> {
    const s = this.session;
    const { store } = this.d;
    if (!s) return;
    if (store.state.running) {
      void vscode.window.showWarningMessage("The agent is still working. Wait for it, or cancel it, before restoring files.");
      return;
    }
    try {
      let result = await call(s.conn, s.id, false);
      if (result.status === "conflict") {
        const files = result.conflicts.map((c) => `${vscode.workspace.asRelativePath(c.path)}: ${c.reason}`).join("\n");
        const overwrite = "Overwrite";
        const pick = await vscode.window.showWarningMessage("Some files were changed since, outside the agent. Overwrite my changes?", { modal: true, detail: files }, overwrite);
        if (pick === overwrite) result = await call(s.conn, s.id, true);
      }
      if (this.session === s) store.dispatch({ type: "restored", ...what, ...result });
    } catch (err) {
      const error = (err as { code?: unknown }).code === METHOD_NOT_FOUND ? `ACP agent "${s.conn.spec.name}" keeps no checkpoints` : errorText(err);
      if (this.session === s) store.dispatch({ type: "restored", ...what, status: "failed", restored: [], conflicts: [], error });
    }
  }

  async newSession(): Promise<void> {
    await this.cancel();
    await Promise.race([this.turn, delay(3000)]);
    this.session = undefined;
    await this.ensureSession();
  }

  /**
   * Another agent, chosen by the user: `select` stores the choice (the `acp.agent` setting), then the
   * agent restarts on it. Until then `switchingAgent` is true, so the settings listener does not offer
   * a second restart for that change.
   */
  async switchAgent(select: () => Thenable<void>): Promise<void> {
    this.switching = true;
    try {
      await select();
      await this.restart();
    } finally {
      this.switching = false;
    }
  }

  get switchingAgent(): boolean {
    return this.switching;
  }

  /** A new agent process (settings changed, or it crashed), back in the conversation that was open. */
  async restart(): Promise<void> {
    const old = this.conn;
    this.conn = undefined;
    this.session = undefined;
    this.d.permissions.cancelAll();
    this.d.questions.cancelAll();
    this.d.terminals.disposeAll();
    await old?.dispose();
    await this.openLastOrNew();
  }

  /** Install the built-in bridge into the extension's own environment; the agent restarts on it. */
  async installBridge(): Promise<void> {
    if (!this.d.installBridge) {
      void vscode.window.showInformationMessage("This agent cannot be installed from here.");
      return;
    }
    await this.d.installBridge();
  }

  /** Whether the agent is not running (never started, stopped or crashed). */
  get isDown(): boolean {
    return !this.conn;
  }

  async setMode(modeId: string): Promise<void> {
    const s = this.session;
    if (!s) return;
    await s.conn.setMode(s.id, modeId);
    this.d.store.dispatch({ type: "modeChanged", modeId });
  }

  async setConfigOption(configId: string, value: string | boolean): Promise<void> {
    const s = this.session;
    if (!s) return;
    const res = await s.conn.setConfigOption(s.id, configId, value);
    this.d.store.dispatch({ type: "configOptions", configOptions: res.configOptions });
    this.describe(s.conn, res.configOptions);
  }

  /** Replace the view with a stored session: `session/load` replays its history as updates. */
  async loadSession(sessionId: string, cwd: string): Promise<void> {
    const conn = await this.connect();
    await this.cancel();
    await this.reopen(conn, sessionId, cwd, true);
    void this.remember(conn, sessionId);
  }

  /**
   * Open a stored session: `session/resume` with the view the client kept of it, when the agent resumes
   * and that view exists; else `session/load`, which replays it. Then the answers given to its approval
   * questions go back on their cards (a replay does not ask them again).
   */
  private async reopen(conn: AgentConnection, sessionId: string, cwd: string, preferLoad = false): Promise<void> {
    const { store, archive } = this.d;
    const kept = !preferLoad && conn.canResumeSession ? await archive?.view(sessionId) : undefined;
    const { setup, notes } = await this.sessionSetup(conn);
    if (kept || !conn.canLoadSession) {
      const res = await conn.resumeSession(sessionId, cwd, setup);
      this.session = { id: sessionId, conn };
      store.dispatch({ type: "sessionStarted", sessionId, cwd, modes: res.modes, configOptions: res.configOptions, canLoadSessions: conn.canLoadSession && conn.canListSessions, checkpoints: conn.hasCheckpoints });
      if (kept) this.restoreView(kept);
      this.describe(conn, res.configOptions);
    } else {
      this.session = { id: sessionId, conn };
      store.dispatch({ type: "sessionStarted", sessionId, cwd, canLoadSessions: true, checkpoints: conn.hasCheckpoints });
      try {
        const res = await conn.loadSession(sessionId, cwd, setup);
        if (res?.modes) store.dispatch({ type: "modes", modes: res.modes });
        if (res?.configOptions) store.dispatch({ type: "configOptions", configOptions: res.configOptions });
        this.describe(conn, res?.configOptions);
      } catch (err) {
        this.session = undefined;
        throw err;
      }
    }
    for (const [toolCallId, a] of Object.entries((await archive?.answers(sessionId)) ?? {})) {
      store.dispatch({ type: "answerRestored", toolCallId, label: a.label, kind: a.kind, feedback: a.feedback });
    }
    this.showNotes(notes);
  }

  /**
   * Rename the current session (ACP's `session/set_title`, or the bridge's older `_acpBridge/setSessionTitle`
   * with an agent that does not advertise it; History lists the new title).
   * Without `title`, asks for it.
   */
  async renameSession(title?: string): Promise<void> {
    const s = this.session;
    if (!s) {
      void vscode.window.showInformationMessage("There is no session to rename yet.");
      return;
    }
    const next =
      title ??
      (await vscode.window.showInputBox({ title: "ACP: Rename Session", prompt: "The session's title, as History lists it", value: this.d.store.state.title ?? "", validateInput: (v) => (v.trim() ? undefined : "A title cannot be empty") }));
    if (next === undefined || !next.trim()) return;
    try {
      const res = await s.conn.setSessionTitle(s.id, next.trim());
      if (this.session === s) this.d.store.dispatch({ type: "update", update: { sessionUpdate: "session_info_update", title: res.title } });
    } catch (err) {
      if ((err as { code?: unknown }).code !== METHOD_NOT_FOUND) throw err;
      void vscode.window.showInformationMessage(`ACP agent "${s.conn.spec.name}" cannot rename sessions.`);
    }
  }

  /**
   * Fork the open session (`session/fork`): the view moves to a new session that starts from this
   * conversation, shown as it is (the agent replays nothing); the original stays in History, as it was.
   * Not while a turn runs: its updates belong to the session being left.
   */
  async forkSession(): Promise<void> {
    const s = this.session;
    const { store, archive } = this.d;
    if (!s) {
      void vscode.window.showInformationMessage("There is no session to fork yet.");
      return;
    }
    if (!s.conn.canForkSession) {
      void vscode.window.showInformationMessage(`ACP agent "${s.conn.spec.name}" cannot fork sessions.`);
      return;
    }
    if (store.state.running) {
      void vscode.window.showWarningMessage("The agent is still working on the last prompt. Wait for it, or cancel it, before forking.");
      return;
    }
    const kept = structuredClone(store.state);
    const cwd = store.state.cwd ?? this.cwd;
    const { setup, notes } = await this.sessionSetup(s.conn);
    const res = await s.conn.forkSession(s.id, cwd, setup);
    this.session = { id: res.sessionId, conn: s.conn };
    store.dispatch({ type: "sessionStarted", sessionId: res.sessionId, cwd, modes: res.modes, configOptions: res.configOptions, canLoadSessions: s.conn.canLoadSession && s.conn.canListSessions, checkpoints: s.conn.hasCheckpoints });
    this.restoreView({ ...kept, title: undefined, titleFromAgent: false });
    this.describe(s.conn, res.configOptions);
    if (archive && s.conn.canResumeSession) await archive.saveView(res.sessionId, store.state);
    void this.remember(s.conn, res.sessionId);
    this.showNotes(notes);
  }

  /** `session/delete`: the stored session goes (with what the client kept of it); deleting the open one starts a new one. */
  async deleteSession(sessionId: string): Promise<void> {
    const conn = await this.connect();
    await conn.deleteSession(sessionId);
    await this.d.archive?.forget(sessionId);
    if (this.d.memory?.get<LastSession>(LAST_SESSION_KEY)?.sessionId === sessionId) await this.d.memory.update(LAST_SESSION_KEY, undefined);
    if (this.session?.id === sessionId) {
      this.session = undefined;
      await this.ensureSession();
    }
  }

  /** A resumed session's conversation, as the client last showed it (the agent does not replay it). */
  private restoreView(kept: SessionState): void {
    this.d.store.dispatch({ type: "viewRestored", view: kept });
  }

  async dispose(): Promise<void> {
    this.storeSub.dispose();
    this.d.permissions.cancelAll();
    this.d.questions.cancelAll();
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
