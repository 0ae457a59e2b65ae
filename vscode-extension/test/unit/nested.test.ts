/**
 * Nested calls (Code Mode sub-calls, a subagent's calls) in the view model: a card whose first update names a known card in
 * `_meta.parentToolCallId` is kept among that card's children (not in the timeline), keeps its parent
 * when later updates carry no `_meta`, gets its own approval question, and counts as a pending approval.
 */
import { describe, expect, it } from "vitest";
import { cardsInOrder, isNestedCallList, nestedFold, nestedFoldText, pendingApprovals } from "../../shared/cardView";
import { applyEvent } from "../../shared/reducer";
import { stateAfter, toolCall, toolUpdate } from "./helpers";

const parent = (id: string) => ({ _meta: { acpBridge: { tool: "read" }, parentToolCallId: id } });
const options = [
  { optionId: "allow_once", name: "Allow once", kind: "allow_once" as const },
  { optionId: "reject_once", name: "Reject", kind: "reject_once" as const },
];

describe("nested calls (Code Mode)", () => {
  it("a sub-call of a known card is stored under it, in arrival order, and not in the timeline", () => {
    const s = stateAfter(
      toolCall("prog", { kind: "execute", status: "in_progress" }),
      toolCall("prog:code:1", { kind: "read", status: "in_progress", ...parent("prog") }),
      toolCall("prog:code:2", { kind: "edit", status: "pending", ...parent("prog") }),
    );
    expect(s.timeline.map((i) => i.id)).toEqual(["prog"]);
    expect(s.cards.prog!.children).toEqual(["prog:code:1", "prog:code:2"]);
    expect(s.cards["prog:code:2"]!.parentId).toBe("prog");
    expect(cardsInOrder(s).map((c) => c.toolCallId)).toEqual(["prog", "prog:code:1", "prog:code:2"]);
  });

  it("keeps the parent when a later update carries no _meta (a status-only update)", () => {
    const s = stateAfter(toolCall("prog"), toolCall("prog:code:1", parent("prog")), toolUpdate("prog:code:1", { status: "completed" }));
    expect(s.cards["prog:code:1"]).toMatchObject({ parentId: "prog", status: "completed" });
    expect(s.cards.prog!.children).toEqual(["prog:code:1"]);
  });

  it("reports the program's card as changed when a sub-call appears, so the view draws it inside", () => {
    const s = stateAfter(toolCall("prog"));
    const change = applyEvent(s, toolCall("prog:code:1", parent("prog")));
    expect(change.cards).toEqual(["prog:code:1", "prog"]);
    expect(change.timeline).toBeUndefined();
  });

  it("an unknown parent puts the card at the top level", () => {
    const s = stateAfter(toolCall("orphan:code:1", parent("gone")));
    expect(s.timeline.map((i) => i.id)).toEqual(["orphan:code:1"]);
    expect(s.cards["orphan:code:1"]!.parentId).toBeUndefined();
  });

  it("a permission request for a sub-call puts the question on the nested card and counts as pending", () => {
    const s = stateAfter(toolCall("first"), toolCall("prog"), toolCall("prog:code:1", parent("prog")));
    applyEvent(s, { type: "permissionRequested", requestId: "perm-1", toolCall: { toolCallId: "prog:code:2", title: "Edit notes.txt", kind: "edit", ...parent("prog") }, options });
    expect(s.cards["prog:code:2"]!.permission?.requestId).toBe("perm-1");
    expect(s.cards.prog!.children).toEqual(["prog:code:1", "prog:code:2"]);
    expect(s.timeline.map((i) => i.id)).toEqual(["first", "prog"]);
    expect(pendingApprovals(s).map((c) => c.toolCallId)).toEqual(["prog:code:2"]);
  });

  it("recognises the program card's text list of its calls", () => {
    const list = (t: string) => ({ type: "content" as const, content: { type: "text" as const, text: t } });
    expect(isNestedCallList(list("2 tool calls:\n1. ✓ Read a\n2. ✓ Edit b"))).toBe(true);
    expect(isNestedCallList(list("1 tool call:\n1. ▸ Read a (running)"))).toBe(true);
    expect(isNestedCallList(list("The program returned:\n3"))).toBe(false);
  });

  it("the fold of a card's calls counts them; a task's starts folded, a program's open; an approval below keeps it open", () => {
    const task = { _meta: { acpBridge: { tool: "task" } } };
    const s = stateAfter(
      toolCall("prog", { kind: "execute" }),
      toolCall("prog:code:1", { status: "completed", ...parent("prog") }),
      toolCall("t1", { kind: "think", name: "task", ...task }),
      toolCall("t1-a", { status: "completed", ...parent("t1") }),
      toolCall("t1-b", { status: "failed", ...parent("t1") }),
      toolCall("t1-c", { status: "in_progress", ...parent("t1") }),
      toolCall("t1-c:code:1", { status: "pending", ...parent("t1-c") }),
    );
    expect(nestedFold(s, s.cards.prog!)).toEqual({ count: 1, running: 0, failed: 0, startsCollapsed: false, forcedOpen: false });
    const fold = nestedFold(s, s.cards.t1!)!;
    expect(fold).toEqual({ count: 3, running: 1, failed: 1, startsCollapsed: true, forcedOpen: false });
    expect(nestedFoldText(fold)).toBe("3 calls · 1 running · 1 failed");
    expect(nestedFold(s, s.cards["t1-a"]!)).toBeUndefined();
    // A task named only by the stable ToolCall.name folds alike.
    const byName = stateAfter(toolCall("t2", { name: "task" }), toolCall("t2-a", parent("t2")));
    expect(nestedFold(byName, byName.cards.t2!)!.startsCollapsed).toBe(true);
    // The program's sub-call two levels down asks: the task's fold opens.
    applyEvent(s, { type: "permissionRequested", requestId: "p", toolCall: { toolCallId: "t1-c:code:1" }, options });
    expect(nestedFold(s, s.cards.t1!)!.forcedOpen).toBe(true);
    expect(nestedFold(s, s.cards["t1-c"]!)!.forcedOpen).toBe(true);
    expect(cardsInOrder(s).map((c) => c.toolCallId)).toEqual(["prog", "prog:code:1", "t1", "t1-a", "t1-b", "t1-c", "t1-c:code:1"]);
  });
});
