import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { emptyState } from "../../shared/state";
import { MAX_SESSIONS, SessionArchive } from "../../src/session/sessionArchive";

describe("session archive (answers and views the client keeps)", () => {
  it("keeps answers per session across instances (a reopened window)", async () => {
    const dir = join(mkdtempSync(join(tmpdir(), "acp-archive-")), "views");
    const a = new SessionArchive(dir);
    await a.recordAnswer("sess/1", "call_edit", { label: "Reject", kind: "reject_once", feedback: "no" });
    await a.recordAnswer("sess/1", "call_bash", { label: "Allow once", kind: "allow_once" });
    expect(existsSync(dir)).toBe(true);
    const b = new SessionArchive(dir);
    expect(await b.answers("sess/1")).toEqual({ call_edit: { label: "Reject", kind: "reject_once", feedback: "no" }, call_bash: { label: "Allow once", kind: "allow_once" } });
    expect(await b.answers("other")).toEqual({});
  });

  it("keeps a session's last view, and at most MAX_SESSIONS files", async () => {
    const dir = mkdtempSync(join(tmpdir(), "acp-archive-"));
    const a = new SessionArchive(dir);
    const view = emptyState("x");
    view.title = "kept";
    await a.saveView("s", view);
    expect((await new SessionArchive(dir).view("s"))?.title).toBe("kept");
    for (let i = 0; i < MAX_SESSIONS + 5; i++) void a.recordAnswer(`s${i}`, "c", { label: "Allow once" });
    await a.flushed();
    expect(readdirSync(dir).filter((n) => n.endsWith(".json")).length).toBe(MAX_SESSIONS);
  });
});
