/**
 * The agent's word that the model keeps the prompt waiting: acp-bridge sends a `notice` whose
 * `_meta.acpBridge.wait` says why (`rate_limited`, `server_error`, `unreachable` before a retry; `silent`
 * when the model has sent nothing for a while), for how many seconds, and which retry of how many. The
 * view shows it as one line with Cancel while it lasts, not as a toast or a timeline entry.
 */
import type { SessionUpdate } from "./acp";

export interface ModelWait {
  reason: string;
  seconds: number;
  attempt: number;
  of: number;
}

/** The wait a notice reports, if it is one. */
export function modelWaitOf(update: SessionUpdate): ModelWait | undefined {
  if (update.sessionUpdate !== "notice") return undefined;
  const bridge = (update._meta as Record<string, unknown> | null | undefined)?.acpBridge;
  const wait = typeof bridge === "object" && bridge !== null ? (bridge as { wait?: unknown }).wait : undefined;
  if (typeof wait !== "object" || wait === null) return undefined;
  const w = wait as Record<string, unknown>;
  if (typeof w.reason !== "string" || typeof w.seconds !== "number") return undefined;
  return { reason: w.reason, seconds: w.seconds, attempt: typeof w.attempt === "number" ? w.attempt : 0, of: typeof w.of === "number" ? w.of : 0 };
}

/** Updates that mean the model is talking again (the wait is over). */
export function endsWait(update: SessionUpdate): boolean {
  return ["agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"].includes(update.sessionUpdate);
}
