import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeEach, describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { changedSpan, readTextFile, writeTextFile } from "../../src/review/fsHandlers";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

interface Entry {
  _type: number;
  uri?: vscode.Uri;
  to?: vscode.Uri;
  edit?: { range: vscode.Range; newText: string };
}

/** Applies a WorkspaceEdit to the real disk, the way VS Code would for closed files. */
async function applyToDisk(edit: vscode.WorkspaceEdit): Promise<boolean> {
  for (const e of (edit as unknown as { _allEntries(): Entry[] })._allEntries()) {
    if (e.to && !e.uri) writeFileSync(e.to.fsPath, "");
    if (e.edit && e.uri) {
      let text: string;
      try {
        text = readFileSync(e.uri.fsPath, "utf8");
      } catch {
        text = "";
      }
      const doc = (await import("jest-mock-vscode")).createTextDocument(e.uri, text);
      const start = doc.offsetAt(e.edit.range.start);
      const end = doc.offsetAt(e.edit.range.end);
      writeFileSync(e.uri.fsPath, text.slice(0, start) + e.edit.newText + text.slice(end));
    }
  }
  return true;
}

describe("fs/read_text_file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "acp-fs-"));
    (vscode.workspace as unknown as { textDocuments: vscode.TextDocument[] }).textDocuments = [];
  });

  it("returns the unsaved text of an open editor, not the disk", async () => {
    const path = join(dir, "a.txt");
    writeFileSync(path, "on disk\n");
    const { createTextDocument } = await import("jest-mock-vscode");
    (vscode.workspace as unknown as { textDocuments: vscode.TextDocument[] }).textDocuments = [createTextDocument(vscode.Uri.file(path), "unsaved 1\nunsaved 2\nunsaved 3\n")];
    await expect(readTextFile({ sessionId: "s", path })).resolves.toEqual({ content: "unsaved 1\nunsaved 2\nunsaved 3\n" });
    await expect(readTextFile({ sessionId: "s", path, line: 2, limit: 1 })).resolves.toEqual({ content: "unsaved 2\n" });
  });

  it("reads closed files from disk, honouring line and limit", async () => {
    const path = join(dir, "b.txt");
    writeFileSync(path, "l1\nl2\nl3\nl4\n");
    await expect(readTextFile({ sessionId: "s", path, line: 3 })).resolves.toEqual({ content: "l3\nl4\n" });
    await expect(readTextFile({ sessionId: "s", path, limit: 2 })).resolves.toEqual({ content: "l1\nl2\n" });
  });

  it("answers resource-not-found for a missing file", async () => {
    await expect(readTextFile({ sessionId: "s", path: join(dir, "missing.txt") })).rejects.toMatchObject({ code: -32002 });
  });
});

describe("fs/write_text_file", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "acp-fs-"));
    (vscode.workspace as unknown as { textDocuments: vscode.TextDocument[] }).textDocuments = [];
    vi.mocked(vscode.workspace.applyEdit).mockReset().mockImplementation(applyToDisk);
  });

  it("replaces the whole document through an undoable WorkspaceEdit", async () => {
    const path = join(dir, "c.txt");
    writeFileSync(path, "old line 1\nold line 2\n");
    await writeTextFile({ sessionId: "s", path, content: "new content\n" });
    expect(vscode.workspace.applyEdit).toHaveBeenCalledTimes(1);
    const edit = vi.mocked(vscode.workspace.applyEdit).mock.calls[0]![0];
    expect(edit).toBeInstanceOf(vscode.WorkspaceEdit);
    expect(readFileSync(path, "utf8")).toBe("new content\n");
  });

  it("creates a file that does not exist", async () => {
    const path = join(dir, "new.txt");
    await writeTextFile({ sessionId: "s", path, content: "hello\n" });
    const entries = (vi.mocked(vscode.workspace.applyEdit).mock.calls[0]![0] as unknown as { _allEntries(): Entry[] })._allEntries();
    expect(entries.some((e) => e.to?.fsPath === path)).toBe(true);
    expect(readFileSync(path, "utf8")).toBe("hello\n");
  });

  it("fails the request when the editor refuses the edit", async () => {
    const path = join(dir, "d.txt");
    writeFileSync(path, "x");
    vi.mocked(vscode.workspace.applyEdit).mockResolvedValueOnce(false);
    await expect(writeTextFile({ sessionId: "s", path, content: "y" })).rejects.toMatchObject({ code: -32603 });
    expect(readFileSync(path, "utf8")).toBe("x");
  });
});

describe("the smallest edit", () => {
  it("replaces only the changed span, so undo is as small as the change", () => {
    expect(changedSpan("alpha\nbeta\ngamma\n", "alpha\nBETA\ngamma\n")).toEqual({ start: 6, end: 10, text: "BETA" });
    expect(changedSpan("abc", "abc")).toEqual({ start: 3, end: 3, text: "" });
    expect(changedSpan("aXa", "aa")).toEqual({ start: 1, end: 2, text: "" });
    expect(changedSpan("", "new")).toEqual({ start: 0, end: 0, text: "new" });
  });
});
