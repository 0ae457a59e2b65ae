/**
 * Logging in to an agent that answers `auth_required` (JSON-RPC -32000): the agent's `terminal` auth
 * methods (ACP `AuthMethodTerminal`: the client runs the agent's own command with the method's `args`
 * appended and its `env` added, in an interactive terminal; exit status 0 means logged in). Pure, no
 * `vscode`: unit-tested.
 */
import type { AuthMethod, AuthMethodTerminal } from "@agentclientprotocol/sdk";
import type { AgentSpec } from "./agentSpec";

/** ACP's `auth_required` error code. */
export const AUTH_REQUIRED = -32000;

export function isAuthRequired(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { code?: unknown }).code === AUTH_REQUIRED;
}

export type TerminalMethod = AuthMethodTerminal & { type: "terminal" };

export function terminalMethods(methods: readonly AuthMethod[] | null | undefined): TerminalMethod[] {
  return (methods ?? []).filter((m): m is TerminalMethod => "type" in m && m.type === "terminal");
}

export interface LoginInvocation {
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
}

/** The agent's own invocation with the method's arguments appended and its environment on top. */
export function loginInvocation(spec: AgentSpec, method: AuthMethodTerminal): LoginInvocation {
  return { command: spec.command, args: [...spec.args, ...(method.args ?? [])], env: { ...spec.env, ...method.env }, cwd: spec.cwd };
}
