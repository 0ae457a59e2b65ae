import { describe, expect, it } from "vitest";
import type { PermissionOption } from "../../shared/acp";
import { answerText, approvalLayout, cardOutcome, choiceLabel, isPlanCard, pendingApprovals, startsCollapsed, terminalBadge } from "../../shared/cardView";
import { stateAfter, toolCall, toolUpdate } from "./helpers";

const options: PermissionOption[] = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
  { optionId: "allow_always", name: "Always allow `edit` on app.txt (this session)", kind: "allow_always" },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  { optionId: "reject_always", name: "Always reject `edit` on app.txt (this session)", kind: "reject_always" },
];

function bash(exit: Record<string, unknown>, status = "completed") {
  return stateAfter(
    toolCall("b", { kind: "execute", status: "in_progress", _meta: { terminal_info: { terminal_id: "b" } } }),
    toolUpdate("b", { status, _meta: { terminal_exit: { terminal_id: "b", ...exit } } }),
  );
}

describe("card outcome", () => {
  it("a command that exits non-zero shows its exit status, not a green completed", () => {
    const s = bash({ exit_code: 1, signal: null });
    expect(cardOutcome(s.cards.b!, s.terminals)).toEqual({ text: "exit 1", tone: "bad" });
    const ok = bash({ exit_code: 0, signal: null });
    expect(cardOutcome(ok.cards.b!, ok.terminals)).toEqual({ text: "completed", tone: "ok" });
  });

  it("a command the bridge ended failed for its non-zero exit shows the exit; a stopped one says failed", () => {
    const ran = stateAfter(
      toolCall("b", { kind: "execute", status: "in_progress", _meta: { terminal_info: { terminal_id: "b" } } }),
      toolUpdate("b", { status: "failed", rawOutput: { isError: false, exitCode: 1, signal: null }, _meta: { terminal_exit: { terminal_id: "b", exit_code: 1, signal: null } } }),
    );
    expect(cardOutcome(ran.cards.b!, ran.terminals)).toEqual({ text: "exit 1", tone: "bad" });
    const stopped = stateAfter(
      toolCall("b", { kind: "execute", status: "in_progress", _meta: { terminal_info: { terminal_id: "b" } } }),
      toolUpdate("b", { status: "failed", rawOutput: { isError: true, exitCode: null, signal: "SIGTERM" }, _meta: { terminal_exit: { terminal_id: "b", exit_code: null, signal: "SIGTERM" } } }),
    );
    expect(cardOutcome(stopped.cards.b!, stopped.terminals)).toEqual({ text: "failed", tone: "bad" });
  });

  it("a command waiting for approval is not running: its terminal says not started", () => {
    const s = stateAfter(
      toolCall("b", { kind: "execute", status: "pending", _meta: { terminal_info: { terminal_id: "b" } } }),
      { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "b" }, options },
    );
    expect(terminalBadge(s.terminals.b?.exit, s.cards.b)).toEqual({ text: "not started", tone: "pending" });
    const running = stateAfter(
      toolCall("b", { kind: "execute", status: "pending", _meta: { terminal_info: { terminal_id: "b" } } }),
      { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "b" }, options },
      { type: "permissionResolved", requestId: "p1", outcome: "allow_once" },
      toolUpdate("b", { status: "in_progress" }),
    );
    expect(terminalBadge(running.terminals.b?.exit, running.cards.b)).toEqual({ text: "running", tone: "running" });
  });

  it("reads the exit from rawOutput when there is no terminal", () => {
    const s = stateAfter(toolCall("c", { kind: "execute", status: "completed", rawOutput: { exitCode: 2, signal: null, output: "" } }));
    expect(cardOutcome(s.cards.c!, s.terminals).text).toBe("exit 2");
  });

  it("says awaiting approval, rejected and undone", () => {
    const s = stateAfter(toolCall("e", { kind: "edit", status: "pending" }), { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "e" }, options });
    expect(cardOutcome(s.cards.e!, s.terminals)).toEqual({ text: "awaiting approval", tone: "attention" });
    const rejected = stateAfter(
      toolCall("e", { kind: "edit", status: "pending" }),
      { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "e" }, options },
      { type: "permissionResolved", requestId: "p1", outcome: "reject_once", feedback: "too risky" },
      toolUpdate("e", { status: "failed" }),
    );
    expect(cardOutcome(rejected.cards.e!, rejected.terminals).text).toBe("rejected");
    expect(answerText(rejected.cards.e!)).toBe("Reject: too risky");
    const undone = stateAfter(toolCall("e", { kind: "edit", status: "completed" }), { type: "editUndone", toolCallId: "e" });
    expect(cardOutcome(undone.cards.e!, undone.terminals).text).toBe("undone");
  });

  it("a restored answer keeps its kind, so a reloaded rejection still reads rejected", () => {
    const s = stateAfter(toolCall("e", { kind: "edit", status: "failed" }), { type: "answerRestored", toolCallId: "e", label: "Reject", kind: "reject_once", feedback: "no" });
    expect(cardOutcome(s.cards.e!, s.terminals).text).toBe("rejected");
    expect(answerText(s.cards.e!)).toBe("Reject: no");
  });
});

