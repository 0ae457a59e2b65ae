/**
 * Code Mode sub-calls in the view model: a card whose first update names a known card in
 * `_meta.parentToolCallId` is kept among that card's children (not in the timeline), keeps its parent
 * when later updates carry no `_meta`, gets its own approval question, and counts as a pending approval.
 */
import { describe, expect, it } from "vitest";
import { cardsInOrder, isNestedCallList, pendingApprovals } from "../../shared/cardView";
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
});
