/**
 * AgentConnection: one ACP agent subprocess and the client side of the protocol, on the official SDK.
 * It spawns the agent, runs `initialize` (advertising fs, terminal, compaction and notice updates,
 * boolean config options, terminal login and Zed's `_meta.terminal_output`), routes agent → client calls
 * to ClientHandlers and exposes the agent methods the UI needs.
 * Plain Node: no `vscode` import, so integration tests drive it against the real bridge.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import { advertisesCheckpoints, readRestoreResult, type RestoreResult } from "../../shared/checkpoints";
import type { AgentSpec } from "./agentSpec";
import { type TerminalMethod, terminalMethods } from "./auth";
import type { ClientHandlers } from "./handlers";

export interface AgentExit {
  code: number | null;
  signal: string | null;
  /** The last lines the agent wrote to stderr, for the crash message. */
  stderrTail: string;
}

export interface ConnectOptions {
  clientName: string;
  clientVersion: string;
  onStderr?: (text: string) => void;
  /** Every byte chunk on the wire, for the `acp.trace` setting: ">" to the agent, "<" from it. */
  trace?: (direction: ">" | "<", text: string) => void;
  /** Called once when the process ends, expectedly (dispose) or not. */
  onExit?: (exit: AgentExit, expected: boolean) => void;
}

/** This project's bridge's own JSON-RPC methods (extension methods, `_`-prefixed as ACP asks). */
export const BRIDGE_METHODS = {
  /** The bridge's rename from before ACP had one (`SET_TITLE_METHOD`): used with an agent that does not advertise `title`. */
  setSessionTitle: "_acpBridge/setSessionTitle",
  listRules: "_acpBridge/listRules",
  forgetRules: "_acpBridge/forgetRules",
  /** Stop one background command: `{sessionId, bashId}` → `{killed}` (bashId: the id of the call that started it). */
  killBackground: "_acpBridge/killBackground",
  /** Files back to before turn N: `{sessionId, turn, force?}` → a RestoreResult. */
  rewind: "_acpBridge/rewind",
  /** One file back to before one call: `{sessionId, toolCallId, path, force?}` → a RestoreResult. */
  revertFile: "_acpBridge/revertFile",
} as const;

/** `_acpBridge/listRules` and `forgetRules` answers: rules numbered as the bridge's `/permissions` numbers them. */
export interface RulesListing {
  mode: string;
  /** How long an "always" answer lasts, in words: "this session", "this project". */
  rememberedFor: string;
  rules: Array<{ number: number; description: string; allow: boolean; tool: string; scope: string }>;
}

/** ACP's `session/fork` (unstable in v1; see `AgentConnection.forkSession`). */
export const FORK_METHOD = "session/fork";

/** ACP's `session/set_title` (unstable in v1, advertised as `sessionCapabilities.title`; see `AgentConnection.setSessionTitle`). */
export const SET_TITLE_METHOD = "session/set_title";

/** `session/fork`'s answer: the new session, with what `session/new` answers besides. */
export type ForkSessionResult = Pick<acp.NewSessionResponse, "sessionId" | "modes" | "configOptions">;

/** What a session is opened with, besides its cwd: the user's MCP servers and the other workspace roots. */
export interface SessionSetup {
  mcpServers?: acp.McpServer[];
  additionalDirectories?: string[];
}

export class AgentConnection {
  private disposed = false;

  private constructor(
    readonly spec: AgentSpec,
    private readonly child: ChildProcess,
    private readonly conn: acp.ClientConnection,
    readonly exited: Promise<AgentExit>,
    readonly init: acp.InitializeResponse,
  ) {}