describe("card layout decisions", () => {
  it("lays out approvals: allow once then reject as buttons, the always choices apart", () => {
    const layout = approvalLayout([...options].reverse());
    expect(layout.main.map((o) => o.kind)).toEqual(["allow_once", "reject_once"]);
    expect(layout.always.map((o) => o.kind)).toEqual(["allow_always", "reject_always"]);
    expect(layout.reject?.optionId).toBe("reject_once");
    // A lasting choice says what it covers on its button; the one-time ones stay two words.
    expect(options.map(choiceLabel)).toEqual([
      "Allow once",
      "Always allow `edit` on app.txt (this session)",
      "Reject",
      "Always reject `edit` on app.txt (this session)",
    ]);
    // An agent's bare "Always Allow" gets the scope it carries as data; without one, its name stays.
    expect(choiceLabel({ optionId: "a", name: "Always Allow", kind: "allow_always", _meta: { acpBridge: { scope: "`ls` commands" } } })).toBe("Always allow `ls` commands");
    expect(choiceLabel({ optionId: "a", name: "Always Allow", kind: "allow_always" })).toBe("Always Allow");
  });

  it("recognises plan updates, which render as one line", () => {
    const s = stateAfter(toolCall("p", { kind: "think", title: "Update plan", _meta: { acpBridge: { tool: "todo_write" } } }));
    expect(isPlanCard(s.cards.p!)).toBe(true);
    expect(s.cards.p!.tool).toBe("todo_write");
  });

  it("collapses long finished reads, never edits or anything still running", () => {
    const long = { type: "content", content: { type: "text", text: Array.from({ length: 30 }, (_, i) => `${i}`).join("\n") } };
    const s = stateAfter(
      toolCall("r", { kind: "read", status: "completed", content: [long] }),
      toolCall("short", { kind: "read", status: "completed", content: [{ type: "content", content: { type: "text", text: "a\nb" } }] }),
      toolCall("running", { kind: "read", status: "in_progress", content: [long] }),
      toolCall("edit", { kind: "edit", status: "completed", content: [long] }),
    );
    expect(["r", "short", "running", "edit"].map((id) => startsCollapsed(s.cards[id]!))).toEqual([true, false, false, false]);
  });

  it("lists pending approvals oldest first", () => {
    const s = stateAfter(
      toolCall("a"),
      toolCall("b"),
      { type: "permissionRequested", requestId: "pb", toolCall: { toolCallId: "b" }, options },
      { type: "permissionRequested", requestId: "pa", toolCall: { toolCallId: "a" }, options },
    );
    expect(pendingApprovals(s).map((c) => c.toolCallId)).toEqual(["a", "b"]);
  });
});
