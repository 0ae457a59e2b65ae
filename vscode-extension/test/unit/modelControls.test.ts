/**
 * Model controls in the view model: config option pickers placed by category, the context gauge and
 * cost (incomplete when some responses had no price), one timeline entry per compaction (chunks, then
 * the final summary in their place), and the terminal login's command line.
 */
import { describe, expect, it } from "vitest";
import type { SessionConfigOption } from "../../shared/acp";
import { pickerOptions, toggleOptions } from "../../shared/configOptions";
import type { CompactionView } from "../../shared/state";
import { compact, compactionTitle, money, usageText } from "../../shared/usage";
import { isAuthRequired, loginInvocation, terminalMethods } from "../../src/acp/auth";
import { applyEvent } from "../../shared/reducer";
import { stateAfter, update } from "./helpers";

const select = (id: string, category: string | null, value = "a"): SessionConfigOption => ({ id, name: id, category, type: "select", currentValue: value, options: [{ value: "a", name: "A" }] });
const text = (t: string) => ({ type: "text" as const, text: t });

describe("config option pickers", () => {
  it("places the pickers by category: mode, model, thought level, then the rest in the agent's order", () => {
    const options = [select("effort", "thought_level"), select("x", null), select("model", "model"), select("mode", "mode"), select("y", "_custom")];
    expect(pickerOptions(options).map((o) => o.id)).toEqual(["mode", "model", "effort", "x", "y"]);
  });

  it("shows a boolean option as a toggle, never as a picker", () => {
    const auto: SessionConfigOption = { id: "auto_compact", name: "Auto-compact", type: "boolean", currentValue: false };
    const options = [select("mode", "mode"), auto, select("model", "model")];
    expect(pickerOptions(options).map((o) => o.id)).toEqual(["mode", "model"]);
    expect(toggleOptions(options)).toEqual([auto]);
    const s = stateAfter(update({ sessionUpdate: "config_option_update", configOptions: options }));
    expect(toggleOptions(s.configOptions).map((o) => o.currentValue)).toEqual([false]);
  });

  it("replaces the whole set on config_option_update", () => {
    const s = stateAfter(update({ sessionUpdate: "config_option_update", configOptions: [select("mode", "mode"), select("model", "model")] }), update({ sessionUpdate: "config_option_update", configOptions: [select("model", "model", "b")] }));
    expect(s.configOptions.map((o) => [o.id, o.currentValue])).toEqual([["model", "b"]]);
  });
});

describe("context gauge and cost", () => {
  it("says tokens in context of the window and the share in use", () => {
    expect(usageText({ used: 12_345, size: 128_000 })).toEqual({ tokens: "12.3k of 128k tokens", percent: 10 });
    expect(usageText({ used: 2_000_000, size: 1_000_000 }).percent).toBe(100);
    expect(compact(950)).toBe("950");
    expect(compact(1_048_576)).toBe("1.05M");
  });

  it("shows the cost only when the agent reports one, and says when it is incomplete", () => {
    const s = stateAfter(update({ sessionUpdate: "usage_update", used: 10, size: 100, cost: { amount: 0.0123, currency: "USD" }, _meta: { acpBridge: { unpricedResponses: 2 } } }));
    expect(s.usage).toEqual({ used: 10, size: 100, cost: { amount: 0.0123, currency: "USD" }, unpriced: 2 });
    const t = usageText(s.usage!);
    expect(t.cost).toBe("$0.0123");
    expect(t.incomplete).toMatch(/2 model responses have no known price/);
    const plain = stateAfter(update({ sessionUpdate: "usage_update", used: 10, size: 100 }));
    expect(usageText(plain.usage!).cost).toBeUndefined();
  });

  it("formats money in its currency, and other units plainly", () => {
    expect(money(1.2, "EUR")).toBe("€1.20");
    expect(money(3, "credits")).toBe("3 credits");
  });
});

describe("compaction in the timeline", () => {
  const compaction = (u: Record<string, unknown>) => update({ sessionUpdate: "compaction_update", ...u } as never);
  const chunk = (id: string, t: string) => update({ sessionUpdate: "compaction_summary_chunk", compactionId: id, content: text(t) });

  it("is one entry per compactionId: chunks append, the final summary replaces them", () => {
    const s = stateAfter(
      update({ sessionUpdate: "agent_message_chunk", content: text("before") }),
      compaction({ compactionId: "cmp_1", status: "in_progress", _meta: { acpBridge: { trigger: "command" } } }),
      chunk("cmp_1", "Sum"),
      chunk("cmp_1", "mary"),
    );
    const item = s.timeline[1] as CompactionView;
    expect(item).toMatchObject({ type: "compaction", compactionId: "cmp_1", status: "in_progress", summary: [text("Sum"), text("mary")] });
    expect(compactionTitle(item)).toBe("Compacting the conversation (/compact)…");
    stateAfterOn(s, compaction({ compactionId: "cmp_1", status: "completed", summary: [text("The summary")], _meta: { acpBridge: { trigger: "command", summarizedMessages: 12, keptMessages: 4 } } }));
    expect(s.timeline.filter((i) => i.type === "compaction")).toHaveLength(1);
    expect(item.summary).toEqual([text("The summary")]);
    expect(compactionTitle(item)).toBe("Conversation compacted (/compact): 12 earlier messages summarized, 4 kept");
  });

  it("a chunk for an unknown id starts an in-progress entry; failed and cancelled say so", () => {
    const s = stateAfter(chunk("cmp_2", "x"), compaction({ compactionId: "cmp_3", status: "in_progress" }));
    expect(s.timeline.map((i) => (i.type === "compaction" ? `${i.compactionId}:${i.status}` : i.type))).toEqual(["cmp_2:in_progress", "cmp_3:in_progress"]);
    stateAfterOn(s, compaction({ compactionId: "cmp_2", status: "failed", error: "model down" }), compaction({ compactionId: "cmp_3", status: "cancelled" }));
    expect(compactionTitle(s.timeline[0] as CompactionView)).toBe("Compaction failed: model down");
    expect(compactionTitle(s.timeline[1] as CompactionView)).toBe("Compaction cancelled");
  });
});

describe("terminal login", () => {
  it("runs the agent's own command with the method's args appended and its env on top", () => {
    const spec = { name: "acp-bridge", command: "/usr/bin/python3", args: ["-m", "acp_bridge", "serve", "--state-dir", "/s"], env: { A: "1" }, cwd: "/ws" };
    const [method] = terminalMethods([{ id: "agent", name: "Stored key" }, { type: "terminal", id: "login", name: "Log in", args: ["--login"], env: { B: "2" } }]);
    expect(method?.id).toBe("login");
    expect(loginInvocation(spec, method!)).toEqual({ command: "/usr/bin/python3", args: ["-m", "acp_bridge", "serve", "--state-dir", "/s", "--login"], env: { A: "1", B: "2" }, cwd: "/ws" });
  });

  it("recognises auth_required (-32000)", () => {
    expect(isAuthRequired({ code: -32000, message: "log in" })).toBe(true);
    expect(isAuthRequired({ code: -32603 })).toBe(false);
    expect(isAuthRequired(new Error("x"))).toBe(false);
  });
});

function stateAfterOn(s: ReturnType<typeof stateAfter>, ...events: Parameters<typeof stateAfter>): void {
  for (const e of events) applyEvent(s, e);
}
