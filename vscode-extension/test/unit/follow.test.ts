import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import { FollowAlong } from "../../src/review/follow";
import type { ToolCard } from "../../shared/state";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

function card(path: string, line: number, extra: Partial<ToolCard> = {}): ToolCard {
  return { toolCallId: "c1", title: "Edit", kind: "edit", status: "in_progress", content: [], locations: [{ path, line }], ...extra };
}

async function settle() {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 5));
}

describe("follow-along", () => {
  const dir = mkdtempSync(join(tmpdir(), "acp-follow-"));
  const path = join(dir, "notes.txt");
  writeFileSync(path, "a\nb\nc\nd\ne\n");

  it("opens the location in a preview editor at the line without taking focus, and highlights it", async () => {
    const show = vi.spyOn(vscode.window, "showTextDocument");
    const follow = new FollowAlong();
    follow.onCard(card(path, 3), true);
    await settle();
    expect(show).toHaveBeenCalledTimes(1);
    const [doc, opts] = show.mock.calls[0]! as unknown as [vscode.TextDocument, vscode.TextDocumentShowOptions];
    expect(doc.uri.fsPath).toBe(path);
    expect(opts).toMatchObject({ preview: true, preserveFocus: true });
    expect(opts.selection!.start.line).toBe(2);
    const editor = await show.mock.results[0]!.value;
    expect(editor.setDecorations).toBeDefined();
    show.mockRestore();
  });

  it("does not follow when the toggle is off, or again for unchanged locations", async () => {
    const show = vi.spyOn(vscode.window, "showTextDocument");
    const follow = new FollowAlong();
    follow.onCard(card(path, 2), false);
    await settle();
    expect(show).not.toHaveBeenCalled();
    const f2 = new FollowAlong();
    f2.onCard(card(path, 2), true);
    f2.onCard(card(path, 2, { status: "completed" }), true);
    await settle();
    expect(show).toHaveBeenCalledTimes(1);
    show.mockRestore();
  });

  it("ignores locations that are not files", async () => {
    const show = vi.spyOn(vscode.window, "showTextDocument");
    new FollowAlong().onCard(card(join(dir, "missing.txt"), 1), true);
    await settle();
    expect(show).not.toHaveBeenCalled();
    show.mockRestore();
  });
});
