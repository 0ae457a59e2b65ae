/**
 * `fs/read_text_file` and `fs/write_text_file` against the editor, not just the disk: reads return the
 * unsaved text of an open document (honouring `line` and `limit`); writes go through a WorkspaceEdit,
 * so they are undoable and visible as an editor change, and are then saved.
 */
import * as vscode from "vscode";
import { RequestError } from "@agentclientprotocol/sdk";
import type { ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest } from "@agentclientprotocol/sdk";
import { sliceLines } from "./acp/textLines";

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
  if (!openDocument(uri) && !(await exists(uri))) {
    edit.createFile(uri, { ignoreIfExists: true });
    edit.insert(uri, new vscode.Position(0, 0), p.content);
  } else {
    const doc = await vscode.workspace.openTextDocument(uri);
    const whole = new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length));
    edit.replace(uri, whole, p.content);
  }
  if (!(await vscode.workspace.applyEdit(edit))) throw RequestError.internalError({ details: `could not edit ${p.path}` });
  const doc = await vscode.workspace.openTextDocument(uri);
  if (doc.isDirty && !(await doc.save())) throw RequestError.internalError({ details: `could not save ${p.path}` });
}
