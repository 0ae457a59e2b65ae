/**
 * Integration harness: the extension's ACP client module (AgentConnection), store and permission broker
 * against a real agent subprocess, with plain-Node fs handlers in place of the editor.
 * The bridge command is ACP_BRIDGE_CMD if set, else <repo>/.venv/bin/acp-bridge.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type AgentSpec, splitCommandLine } from "../../src/acp/agentSpec";
import { AgentConnection, type SessionSetup } from "../../src/acp/connection";
import { TerminalManager } from "../../src/acp/terminals";
import { sliceLines } from "../../src/acp/textLines";
import { PermissionBroker } from "../../src/review/permissions";
import { QuestionBroker } from "../../src/review/questions";
import { SessionStore } from "../../src/session/store";

export const EXT_DIR = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const REPO = resolve(EXT_DIR, "..");
export const FIXTURES = join(EXT_DIR, "test", "fixtures");

export function bridgeCommand(): string[] {
  const env = process.env.ACP_BRIDGE_CMD;
  if (env) return splitCommandLine(env);
  return [join(REPO, ".venv", "bin", "acp-bridge")];
}

export function bridgeSpec(script: string, cwd: string): AgentSpec {
  const [command, ...args] = bridgeCommand();
  if (!command || (command.includes("/") && !existsSync(command))) throw new Error(`bridge not found: ${command} (set ACP_BRIDGE_CMD)`);
  return { name: "acp-bridge", command, args: [...args, "serve", "--model", `scripted:${join(FIXTURES, script)}`], cwd };
}

/** The same agent keeping its session logs in `dir` (what the extension passes for the built-in bridge). */
export function withStateDir(spec: AgentSpec, dir: string): AgentSpec {
  return { ...spec, args: [...spec.args, "--state-dir", dir] };
}

export function workspace(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "acp-ws-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

export interface Harness {
  conn: AgentConnection;
  store: SessionStore;
  permissions: PermissionBroker;
  questions: QuestionBroker;
  /** The session this harness works on: a new one from connect(), else set by the test. */
  sessionId: string;
  writes: string[];
  stderr: () => string;
  close(): Promise<void>;
}

/** A client connection to the agent with a fresh store, and no session yet (sessionId is ""). */
export async function open(spec: AgentSpec): Promise<Harness> {
  const store = new SessionStore(spec.name);
  const permissions = new PermissionBroker(store, undefined);
  const questions = new QuestionBroker(store);
  const terminals = new TerminalManager({
    started: (terminalId, command, c) => store.dispatch({ type: "terminalStarted", terminalId, command, cwd: c }),
    output: (terminalId, data) => store.dispatch({ type: "terminalOutput", terminalId, data }),
    exited: (terminalId, exitCode, signal) => store.dispatch({ type: "terminalExited", terminalId, exitCode, signal }),
  });
  const writes: string[] = [];
  let stderr = "";
  const conn = await AgentConnection.start(
    spec,
    {
      onUpdate: (n, t0) => store.dispatch({ type: "update", update: n.update }, t0),
      requestPermission: (p, signal) => permissions.request(p, signal),
      elicit: (p, signal) => questions.request(p, signal),
      readTextFile: async (p) => ({ content: sliceLines(readFileSync(p.path, "utf8"), p.line, p.limit) }),
      writeTextFile: async (p) => {
        writes.push(p.path);
        writeFileSync(p.path, p.content);
      },
      terminal: terminals,
    },
    { clientName: "acp-bridge-vscode-test", clientVersion: "0", onStderr: (t) => (stderr += t) },
  );
  return {
    conn,
    store,
    permissions,
    questions,
    sessionId: "",
    writes,
    stderr: () => stderr,
    close: async () => {
      terminals.disposeAll();
      await conn.dispose();
    },
  };
}

/** open() plus a new session in `cwd` (with `setup`: MCP servers, extra roots), as the extension starts one. */
export async function connect(spec: AgentSpec, cwd: string, setup: SessionSetup = {}): Promise<Harness> {
  const h = await open(spec);
  const { sessionId } = await h.conn.newSession(cwd, setup);
  h.sessionId = sessionId;
  h.store.dispatch({ type: "sessionStarted", sessionId, cwd });
  return h;
}

/** Resolves when `check` passes against the store, polling every 20 ms. */
export async function until(what: string, check: () => boolean, ms = 15000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Answers every permission question with the option of `kind` as soon as it appears. */
export function autoAnswer(h: Harness, kind: "allow_once" | "allow_always" | "reject_once" | "reject_always"): () => void {
  const sub = h.store.listen((event) => {
    if (event.type !== "permissionRequested") return;
    const option = event.options.find((o) => o.kind === kind);
    if (option) setTimeout(() => h.permissions.answer(event.requestId, option.optionId), 0);
  });
  return () => sub.dispose();
}
