/**
 * The user's MCP servers for a session: VS Code's own `.vscode/mcp.json` format
 * (`{"servers": {name: {type: "stdio", command, args, env} | {type: "http" | "sse", url, headers}}}`, as
 * documented at https://code.visualstudio.com/docs/copilot/reference/mcp-configuration; comments and
 * trailing commas allowed) and the `acpBridge.mcpServers` setting (the same `servers` map, bare or
 * wrapped), turned into ACP `mcpServers` entries for session/new, load and resume.
 *
 * `${workspaceFolder}`, `${userHome}` and `${env:NAME}` are replaced. A server whose configuration
 * needs `${input:…}` (a value VS Code would prompt for) is skipped, with the reason for the view, rather
 * than started half-configured; so is an entry that is not a server. Pure, no `vscode`: unit-tested.
 */
import { readFile } from "node:fs/promises";
import type { McpServer } from "@agentclientprotocol/sdk";

export interface SkippedServer {
  name: string;
  /** Where it was configured ("/ws/.vscode/mcp.json", "settings"). */
  source: string;
  reason: string;
}

export interface McpServers {
  servers: McpServer[];
  skipped: SkippedServer[];
}

export interface Variables {
  workspaceFolder?: string;
  userHome?: string;
  env?: Record<string, string | undefined>;
}

/** The `servers` map of a config (a mcp.json file's object, or the setting's value). */
export function serverMap(config: unknown): Record<string, unknown> {
  if (!isRecord(config)) return {};
  if (isRecord(config.servers)) return config.servers;
  // The setting may be the map itself.
  return Object.fromEntries(Object.entries(config).filter(([, v]) => isRecord(v)));
}

/** The ACP entries of `map`; each skipped server says why. */
export function toAcpServers(map: Record<string, unknown>, source: string, vars: Variables): McpServers {
  const out: McpServers = { servers: [], skipped: [] };
  for (const [name, raw] of Object.entries(map)) {
    const skip = (reason: string) => out.skipped.push({ name, source, reason });
    if (!isRecord(raw)) {
      skip("its entry is not an object");
      continue;
    }
    const inputs = inputVariables(raw);
    if (inputs.length > 0) {
      skip(`its configuration needs ${inputs.map((i) => `\${input:${i}}`).join(", ")}, which only VS Code's own MCP support can ask for`);
      continue;
    }
    const sub = (s: string) => substitute(s, vars);
    const type = typeof raw.type === "string" ? raw.type : typeof raw.command === "string" ? "stdio" : typeof raw.url === "string" ? "http" : undefined;
    if (type === "stdio") {
      if (typeof raw.command !== "string" || !raw.command) {
        skip("a stdio server needs a `command`");
        continue;
      }
      out.servers.push({ name, command: sub(raw.command), args: strings(raw.args).map(sub), env: pairs(raw.env).map(([k, v]) => ({ name: k, value: sub(v) })) });
    } else if (type === "http" || type === "sse") {
      if (typeof raw.url !== "string" || !raw.url) {
        skip(`an ${type} server needs a \`url\``);
        continue;
      }
      out.servers.push({ type, name, url: sub(raw.url), headers: pairs(raw.headers).map(([k, v]) => ({ name: k, value: sub(v) })) });
    } else {
      skip(`its type ${JSON.stringify(raw.type)} is not stdio, http or sse`);
    }
  }
  return out;
}

/** A `.vscode/mcp.json` file's servers; a missing file has none, an unreadable one is one skipped entry. */
export async function readMcpJson(path: string, vars: Variables): Promise<McpServers> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return { servers: [], skipped: [] };
  }
  let config: unknown;
  try {
    config = JSON.parse(stripJsonc(text));
  } catch (err) {
    return { servers: [], skipped: [{ name: "(all)", source: path, reason: `the file is not valid JSON: ${(err as Error).message}` }] };
  }
  return toAcpServers(serverMap(config), path, vars);
}

/** Several sources in order of precedence (a workspace folder's file, then the setting): each name once, the first source's entry wins. */
export function mergeServers(parts: readonly McpServers[]): McpServers {
  const out: McpServers = { servers: [], skipped: [] };
  const seen = new Set<string>();
  for (const p of parts) {
    const servers = p.servers.filter((s) => !seen.has(s.name));
    const skipped = p.skipped.filter((s) => !seen.has(s.name));
    out.servers.push(...servers);
    out.skipped.push(...skipped);
    for (const s of [...servers, ...skipped]) seen.add(s.name);
  }
  return out;
}

/** JSON with comments (`//`, `/* *\/`) and trailing commas → JSON. Strings are left as they are. */
export function stripJsonc(text: string): string {
  let out = "";
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"') {
      const start = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === "\\") i++;
      out += text.slice(start, i + 1);
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n") i++;
      out += "\n";
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end === -1 ? text.length : end + 1;
    } else out += c;
  }
  return out.replace(/,(\s*[}\]])/g, "$1");
}

const VARIABLE = /\$\{(workspaceFolder|userHome|env:[^}]+)\}/g;

function substitute(s: string, vars: Variables): string {
  return s.replace(VARIABLE, (whole, name: string) => {
    if (name === "workspaceFolder") return vars.workspaceFolder ?? whole;
    if (name === "userHome") return vars.userHome ?? whole;
    return vars.env?.[name.slice("env:".length)] ?? "";
  });
}

/** The `${input:ID}` variables anywhere in a server's configuration. */
function inputVariables(raw: Record<string, unknown>): string[] {
  const found = new Set<string>();
  for (const m of JSON.stringify(raw).matchAll(/\$\{input:([^}]+)\}/g)) found.add(m[1]!);
  return [...found];
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

function pairs(v: unknown): Array<[string, string]> {
  if (!isRecord(v)) return [];
  return Object.entries(v).flatMap(([k, x]) => (typeof x === "string" ? [[k, x] as [string, string]] : typeof x === "number" || typeof x === "boolean" ? [[k, String(x)] as [string, string]] : []));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
