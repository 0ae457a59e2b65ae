/**
 * "Open diff": shows a diff card in VS Code's diff editor, old text vs new text. The old side is a
 * read-only virtual document (scheme `acp-diff`); the new side is the real file when it still holds the
 * new text (so the edit can be reviewed and changed in place), else a virtual copy.
 */
import * as path from "node:path";
import * as vscode from "vscode";

export const DIFF_SCHEME = "acp-diff";

export class DiffDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private next = 1;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.query) ?? "";
  }

  private virtual(filePath: string, label: string, text: string): vscode.Uri {
    const key = String(this.next++);
    this.texts.set(key, text);
    return vscode.Uri.from({ scheme: DIFF_SCHEME, path: `/${label}/${path.basename(filePath)}`, query: key });
  }

  async open(filePath: string, oldText: string | null | undefined, newText: string): Promise<void> {
    const left = this.virtual(filePath, "before", oldText ?? "");
    let right = vscode.Uri.file(filePath);
    try {
      const current = new TextDecoder().decode(await vscode.workspace.fs.readFile(right));
      const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === right.toString());
      if ((open ? open.getText() : current) !== newText) right = this.virtual(filePath, "after", newText);
    } catch {
      right = this.virtual(filePath, "after", newText);
    }
    const title = `${path.basename(filePath)} (agent edit)`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }
}
