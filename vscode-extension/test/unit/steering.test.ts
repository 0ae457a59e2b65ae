/**
 * Steering in the view model: a message sent while the agent works waits in the footer, lands in the
 * conversation where the agent echoes it (once: the view adds no copy of its own), keeps the view
 * "working" until every request is answered, and is said to be refused when the agent refuses it. The
 * composer stays usable while the agent works ("Send now").
 */
import { describe, expect, it } from "vitest";
import { applyEvent } from "../../shared/reducer";
import { landedNote, sendControl, waitingSteers } from "../../shared/steering";
import { stateAfter, toolCall, toolUpdate, update } from "./helpers";

const text = (t: string) => ({ type: "text" as const, text: t });
const link = { type: "resource_link" as const, uri: "file:///ws/a.txt", name: "a.txt" };

function userTexts(s: ReturnType<typeof stateAfter>): string[] {
  return s.timeline.flatMap((i) => (i.type === "user" ? [i.text] : []));
}

describe("steering: a message sent while the agent works", () => {
  it("waits in the footer, then lands once where the agent's echo puts it", () => {
    const s = stateAfter(
      { type: "userPrompt", text: "fix the bug" },
      toolCall("b1", { kind: "execute", status: "in_progress" }),
      { type: "steerSent", messageId: "m1", text: "and run the tests", blocks: [link] },
    );
    expect(waitingSteers(s).map((m) => m.text)).toEqual(["and run the tests"]);
    expect(userTexts(s)).toEqual(["fix the bug"]); // no copy of its own while it waits
    expect(s.running).toBe(true);

    applyEvent(s, toolUpdate("b1", { status: "completed" }));
    const landed = applyEvent(s, update({ sessionUpdate: "user_message_chunk", content: text("and run the tests"), messageId: "m1" }));
    applyEvent(s, update({ sessionUpdate: "user_message_chunk", content: link, messageId: "m1" }));
    applyEvent(s, update({ sessionUpdate: "agent_message_chunk", content: text("Running them.") }));
    expect(landed).toMatchObject({ steers: true, timeline: true });
    expect(waitingSteers(s)).toEqual([]);
    expect(s.timeline.map((i) => i.type)).toEqual(["user", "tool", "user", "agent"]);
    const item = s.timeline[2]!;
    expect(item).toMatchObject({ type: "user", text: "and run the tests", messageId: "m1", steered: true, blocks: [link] });
    expect(landedNote(item)).toMatch(/while the agent worked/);
    expect(landedNote(s.timeline[0]!)).toBeUndefined();
  });

  it("keeps the view working until the turn's prompt and every message are answered", () => {
    const s = stateAfter({ type: "userPrompt", text: "one" }, { type: "steerSent", messageId: "m1", text: "two" });
    applyEvent(s, update({ sessionUpdate: "user_message_chunk", content: text("two"), messageId: "m1" }));
    applyEvent(s, { type: "turnEnded", stopReason: "end_turn" });
    expect(s.running).toBe(true); // "two" still waits for its answer (run next, with --steer-late turn)
    applyEvent(s, { type: "steerAnswered", messageId: "m1", stopReason: "end_turn" });
    expect(s).toMatchObject({ running: false, stopReason: "end_turn", steers: [] });

    // The other order: the message answered first, then the turn's prompt.
    applyEvent(s, { type: "userPrompt", text: "three" });
    applyEvent(s, { type: "steerSent", messageId: "m2", text: "four" });
    applyEvent(s, update({ sessionUpdate: "user_message_chunk", content: text("four"), messageId: "m2" }));
    applyEvent(s, { type: "steerAnswered", messageId: "m2", stopReason: "end_turn" });
    expect(s.running).toBe(true);
    applyEvent(s, { type: "turnEnded", stopReason: "end_turn" });
    expect(s.running).toBe(false);
    expect(userTexts(s)).toEqual(["one", "two", "three", "four"]);
  });

  it("a cancel answers everything cancelled: running cards are marked so once all are answered", () => {
    const s = stateAfter({ type: "userPrompt", text: "long job" }, toolCall("b1", { status: "in_progress" }), { type: "steerSent", messageId: "m1", text: "stop soon" });
    applyEvent(s, { type: "turnEnded", stopReason: "cancelled" });
    expect(s.running).toBe(true);
    const change = applyEvent(s, { type: "steerAnswered", messageId: "m1", stopReason: "cancelled" });
    expect(s).toMatchObject({ running: false, stopReason: "cancelled" });
    expect(change.cards).toEqual(["b1"]);
    expect(s.cards.b1!.status).toBe("cancelled");
    // Never taken: shown where it was answered, since the agent did not say where it went.
    expect(userTexts(s)).toEqual(["long job", "stop soon"]);
  });

  it("an agent that refuses it says so, and the message is not shown as sent", () => {
    const s = stateAfter({ type: "userPrompt", text: "one" }, { type: "steerSent", messageId: "m1", text: "two\nlines" });
    applyEvent(s, { type: "steerAnswered", messageId: "m1", error: "session s1 is already running a prompt" });
    expect(userTexts(s)).toEqual(["one"]);
    const notice = s.timeline.at(-1)!;
    expect(notice).toMatchObject({ type: "notice", severity: "error" });
    expect(notice.type === "notice" && notice.text).toBe("Not sent: “two lines”: session s1 is already running a prompt");
    expect(s.running).toBe(true); // the turn's own prompt still runs
  });

  it("an echo of another message, or a second chunk of a landed one, is an ordinary user chunk", () => {
    const s = stateAfter({ type: "userPrompt", text: "one" }, { type: "steerSent", messageId: "m1", text: "two" });
    applyEvent(s, update({ sessionUpdate: "user_message_chunk", content: text("replayed"), messageId: "other" }));
    expect(waitingSteers(s)).toHaveLength(1);
    expect(s.timeline.at(-1)).toMatchObject({ type: "user", text: "replayed" });
    expect(s.timeline.at(-1)).not.toHaveProperty("steered");
  });

  it("a new session or a restored view drops what waited", () => {
    const s = stateAfter({ type: "userPrompt", text: "one" }, { type: "steerSent", messageId: "m1", text: "two" });
    applyEvent(s, { type: "sessionStarted", sessionId: "s2", cwd: "/ws" });
    expect(s).toMatchObject({ steers: [], running: false, prompting: false });
    applyEvent(s, { type: "steerAnswered", messageId: "m1", stopReason: "cancelled" });
    expect(s.timeline).toEqual([]);
  });
});

describe("steering: the composer", () => {
  it("stays usable while the agent works, as Send now", () => {
    expect(sendControl(false).label).toBe("Send");
    const busy = sendControl(true);
    expect(busy.label).toBe("Send now");
    expect(busy.title).toMatch(/next step/);
    expect(busy.placeholder).toMatch(/next step/);
  });
});
