/**
 * Settings (`acp.*`) → the AgentSpec to launch. The built-in default agent is this project's bridge,
 * `<acp.pythonCommand> -m acp_bridge serve <acp.bridgeArgs…>`; `acp.agents` adds any other ACP agent.
 * `${workspaceFolder}` in a command, argument or env value is replaced by the first workspace folder.
 * The built-in bridge also gets `--state-dir <historyDir>` (unless its arguments already choose one), so
 * session history (`session/list` + `session/load`) works out of the box, and `--remember project` when
 * `acpBridge.rememberAlways` says so; other agents run as configured.
 */
import * as os from "node:os";
import { join } from "node:path";
import * as vscode from "vscode";
import type { AgentSpec } from "../acp/agentSpec";
import { type McpServers, mergeServers, readMcpJson, serverMap, toAcpServers } from "./mcpConfig";

export const SECTION = "acp";
/** Settings about the bridge's session set-up that other ACP clients of the bridge name the same way. */
export const BRIDGE_SECTION = "acpBridge";
export const DEFAULT_AGENT = "acp-bridge";

interface AgentSetting {
  name?: unknown;
  command?: unknown;
  args?: unknown;
  env?: unknown;
}

export function configuredAgentNames(): string[] {
  const names = readAgents().map((a) => a.name);
  return names.includes(DEFAULT_AGENT) ? names : [DEFAULT_AGENT, ...names];
}

export function selectedAgentName(): string {
  return vscode.workspace.getConfiguration(SECTION).get<string>("agent") || DEFAULT_AGENT;
}

/** The built-in bridge (`acp.pythonCommand -m acp_bridge serve`), not an `acp.agents` entry of that name. */
export function isBuiltinAgent(name: string): boolean {
  return name === DEFAULT_AGENT && !readAgents().some((a) => a.name === name);
}

export function followAlongDefault(): boolean {
  return vscode.workspace.getConfiguration(SECTION).get<boolean>("followAlong", true);
}

export function traceEnabled(): boolean {
  return vscode.workspace.getConfiguration(SECTION).get<boolean>("trace", false);
}

export function permissionNotifications(): boolean {
  return vscode.workspace.getConfiguration(SECTION).get<boolean>("permissionNotifications", true);
}

/**
 * `managedPython`: the Python of the bridge the extension installed itself (src/install/bridgeInstall.ts); it
 * runs the built-in agent unless acp.pythonCommand names another Python than the default `python3`.
 */
export function resolveAgent(name: string, workspaceFolder: string | undefined, historyDir?: string, managedPython?: string): AgentSpec {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const sub = (s: string) => (workspaceFolder ? s.split("${workspaceFolder}").join(workspaceFolder) : s);
  const found = readAgents().find((a) => a.name === name);
  if (found) {
    return {
      ...found,
      command: sub(found.command),
      args: found.args.map(sub),
      env: found.env && Object.fromEntries(Object.entries(found.env).map(([k, v]) => [k, sub(v)])),
      cwd: workspaceFolder,
    };
  }
  const configured = cfg.get<string>("pythonCommand");
  const python = configured && configured !== "python3" ? configured : (managedPython ?? (configured || "python3"));
  const extra = (cfg.get<string[]>("bridgeArgs") ?? []).map(sub);
  const stateDir = historyDir && !choosesStateDir(extra) ? ["--state-dir", historyDir] : [];
  return { name: DEFAULT_AGENT, command: sub(python), args: ["-m", "acp_bridge", "serve", ...extra, ...stateDir, ...rememberArgs(extra)], cwd: workspaceFolder };
}

/**
 * `--remember project` when `acpBridge.rememberAlways` is "project": "always" answers then last for every
 * session of the project (kept in the bridge's state directory), not just the session. Arguments that
 * already choose win.
 */
function rememberArgs(extra: readonly string[]): string[] {
  const remember = vscode.workspace.getConfiguration(BRIDGE_SECTION).get<string>("rememberAlways", "session");
  if (remember !== "project" || extra.some((a) => a === "--remember" || a.startsWith("--remember="))) return [];
  return ["--remember", "project"];
}

/** True if `serve` arguments already set --state-dir (also as `--state-dir=DIR` or an argparse abbreviation). */
export function choosesStateDir(args: string[]): boolean {
  return args.some((a) => {
    const flag = a.split("=")[0]!;
    return flag.startsWith("--s") && "--state-dir".startsWith(flag);
  });
}

function readAgents(): AgentSpec[] {
  const raw = vscode.workspace.getConfiguration(SECTION).get<AgentSetting[]>("agents") ?? [];
  return raw.flatMap((a) => {
    if (typeof a.name !== "string" || typeof a.command !== "string") return [];
    const args = Array.isArray(a.args) ? a.args.filter((x): x is string => typeof x === "string") : [];
    const env =
      a.env && typeof a.env === "object"
        ? Object.fromEntries(Object.entries(a.env as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === "string"))
        : undefined;
    return [{ name: a.name, command: a.command, args, env }];
  });
}

/**
 * The user's MCP servers for a new session: each workspace folder's `.vscode/mcp.json` (the first
 * folder's first), then the `acpBridge.mcpServers` setting; a name is used once.
 */
export async function workspaceMcpServers(): Promise<McpServers> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const base = { userHome: os.homedir(), env: process.env };
  const parts: McpServers[] = [];
  for (const f of folders) parts.push(await readMcpJson(join(f.uri.fsPath, ".vscode", "mcp.json"), { ...base, workspaceFolder: f.uri.fsPath }));
  const setting = vscode.workspace.getConfiguration(BRIDGE_SECTION).get<unknown>("mcpServers");
  parts.push(toAcpServers(serverMap(setting), `the ${BRIDGE_SECTION}.mcpServers setting`, { ...base, workspaceFolder: folders[0]?.uri.fsPath }));
  return mergeServers(parts);
}
