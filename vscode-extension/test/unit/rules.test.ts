/**
 * The Rules view: one line per remembered "always" answer with what it covers, the line above them, a
 * refresh when an approval is answered, revoking one rule, and an agent without the bridge's method.
 */
import { describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import type { RulesListing } from "../../src/acp/connection";
import { ruleLines, rulesMessage } from "../../src/views/rules";
import { RulesView } from "../../src/views/rulesView";
import { SessionStore } from "../../src/session/store";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

const listing = (rules: RulesListing["rules"]): RulesListing => ({ mode: "default", rememberedFor: "this project", rules });
const rule = { number: 1, description: "Always allow `edit` on notes.txt", allow: true, tool: "edit", scope: "notes.txt" };

describe("rules view", () => {
  it("says what each rule covers and for how long", () => {
    expect(ruleLines(listing([rule, { ...rule, number: 2, allow: false, tool: "bash", scope: "rm *" }]))).toMatchObject([
      { number: 1, label: "Always allow `edit` on notes.txt", description: "allowed · edit · notes.txt" },
      { number: 2, description: "rejected · bash · rm *", allow: false },
    ]);
    expect(rulesMessage(listing([]))).toBe('No "always" answers remembered for this project. Mode: default.');
    expect(rulesMessage(listing([rule]))).toBe('"Always" answers remembered for this project. Mode: default.');
  });

  it("refreshes after an approval answer, revokes a rule, and says when the agent cannot list rules", async () => {
    let rules = [rule];
    const conn = {
      spec: { name: "bridge" },
      listRules: vi.fn(async () => listing(rules)),
      forgetRules: vi.fn(async (_id: string, n?: number) => listing((rules = rules.filter((r) => n !== undefined && r.number !== n)))),
    };
    const store = new SessionStore();
    const view = new RulesView({ currentSession: () => ({ id: "s1", conn: conn as never }) }, store);
    const tree = { message: "" } as vscode.TreeView<never>;
    view.attach(tree as never);
    store.dispatch({ type: "permissionResolved", requestId: "perm-1", outcome: "allow_always" });
    await vi.waitFor(() => expect(view.getChildren()).toHaveLength(1));
    expect(conn.listRules).toHaveBeenCalledWith("s1");
    expect(view.getTreeItem(view.getChildren()[0]!)).toMatchObject({ label: rule.description, contextValue: "rule" });
    await view.revoke(1);
    expect(conn.forgetRules).toHaveBeenCalledWith("s1", 1);
    expect(view.getChildren()).toEqual([]);
    expect(tree.message).toMatch(/No "always" answers/);

    conn.listRules.mockRejectedValueOnce(Object.assign(new Error("Method not found"), { code: -32601 }));
    await view.refresh();
    expect(tree.message).toBe("bridge does not list remembered rules.");
    view.dispose();
  });
});
