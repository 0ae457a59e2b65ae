/** Builders for session events used across unit tests. */
import type { SessionUpdate } from "../../shared/acp";
import type { SessionEvent } from "../../shared/events";
import { applyEvent } from "../../shared/reducer";
import { emptyState, type SessionState } from "../../shared/state";

export function update(u: SessionUpdate): SessionEvent {
  return { type: "update", update: u };
}

export function stateAfter(...events: SessionEvent[]): SessionState {
  const s = emptyState("test");
  applyEvent(s, { type: "sessionStarted", sessionId: "s1", cwd: "/ws" });
  for (const e of events) applyEvent(s, e);
  return s;
}

export function toolCall(id: string, extra: Record<string, unknown> = {}): SessionEvent {
  return update({ sessionUpdate: "tool_call", toolCallId: id, title: `call ${id}`, ...extra } as SessionUpdate);
}

export function toolUpdate(id: string, extra: Record<string, unknown> = {}): SessionEvent {
  return update({ sessionUpdate: "tool_call_update", toolCallId: id, ...extra } as SessionUpdate);
}
