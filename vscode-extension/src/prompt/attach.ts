/**
 * Attaching context to a prompt from the editor: the current selection, a file or an image (read from
 * disk and turned into ACP blocks by attachments.ts), and the workspace files an @-mention may name.
 */
import * as vscode from "vscode";
import type { Attachment } from "../../shared/protocol";
import { fileAttachment, IMAGE_TYPES, selectionAttachment } from "./attachments";

/** The active editor's selection (a local file), or undefined with the reason said. */
export function selectionInEditor(): Attachment | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.selection.isEmpty) {
    void vscode.window.showInformationMessage("Select some lines in an editor first.");
    return undefined;
  }
  if (editor.document.uri.scheme !== "file") {
    void vscode.window.showInformationMessage("Only a selection in a file on disk can be attached.");
    return undefined;
  }
  const { start, end } = editor.selection;
  // A selection that ends at the start of a line does not include that line.
  const last = end.character === 0 && end.line > start.line ? end.line - 1 : end.line;
  const range = new vscode.Range(start.line, 0, last, editor.document.lineAt(last).text.length);
  return selectionAttachment(editor.document.uri.fsPath, start.line + 1, last + 1, editor.document.getText(range));
}

/** Files the user picks, each as the block it makes (text, image or link). */
async function pickFiles(images: boolean): Promise<Attachment[]> {
  const uris = await vscode.window.showOpenDialog({
    canSelectMany: true,
    openLabel: "Attach",
    title: images ? "Attach images to the prompt" : "Attach files to the prompt",
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    filters: images ? { Images: Object.keys(IMAGE_TYPES).map((e) => e.slice(1)) } : undefined,
  });
  const out: Attachment[] = [];
  for (const uri of uris ?? []) out.push(fileAttachment(uri.fsPath, await vscode.workspace.fs.readFile(uri)));
  return out;
}

/** "Attach…": the selection, files, or images. */
export async function pickAttachments(): Promise<Attachment[]> {
  const hasSelection = !!vscode.window.activeTextEditor && !vscode.window.activeTextEditor.selection.isEmpty;
  const choices = [
    ...(hasSelection ? [{ label: "$(selection) Selection", detail: "The lines selected in the editor, with their text", id: "selection" }] : []),
    { label: "$(file) File…", detail: "A file's text (a link for binary or large files)", id: "file" },
    { label: "$(file-media) Image…", detail: "A picture, for a model that can see", id: "image" },
  ];
  const pick = await vscode.window.showQuickPick(choices, { title: "Attach to the prompt" });
  if (!pick) return [];
  if (pick.id === "selection") {
    const s = selectionInEditor();
    return s ? [s] : [];
  }
  return pickFiles(pick.id === "image");
}

/** Workspace files whose path contains `query` (at most 20), for an @-mention. */
export async function findWorkspaceFiles(query: string): Promise<Array<{ label: string; path: string }>> {
  const safe = query.replace(/[[\]{}()*?!\\]/g, "");
  const uris = await vscode.workspace.findFiles(`**/*${safe}*`, "**/{node_modules,.git,dist,out}/**", 20);
  return uris.map((u) => ({ label: vscode.workspace.asRelativePath(u, false), path: u.fsPath })).sort((a, b) => a.label.length - b.label.length || a.label.localeCompare(b.label));
}
