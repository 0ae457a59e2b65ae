/**
 * The instructions files the agent follows, from the bridge's notices (`_meta.acpBridge.instructions`):
 * loaded → the header's line; changed → the line replaced, and said in the conversation; added (a
 * folder's own file) → appended once; a plain notice is no report. The toast is left out for them.
 */
import { describe, expect, it } from "vitest";
import { instructionLabel, instructionsOf } from "../../shared/instructions";
import { applyEvent } from "../../shared/reducer";
import { stateAfter, update } from "./helpers";

const notice = (title: string, event: string, files: unknown[]) =>
  update({ sessionUpdate: "notice", severity: "info", title, description: "- …", _meta: { acpBridge: { instructions: { event, files } } } });

describe("instructions files", () => {
  it("loaded: the files become the header's line, with no timeline entry", () => {
    const s = stateAfter();
    const change = applyEvent(s, notice("Project instructions loaded", "loaded", [
      { path: "/home/u/.config/acp-bridge/AGENTS.md", name: "AGENTS.md", scope: "user" },
      { path: "/ws/AGENTS.md", name: "AGENTS.md", scope: "root" },
      { path: "/ws2/CLAUDE.md", name: "CLAUDE.md", scope: "root", skipped: "it links outside the roots" },
    ]));
    expect(change).toEqual({ header: true });
    expect(s.timeline).toEqual([]);
    expect(s.instructions!.map((f) => instructionLabel(f, s.cwd))).toEqual(["AGENTS.md (yours)", "AGENTS.md", "/ws2/CLAUDE.md"]);
    expect(s.instructions![2]!.skipped).toBe("it links outside the roots");
  });

  it("a folder's file is added once; a change re-lists the session's files, keeps the folder's, and is said", () => {
    const s = stateAfter();
    applyEvent(s, notice("Project instructions loaded", "loaded", [{ path: "/ws/AGENTS.md", name: "AGENTS.md", scope: "root" }]));
    applyEvent(s, notice("Folder instructions added", "added", [{ path: "/ws/pkg/AGENTS.md", name: "AGENTS.md", scope: "folder" }]));
    applyEvent(s, notice("Folder instructions added", "added", [{ path: "/ws/pkg/AGENTS.md", name: "AGENTS.md", scope: "folder" }]));
    expect(s.instructions!.map((f) => instructionLabel(f, s.cwd))).toEqual(["AGENTS.md", "pkg/AGENTS.md"]);
    const change = applyEvent(s, notice("Project instructions changed", "changed", [{ path: "/ws/CLAUDE.md", name: "CLAUDE.md", scope: "root" }]));
    expect(change).toMatchObject({ header: true, timeline: true });
    expect(s.instructions!.map((f) => f.path)).toEqual(["/ws/CLAUDE.md", "/ws/pkg/AGENTS.md"]);
    expect(s.timeline.filter((i) => i.type === "notice").map((i) => (i.type === "notice" ? i.text : ""))).toEqual([
      "Folder instructions added: - …",
      "Folder instructions added: - …",
      "Project instructions changed: - …",
    ]);
  });

  it("a notice without the report, or with a malformed one, is an ordinary notice", () => {
    const plain = { sessionUpdate: "notice" as const, severity: "info" as const, title: "Heads up" };
    expect(instructionsOf(plain)).toBeUndefined();
    expect(instructionsOf({ ...plain, _meta: { acpBridge: { instructions: { event: "deleted", files: [] } } } })).toBeUndefined();
    expect(instructionsOf({ ...plain, _meta: { acpBridge: { instructions: { event: "loaded", files: [{ name: "no path" }, { path: "/ws/AGENTS.md" }] } } } })).toEqual({
      event: "loaded",
      files: [{ path: "/ws/AGENTS.md", name: "AGENTS.md", scope: "root" }],
    });
    const s = stateAfter(update(plain));
    expect(s.instructions).toBeUndefined();
    expect(s.timeline).toHaveLength(1);
  });
});
