/**
 * A throwaway ACP agent for tests of paths the real bridge does not take: ACP `terminal/*` (the bridge
 * reports shell output through Zed's `_meta` convention instead) and an agent that crashes.
 * Prompts: "terminal <command line>" runs it in a client terminal; "crash" exits with code 3;
 * "hang" waits until cancelled. Anything else answers "ok". It also offers modes, a model option and
 * session history (list + load, replaying each session's messages; fork copies them), for the
 * session-control tests.
 * FAKE_AGENT_STATE=<file> keeps that history across processes (a reopened window); FAKE_AGENT_RESUME=1
 * offers `session/resume` (no replay) instead of `session/load`.
 * Login: with FAKE_AGENT_LOGIN=<file>, prompts answer `auth_required` until that file exists, and the
 * agent offers a terminal login (to clients that can run one): `<agent> --login` creates it and exits 0.
 * "notice" sends a warning notice; "blocks" answers with the prompt's other blocks (type, and text or
 * URI), as JSON; "setup" answers with the `mcpServers` and `additionalDirectories` the
 * session was opened with (new, load, resume or fork), as JSON; "meta" answers with the prompt's `_meta`.
 * A prompt while another runs is answered on its own (this agent does not steer, nor echo it).
 * Titles: no rename method, unless FAKE_AGENT_TITLE=alias (the bridge's older `_acpBridge/setSessionTitle`,
 * answered `{title: "alias: <title>"}`) or FAKE_AGENT_TITLE=acp (`sessionCapabilities.title` advertised, and
 * `session/set_title` answered `{title: "acp: <title>"}`), so a test tells which one the client used.
 * A client that advertises `session.configOptions.boolean` also gets a boolean option, `auto`, set with
 * `type: "boolean"`.
 * Checkpoints (the bridge's contract, FAKE_AGENT_CHECKPOINTS=1): `agentCapabilities._meta.acpBridge.checkpoints`,
 * each prompt's answer numbers its turn (`_meta.acpBridge.turn`), `_acpBridge/rewind` answers "conflict"
 * (`/ws/mine.txt` changed since) unless `force`, then restores `/ws/a.txt` and removes `/ws/new.txt`;
 * an unknown turn is -32602. `_acpBridge/revertFile` restores the path it names. Without the variable
 * these methods are not found. `_acpBridge/killBackground` kills `bash-1` (and says so), any other id is
 * -32602.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const loginFile = process.env.FAKE_AGENT_LOGIN;
if (process.argv.includes("--login")) {
  if (loginFile) writeFileSync(loginFile, "logged in");
  process.exit(loginFile ? 0 : 1);
}
let terminalAuth = false;
const setups = new Map<string, { mcpServers: unknown; additionalDirectories: unknown }>();
const keepSetup = (sessionId: string, p: { mcpServers?: unknown; additionalDirectories?: unknown }) => setups.set(sessionId, { mcpServers: p.mcpServers ?? null, additionalDirectories: p.additionalDirectories ?? null });

const cancelled = new Map<string, () => void>();
const stateFile = process.env.FAKE_AGENT_STATE;
const resumes = process.env.FAKE_AGENT_RESUME === "1";
const titles = process.env.FAKE_AGENT_TITLE;
const checkpoints = process.env.FAKE_AGENT_CHECKPOINTS === "1";
const turns = new Map<string, number>();
let booleans = false;
let auto = true;
const history = new Map<string, { cwd: string; prompts: string[] }>(stateFile && existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : []);
const save = () => {
  if (stateFile) writeFileSync(stateFile, JSON.stringify([...history]));
};
const modes = { currentModeId: "ask", availableModes: [{ id: "ask", name: "Ask" }, { id: "code", name: "Code" }] };
let model = "small";
const configOptions = () => [
  { id: "model", name: "Model", category: "model", type: "select" as const, currentValue: model, options: [{ value: "small", name: "Small" }, { value: "large", name: "Large" }] },
  ...(booleans ? [{ id: "auto", name: "Auto", type: "boolean" as const, currentValue: auto }] : []),
];

acp
  .agent({ name: "fake-agent" })
  .onRequest(acp.methods.agent.initialize, ({ params }) => {
    terminalAuth = params.clientCapabilities?.auth?.terminal === true;
    booleans = params.clientCapabilities?.session?.configOptions?.boolean != null;
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { ...(checkpoints ? { _meta: { acpBridge: { checkpoints: true } } } : {}), loadSession: !resumes, sessionCapabilities: { list: {}, delete: {}, fork: {}, additionalDirectories: {}, ...(resumes ? { resume: {} } : {}), ...(titles === "acp" ? { title: {} } : {}) } },
      agentInfo: { name: "fake-agent", version: "0" },
      authMethods: loginFile && terminalAuth ? [{ type: "terminal" as const, id: "fake-login", name: "Log in to the fake agent", args: ["--login"] }] : [],
    };
  })
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    const sessionId = `fake-${history.size + 1}-${Date.now()}`;
    history.set(sessionId, { cwd: params.cwd, prompts: [] });
    save();
    keepSetup(sessionId, params);
    return { sessionId, modes, configOptions: configOptions() };
  })
  .onRequest(acp.methods.agent.session.list, () => ({
    sessions: [...history].map(([sessionId, h]) => ({ sessionId, cwd: h.cwd, title: h.prompts[0] ?? "(empty)" })),
  }))
  .onRequest(acp.methods.agent.session.load, async ({ params, client }) => {
    keepSetup(params.sessionId, params);
    for (const text of history.get(params.sessionId)?.prompts ?? []) {
      await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "user_message_chunk", content: { type: "text", text } } });
      await client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: "ok" } } });
    }
    return { modes, configOptions: configOptions() };
  })
  .onRequest(acp.methods.agent.session.resume, ({ params }) => {
    if (!history.has(params.sessionId)) throw acp.RequestError.resourceNotFound(params.sessionId);
    keepSetup(params.sessionId, params);
    return { modes, configOptions: configOptions() };
  })
  // `session/fork` is unstable in ACP v1: no typed method in the SDK's stable entry point.
  .onRequest("session/fork", (raw: unknown) => raw as { sessionId: string; cwd: string; mcpServers?: unknown; additionalDirectories?: unknown }, ({ params }) => {
    const source = history.get(params.sessionId);
    if (!source) throw acp.RequestError.resourceNotFound(params.sessionId);
    const sessionId = `fake-${history.size + 1}-${Date.now()}`;
    history.set(sessionId, { cwd: params.cwd, prompts: [...source.prompts] });
    save();
    keepSetup(sessionId, params);
    return { sessionId, modes, configOptions: configOptions() };
  })
  .onRequest(acp.methods.agent.session.delete, ({ params }) => {
    history.delete(params.sessionId);
    save();
    return {};
  })
  .onRequest(acp.methods.agent.session.setMode, ({ params }) => {
    modes.currentModeId = params.modeId;
    return {};
  })
  .onRequest(acp.methods.agent.session.setConfigOption, ({ params }) => {
    if (params.configId === "model" && typeof params.value === "string") model = params.value;
    if (params.configId === "auto" && "type" in params && params.type === "boolean") auto = params.value;
    return { configOptions: configOptions() };
  })
  .onRequest("_acpBridge/setSessionTitle", (raw: unknown) => raw as { sessionId: string; title: string }, ({ params }) => {
    if (titles !== "alias") throw acp.RequestError.methodNotFound("_acpBridge/setSessionTitle");
    return { title: `alias: ${params.title}` };
  })
  .onRequest("session/set_title", (raw: unknown) => raw as { sessionId: string; title: string }, ({ params }) => {
    if (titles !== "acp") throw acp.RequestError.methodNotFound("session/set_title");
    return { title: `acp: ${params.title}` };
  })
  .onRequest("_acpBridge/rewind", (raw: unknown) => raw as { sessionId: string; turn: number; force?: boolean }, ({ params }) => {
    if (!checkpoints) throw acp.RequestError.methodNotFound("_acpBridge/rewind");
    if (!(params.turn >= 1 && params.turn <= (turns.get(params.sessionId) ?? 0))) throw acp.RequestError.invalidParams(undefined, `unknown turn ${params.turn}`);
    if (!params.force) return { status: "conflict", restored: [], conflicts: [{ path: "/ws/mine.txt", reason: "changed since the turn, not by the agent" }] };
    return { status: "restored", restored: [{ path: "/ws/a.txt", action: "restored" }, { path: "/ws/new.txt", action: "removed" }], conflicts: [] };
  })
  .onRequest("_acpBridge/revertFile", (raw: unknown) => raw as { sessionId: string; toolCallId: string; path: string }, ({ params }) => {
    if (!checkpoints) throw acp.RequestError.methodNotFound("_acpBridge/revertFile");
    return { status: "restored", restored: [{ path: params.path, action: "restored" }], conflicts: [] };
  })
  .onRequest("_acpBridge/killBackground", (raw: unknown) => raw as { sessionId: string; bashId: string }, ({ params }) => {
    if (params.bashId !== "bash-1") throw acp.RequestError.invalidParams(undefined, `no background command ${params.bashId}`);
    return { killed: true };
  })
  .onNotification(acp.methods.agent.session.cancel, ({ params }) => cancelled.get(params.sessionId)?.())
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    // The user's text is the first block; attachments and client notes follow it.
    const first = params.prompt[0];
    const text = first?.type === "text" ? first.text : "";
    const sessionId = params.sessionId;
    history.get(sessionId)?.prompts.push(text);
    const turn = (turns.get(sessionId) ?? 0) + 1;
    turns.set(sessionId, turn);
    const numbered = checkpoints ? { _meta: { acpBridge: { turn } } } : {};
    save();
    const say = (t: string) => client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } } });
    if (text === "crash") process.exit(3);
    if (loginFile && !existsSync(loginFile)) throw acp.RequestError.authRequired(undefined, "no key: log in first");
    if (text === "blocks") {
      await say(JSON.stringify(params.prompt.slice(1).map((b) => (b.type === "text" ? { type: b.type, text: b.text } : b.type === "resource_link" ? { type: b.type, uri: b.uri } : { type: b.type }))));
      return { stopReason: "end_turn" as const };
    }
    if (text === "meta") {
      await say(JSON.stringify(params._meta ?? null));
      return { stopReason: "end_turn" as const };
    }
    if (text === "setup") {
      await say(JSON.stringify(setups.get(sessionId) ?? null));
      return { stopReason: "end_turn" as const };
    }
    if (text === "notice") {
      await client.notify(acp.methods.client.session.update, { sessionId, update: { sessionUpdate: "notice", severity: "warning", title: "Heads up", description: "the context is nearly full" } });
    }
    if (text === "hang") {
      await new Promise<void>((resolve) => cancelled.set(sessionId, resolve));
      return { stopReason: "cancelled" as const };
    }
    if (text.startsWith("terminal ")) {
      const command = text.slice("terminal ".length);
      const term = await client.createTerminal({ sessionId, command, outputByteLimit: 1000 });
      await client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "tool_call", toolCallId: "term", title: command, kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: term.id }] },
      });
      const exit = await term.waitForExit();
      const out = await term.currentOutput();
      await term.release();
      await client.notify(acp.methods.client.session.update, {
        sessionId,
        update: { sessionUpdate: "tool_call_update", toolCallId: "term", status: exit.exitCode === 0 ? "completed" : "failed", rawOutput: { output: out.output, exitCode: exit.exitCode } },
      });
      await say(`exit ${exit.exitCode}`);
      return { stopReason: "end_turn" as const };
    }
    await say("ok");
    return { stopReason: "end_turn" as const, ...numbered };
  })
  .connect(acp.ndJsonStream(Writable.toWeb(process.stdout) as WritableStream<Uint8Array>, Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>));
