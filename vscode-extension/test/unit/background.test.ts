/**
 * Background commands in the view model: a `bash` card with `rawInput.run_in_background` stays live
 * through a cancelled turn (the agent stops only the turn), offers Stop while it runs, says "Stopping…"
 * once asked until the agent's update ends it, and says why when stopping failed.
 */
import { describe, expect, it } from "vitest";
import { isBackgroundCommand, stopControl } from "../../shared/background";
import { applyEvent } from "../../shared/reducer";
import { stateAfter, toolCall, toolUpdate } from "./helpers";

const background = (id: string, extra: Record<string, unknown> = {}) =>
  toolCall(id, { kind: "execute", status: "in_progress", rawInput: { command: "npm run dev", run_in_background: true }, ...extra });

describe("background commands", () => {
  it("a cancelled turn cancels its unfinished cards but leaves a running background command live", () => {
    const s = stateAfter({ type: "userPrompt", text: "start the server" }, background("dev"), toolCall("read", { status: "in_progress" }), background("queued", { status: "pending" }));
    const change = applyEvent(s, { type: "turnCancelled" });
    expect(s.cards.dev!.status).toBe("in_progress");
    expect(s.cards.read!.status).toBe("cancelled");
    expect(s.cards.queued!.status).toBe("cancelled"); // never started: nothing runs on
    expect(change.cards).toEqual(["read", "queued"]);
    applyEvent(s, { type: "turnEnded", stopReason: "cancelled" });
    expect(s.cards.dev!.status).toBe("in_progress");
    expect(stopControl(s.cards.dev!)).toBe("stop");
  });

  it("Stop shows only while the command runs, not while its call waits for approval, nor on a foreground command", () => {
    const s = stateAfter(background("dev"), toolCall("fg", { kind: "execute", status: "in_progress", rawInput: { command: "make" } }));
    expect(isBackgroundCommand(s.cards.dev!)).toBe(true);
    expect(isBackgroundCommand(s.cards.fg!)).toBe(false);
    expect(stopControl(s.cards.fg!)).toBe("none");
    applyEvent(s, { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "dev" }, options: [{ optionId: "allow", name: "Allow", kind: "allow_once" }] });
    expect(stopControl(s.cards.dev!)).toBe("none");
    applyEvent(s, { type: "permissionResolved", requestId: "p1", outcome: "allow" });
    expect(stopControl(s.cards.dev!)).toBe("stop");
    applyEvent(s, toolUpdate("dev", { status: "completed" }));
    expect(stopControl(s.cards.dev!)).toBe("none");
  });

  it("asked to stop, the card says so until the agent ends it; a failure is kept to show", () => {
    const s = stateAfter(background("dev"), background("other"));
    expect(applyEvent(s, { type: "stopRequested", toolCallId: "dev" }).cards).toEqual(["dev"]);
    expect(stopControl(s.cards.dev!)).toBe("stopping");
    applyEvent(s, { type: "stopAnswered", toolCallId: "dev" });
    expect(stopControl(s.cards.dev!)).toBe("stopping");
    applyEvent(s, toolUpdate("dev", { status: "failed", _meta: { terminal_exit: { terminal_id: "dev", exit_code: null, signal: "SIGTERM" } } }));
    expect(stopControl(s.cards.dev!)).toBe("none");
    applyEvent(s, { type: "stopRequested", toolCallId: "other" });
    applyEvent(s, { type: "stopAnswered", toolCallId: "other", reason: "Could not stop it: gone" });
    expect(s.cards.other!.stop).toEqual({ state: "failed", reason: "Could not stop it: gone" });
    expect(stopControl(s.cards.other!)).toBe("stop"); // it still runs: Stop again
  });
});