  /** Spawn the agent and complete `initialize`. Rejects with a readable message if either fails. */
  static async start(spec: AgentSpec, handlers: ClientHandlers, opts: ConnectOptions): Promise<AgentConnection> {
    const child = spawn(spec.command, spec.args, {
      cwd: spec.cwd,
      env: { ...process.env, ...spec.env },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true, // its own process group, so dispose() can end the agent and anything it started
    });
    let tail = "";
    await new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", (err) => reject(new Error(`cannot start agent "${spec.name}" (${spec.command}): ${err.message}`)));
    });
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (text: string) => {
      tail = (tail + text).slice(-4000);
      opts.onStderr?.(text);
    });
    const exited = new Promise<AgentExit>((resolve) => {
      child.once("close", (code, signal) => resolve({ code, signal, stderrTail: tail }));
    });
    let output = Writable.toWeb(child.stdin!) as WritableStream<Uint8Array>;
    let input = Readable.toWeb(child.stdout!) as ReadableStream<Uint8Array>;
    if (opts.trace) {
      output = tap(output, ">", opts.trace);
      input = input.pipeThrough(tapper("<", opts.trace));
    }
    const stream = acp.ndJsonStream(output, input);
    const conn = buildClient(opts.clientName, handlers).connect(stream);
    try {
      const init = await conn.agent.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientInfo: { name: opts.clientName, title: "ACP Agent for VS Code", version: opts.clientVersion },
        clientCapabilities: {
          fs: { readTextFile: !!handlers.readTextFile, writeTextFile: !!handlers.writeTextFile },
          terminal: !!handlers.terminal,
          // Compactions and notices are shown (timeline entry, toast); boolean config options are toggles in
          // the header; a terminal login runs in a terminal; questions (elicitation) are forms in the view.
          session: { compaction: {}, notices: {}, configOptions: { boolean: {} } },
          auth: { terminal: true },
          ...(handlers.elicit ? { elicitation: { form: {} } } : {}),
          _meta: { terminal_output: true },
        },
      });
      const self = new AgentConnection(spec, child, conn, exited, init);
      void exited.then((e) => opts.onExit?.(e, self.disposed));
      return self;
    } catch (err) {
      // A closed connection usually means the process died: report its exit and stderr instead.
      const exit = await Promise.race([exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 1000))]);
      conn.close();
      killTree(child);
      if (exit) throw new Error(`agent "${spec.name}" exited during initialize (code ${exit.code}, signal ${exit.signal})${exit.stderrTail ? `:\n${exit.stderrTail.trim()}` : ""}`, { cause: err });
      throw err;
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get canLoadSession(): boolean {
    return this.init.agentCapabilities?.loadSession === true;
  }

  get canListSessions(): boolean {
    return this.init.agentCapabilities?.sessionCapabilities?.list != null;
  }

  /** The agent's `terminal` auth methods (run the agent with their args in a terminal to log in). */
  get terminalAuthMethods(): TerminalMethod[] {
    return terminalMethods(this.init.authMethods);
  }

  /** `session/resume`: continue a stored session without its history being replayed. */
  get canResumeSession(): boolean {
    return this.init.agentCapabilities?.sessionCapabilities?.resume != null;
  }

  /** The MCP transports the agent takes besides stdio (which every ACP agent must). */
  acceptsMcp(type: "http" | "sse"): boolean {
    return this.init.agentCapabilities?.mcpCapabilities?.[type] === true;
  }

  /** Whether the agent takes workspace roots besides `cwd` (`additionalDirectories`). */
  get acceptsAdditionalDirectories(): boolean {
    return this.init.agentCapabilities?.sessionCapabilities?.additionalDirectories != null;
  }

  newSession(cwd: string, setup: SessionSetup = {}): Promise<acp.NewSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.new, { cwd, ...this.setupParams(setup) });
  }

  loadSession(sessionId: string, cwd: string, setup: SessionSetup = {}): Promise<acp.LoadSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.load, { sessionId, cwd, ...this.setupParams(setup) });
  }

  /** `mcpServers` (always present, as ACP requires) and `additionalDirectories` when there are any. */
  private setupParams(setup: SessionSetup): { mcpServers: acp.McpServer[]; additionalDirectories?: string[] } {
    const dirs = setup.additionalDirectories ?? [];
    return { mcpServers: setup.mcpServers ?? [], ...(dirs.length > 0 ? { additionalDirectories: dirs } : {}) };
  }

  listSessions(cwd?: string, cursor?: string): Promise<acp.ListSessionsResponse> {
    return this.conn.agent.request(acp.methods.agent.session.list, { cwd: cwd ?? null, cursor: cursor ?? null });
  }

  resumeSession(sessionId: string, cwd: string, setup: SessionSetup = {}): Promise<acp.ResumeSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.resume, { sessionId, cwd, ...this.setupParams(setup) });
  }

  /**
   * `session/fork`: a new session that starts from another's conversation. Unstable in ACP v1, so not in
   * the SDK's stable entry point this extension compiles against: the method and its answer are spelled
   * here (`ForkSessionResult`), as the schema of SDK 2.4.0 has them.
   */
  get canForkSession(): boolean {
    const caps = this.init.agentCapabilities?.sessionCapabilities;
    return caps != null && (caps as Record<string, unknown>)["fork"] != null;
  }

  forkSession(sessionId: string, cwd: string, setup: SessionSetup = {}): Promise<ForkSessionResult> {
    return this.conn.agent.request<ForkSessionResult>(FORK_METHOD, { sessionId, cwd, ...this.setupParams(setup) });
  }

  get canDeleteSession(): boolean {
    return this.init.agentCapabilities?.sessionCapabilities?.delete != null;
  }

  deleteSession(sessionId: string): Promise<acp.DeleteSessionResponse> {
    return this.conn.agent.request(acp.methods.agent.session.delete, { sessionId });
  }

  /** Whether the agent advertises ACP's `session/set_title` (unstable: not in the SDK's stable types). */
  get canSetTitle(): boolean {
    const caps = this.init.agentCapabilities?.sessionCapabilities;
    return caps != null && (caps as Record<string, unknown>)["title"] != null;
  }

  /**
   * Rename a session: ACP's `session/set_title` when the agent advertises it, else the bridge's older
   * `_acpBridge/setSessionTitle` (same params and answer). The answer is the title as the agent stored it.
   */
  setSessionTitle(sessionId: string, title: string): Promise<{ title: string }> {
    const method = this.canSetTitle ? SET_TITLE_METHOD : BRIDGE_METHODS.setSessionTitle;
    return this.conn.agent.request<{ title: string }>(method, { sessionId, title });
  }

  /** The agent keeps checkpoints of the session's files (`agentCapabilities._meta.acpBridge.checkpoints`). */
  get hasCheckpoints(): boolean {
    return advertisesCheckpoints(this.init.agentCapabilities);
  }

  /** The bridge's `_acpBridge/killBackground`: whether a running command was stopped (false: it had ended). */
  async killBackground(sessionId: string, bashId: string): Promise<boolean> {
    const res = await this.conn.agent.request<{ killed?: unknown }>(BRIDGE_METHODS.killBackground, { sessionId, bashId });
    return res?.killed === true;
  }

  /** The bridge's `_acpBridge/rewind`: the session's files back to before turn `turn`. */
  async rewind(sessionId: string, turn: number, force = false): Promise<RestoreResult> {
    return readRestoreResult(await this.conn.agent.request<unknown>(BRIDGE_METHODS.rewind, { sessionId, turn, ...(force ? { force } : {}) }));
  }

  /** The bridge's `_acpBridge/revertFile`: `path` back to what it was before call `toolCallId`. */
  async revertFile(sessionId: string, toolCallId: string, path: string, force = false): Promise<RestoreResult> {
    return readRestoreResult(await this.conn.agent.request<unknown>(BRIDGE_METHODS.revertFile, { sessionId, toolCallId, path, ...(force ? { force } : {}) }));
  }

  /** The bridge's `_acpBridge/listRules`: the session's mode and remembered "always" rules. */
  listRules(sessionId: string): Promise<RulesListing> {
    return this.conn.agent.request<RulesListing>(BRIDGE_METHODS.listRules, { sessionId });
  }

  /** The bridge's `_acpBridge/forgetRules`: revoke rule `number`, or all of them; answers with the rules left. */
  forgetRules(sessionId: string, number?: number): Promise<RulesListing> {
    return this.conn.agent.request<RulesListing>(BRIDGE_METHODS.forgetRules, { sessionId, ...(number === undefined ? {} : { number }) });
  }

  /** What the agent takes in a prompt besides text and resource links. */
  get promptCapabilities(): acp.PromptCapabilities | undefined {
    return this.init.agentCapabilities?.promptCapabilities ?? undefined;
  }

  /**
   * A prompt: the user's text, what they attached (selections, files, images, mentions), then any notes
   * the client adds (each its own text block, after the rest). `messageId`: the client's id for it, which
   * the bridge echoes where the message lands (`_meta.acpBridge.messageId`; a message sent while a turn runs).
   */
  prompt(sessionId: string, text: string, notes: readonly string[] = [], attachments: readonly acp.ContentBlock[] = [], messageId?: string): Promise<acp.PromptResponse> {
    const prompt: acp.ContentBlock[] = [{ type: "text", text }, ...attachments, ...notes.map((n) => ({ type: "text" as const, text: n }))];
    const meta = messageId === undefined ? {} : { _meta: { acpBridge: { messageId } } };
    return this.conn.agent.request(acp.methods.agent.session.prompt, { sessionId, prompt, ...meta });
  }

  cancel(sessionId: string): Promise<void> {
    return this.conn.agent.notify(acp.methods.agent.session.cancel, { sessionId });
  }

  setMode(sessionId: string, modeId: string): Promise<acp.SetSessionModeResponse> {
    return this.conn.agent.request(acp.methods.agent.session.setMode, { sessionId, modeId });
  }

  /** A select option's value id, or a boolean option's value (sent with `type: "boolean"`, as ACP asks). */
  setConfigOption(sessionId: string, configId: string, value: string | boolean): Promise<acp.SetSessionConfigOptionResponse> {
    const params = typeof value === "boolean" ? { sessionId, configId, type: "boolean" as const, value } : { sessionId, configId, value };
    return this.conn.agent.request(acp.methods.agent.session.setConfigOption, params);
  }

  /** Close the connection and end the process (its whole process group). */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.conn.close();
    this.child.stdin?.end();
    const timer = setTimeout(() => killTree(this.child), 1500);
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 3000))]);
    clearTimeout(timer);
    killTree(this.child, "SIGKILL");
  }
}

