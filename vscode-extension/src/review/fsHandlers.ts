/**
 * `fs/read_text_file` and `fs/write_text_file` against the editor, not just the disk: reads return the
 * unsaved text of an open document (honouring `line` and `limit`); writes go through a WorkspaceEdit,
 * so they are undoable and visible as an editor change, and are then saved.
 */
import * as vscode from "vscode";
import { RequestError } from "@agentclientprotocol/sdk";
import type { ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest } from "@agentclientprotocol/sdk";
import { sliceLines } from "../acp/textLines";

function openDocument(uri: vscode.Uri): vscode.TextDocument | undefined {
  return vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
}

export async function readTextFile(p: ReadTextFileRequest): Promise<ReadTextFileResponse> {
  const uri = vscode.Uri.file(p.path);
  const doc = openDocument(uri);
  let text: string;
  if (doc) {
    text = doc.getText();
  } else {
    try {
      text = new TextDecoder().decode(await vscode.workspace.fs.readFile(uri));
    } catch {
      throw RequestError.resourceNotFound(p.path);
    }
  }
  return { content: sliceLines(text, p.line, p.limit) };
}

async function exists(uri: vscode.Uri): Promise<boolean> {
  try {
    await vscode.workspace.fs.stat(uri);
    return true;
  } catch {
    return false;
  }
}

export async function writeTextFile(p: WriteTextFileRequest): Promise<void> {
  const uri = vscode.Uri.file(p.path);
  const edit = new vscode.WorkspaceEdit();
  let restore: () => void = () => undefined;
  if (!openDocument(uri) && !(await exists(uri))) {
    edit.createFile(uri, { ignoreIfExists: true });
    edit.insert(uri, new vscode.Position(0, 0), p.content);
  } else {
    const doc = await vscode.workspace.openTextDocument(uri);
    const old = doc.getText();
    // Only the changed span: undo is as small as the change, and the editor keeps its decorations.
    const { start, end, text } = changedSpan(old, p.content);
    edit.replace(uri, new vscode.Range(doc.positionAt(start), doc.positionAt(end)), text);
    restore = keepSelections(uri);
  }
  if (!(await vscode.workspace.applyEdit(edit))) throw RequestError.internalError({ details: `could not edit ${p.path}` });
  restore();
  const doc = await vscode.workspace.openTextDocument(uri);
  if (doc.isDirty && !(await doc.save())) throw RequestError.internalError({ details: `could not save ${p.path}` });
}

/** Replace a file's text undoably and save; null deletes the file (undoing the creation of one). */
export async function replaceFile(path: string, text: string | null): Promise<void> {
  if (text !== null) return writeTextFile({ sessionId: "", path, content: text });
  const edit = new vscode.WorkspaceEdit();
  edit.deleteFile(vscode.Uri.file(path), { ignoreIfNotExists: true });
  if (!(await vscode.workspace.applyEdit(edit))) throw RequestError.internalError({ details: `could not delete ${path}` });
}

/** The file's text as the editor has it (unsaved changes included), or null when there is no such file. */
export async function currentText(path: string): Promise<string | null> {
  try {
    return (await readTextFile({ sessionId: "", path })).content;
  } catch {
    return null;
  }
}

/** The smallest span of `old` to replace to get `neu`: common prefix and suffix left alone. */
export function changedSpan(old: string, neu: string): { start: number; end: number; text: string } {
  let start = 0;
  const max = Math.min(old.length, neu.length);
  while (start < max && old.charCodeAt(start) === neu.charCodeAt(start)) start++;
  let tail = 0;
  while (tail < max - start && old.charCodeAt(old.length - 1 - tail) === neu.charCodeAt(neu.length - 1 - tail)) tail++;
  return { start, end: old.length - tail, text: neu.slice(start, neu.length - tail) };
}

/**
 * The agent's edit must not move the user's cursor: the editors showing the file keep their selections'
 * line and column (a replaced span would otherwise carry a cursor in it to its end).
 */
function keepSelections(uri: vscode.Uri): () => void {
  const editors = (vscode.window.visibleTextEditors ?? []).filter((e) => e.document.uri.toString() === uri.toString());
  const saved = editors.map((e) => e.selections.map((s) => [s.anchor.line, s.anchor.character, s.active.line, s.active.character] as const));
  return () =>
    editors.forEach((e, i) => {
      const doc = e.document;
      e.selections = saved[i]!.map(([al, ac, l, c]) => new vscode.Selection(doc.validatePosition(new vscode.Position(al, ac)), doc.validatePosition(new vscode.Position(l, c))));
    });
}
