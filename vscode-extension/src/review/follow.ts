/**
 * Follow-along: when a tool call reports locations, open the file in a preview editor at that line
 * without taking focus, and highlight the lines briefly. Requests are serialised and the latest wins,
 * so a burst of reads does not open a burst of editors.
 */
import * as vscode from "vscode";
import { hunks } from "../../shared/diff";
import type { ToolCard } from "../../shared/state";

const HIGHLIGHT_MS = 1500;

export class FollowAlong implements vscode.Disposable {
  private readonly decoration = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("editor.findMatchHighlightBackground"),
    isWholeLine: true,
  });
  private readonly lastKey = new Map<string, string>();
  private queue: Promise<void> = Promise.resolve();
  private latest = 0;

  /** Consider a card after a change; follows when its locations changed. */
  onCard(card: ToolCard, enabled: boolean): void {
    const loc = card.locations[0];
    const key = JSON.stringify(card.locations);
    if (!loc || this.lastKey.get(card.toolCallId) === key) return;
    this.lastKey.set(card.toolCallId, key);
    if (!enabled) return;
    const line = Math.max(1, loc.line ?? 1);
    const span = changedSpan(card, loc.path);
    const ticket = ++this.latest;
    this.queue = this.queue.then(() => (ticket === this.latest ? this.show(loc.path, line, span) : undefined));
  }

  reset(): void {
    this.lastKey.clear();
  }

  private async show(path: string, line: number, span: number): Promise<void> {
    try {
      const uri = vscode.Uri.file(path);
      const stat = await vscode.workspace.fs.stat(uri);
      if (stat.type & vscode.FileType.Directory) return;
      const doc = await vscode.workspace.openTextDocument(uri);
      const first = Math.min(line - 1, Math.max(0, doc.lineCount - 1));
      const last = Math.min(first + span - 1, doc.lineCount - 1);
      const editor = await vscode.window.showTextDocument(doc, {
        preview: true,
        preserveFocus: true,
        selection: new vscode.Range(first, 0, first, 0),
      });
      const range = new vscode.Range(first, 0, last, 0);
      editor.revealRange(range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
      editor.setDecorations(this.decoration, [range]);
      setTimeout(() => editor.setDecorations(this.decoration, []), HIGHLIGHT_MS);
    } catch {
      // the location is not a readable file (deleted, a URL, a directory): nothing to follow
    }
  }

  dispose(): void {
    this.decoration.dispose();
  }
}

/** How many lines to highlight: the added lines of the card's first diff hunk for this path, else 1. */
function changedSpan(card: ToolCard, path: string): number {
  const diff = card.content.find((c) => c.type === "diff" && c.path === path);
  if (!diff || diff.type !== "diff") return 1;
  const first = hunks(diff.oldText, diff.newText, 0)[0];
  return Math.max(1, first?.newLines ?? 1);
}