function tapper(direction: ">" | "<", trace: NonNullable<ConnectOptions["trace"]>): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder();
  return new TransformStream({
    transform(chunk, ctl) {
      trace(direction, decoder.decode(chunk, { stream: true }));
      ctl.enqueue(chunk);
    },
  });
}

function tap(out: WritableStream<Uint8Array>, direction: ">", trace: NonNullable<ConnectOptions["trace"]>): WritableStream<Uint8Array> {
  const t = tapper(direction, trace);
  void t.readable.pipeTo(out).catch(() => undefined);
  return t.writable;
}

function buildClient(name: string, h: ClientHandlers): acp.ClientApp {
  let app = acp
    .client({ name })
    .onNotification(acp.methods.client.session.update, ({ params }) => h.onUpdate(params, Date.now()))
    .onRequest(acp.methods.client.session.requestPermission, ({ params, signal }) => h.requestPermission(params, signal));
  const { readTextFile, writeTextFile, terminal, elicit } = h;
  if (elicit) app = app.onRequest(acp.methods.client.elicitation.create, ({ params, signal }) => elicit.call(h, params, signal));
  if (readTextFile) app = app.onRequest(acp.methods.client.fs.readTextFile, ({ params }) => readTextFile.call(h, params));
  if (writeTextFile)
    app = app.onRequest(acp.methods.client.fs.writeTextFile, async ({ params }) => {
      await writeTextFile.call(h, params);
      return {};
    });
  if (terminal) {
    app = app
      .onRequest(acp.methods.client.terminal.create, ({ params }) => terminal.create(params))
      .onRequest(acp.methods.client.terminal.output, ({ params }) => terminal.output(params))
      .onRequest(acp.methods.client.terminal.waitForExit, ({ params }) => terminal.waitForExit(params))
      .onRequest(acp.methods.client.terminal.kill, ({ params }) => {
        terminal.kill(params);
        return {};
      })
      .onRequest(acp.methods.client.terminal.release, ({ params }) => {
        terminal.release(params);
        return {};
      });
  }
  return app;
}

function killTree(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is already gone: nothing left to end
  }
}
