import { describe, expect, it } from "vitest";
import type { SessionUpdate } from "../../shared/acp";
import { applyEvent } from "../../shared/reducer";
import { modelWaitOf } from "../../shared/waiting";
import { stateAfter, update } from "./helpers";

const waitNotice = (title: string, reason: string, seconds: number): SessionUpdate =>
  ({ sessionUpdate: "notice", severity: reason === "silent" ? "info" : "warning", title, _meta: { acpBridge: { wait: { reason, seconds, attempt: reason === "silent" ? 0 : 1, of: reason === "silent" ? 0 : 3 } } } }) as SessionUpdate;

describe("the model's waits", () => {
  it("a wait notice is the view's waiting line, not a timeline entry, until the model talks", () => {
    const s = stateAfter({ type: "userPrompt", text: "hi" }, update(waitNotice("Rate limited, retrying in 2 s (attempt 1 of 3)", "rate_limited", 2)));
    expect(s.waiting).toEqual({ text: "Rate limited, retrying in 2 s (attempt 1 of 3)", reason: "rate_limited" });
    expect(s.timeline.map((i) => i.type)).toEqual(["user"]);
    const later = applyEvent(s, update(waitNotice("Waiting for the model for 40 s", "silent", 40)));
    expect(later.waiting).toBe(true);
    expect(s.waiting?.text).toBe("Waiting for the model for 40 s");
    const talked = applyEvent(s, update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hello" } } as SessionUpdate));
    expect(talked.waiting).toBe(true);
    expect(s.waiting).toBeUndefined();
  });

  it("the turn's end or cancel ends the wait", () => {
    for (const end of [{ type: "turnEnded", stopReason: "cancelled" } as const, { type: "turnCancelled" } as const]) {
      const s = stateAfter({ type: "userPrompt", text: "hi" }, update(waitNotice("Waiting for the model for 20 s", "silent", 20)), end);
      expect(s.waiting).toBeUndefined();
    }
  });

  it("other notices stay notices", () => {
    const plain = { sessionUpdate: "notice", severity: "warning", title: "Could not compact" } as SessionUpdate;
    expect(modelWaitOf(plain)).toBeUndefined();
    const s = stateAfter(update(plain));
    expect(s.waiting).toBeUndefined();
    expect(s.timeline.map((i) => i.type)).toEqual(["notice"]);
  });
});
