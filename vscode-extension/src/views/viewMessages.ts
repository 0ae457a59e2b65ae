/** Routes messages from the Agent webview to the controller, the permission broker and the editors. */
import * as vscode from "vscode";
import type { HostToWebview, WebviewToHost } from "../../shared/protocol";
import { findWorkspaceFiles, pickAttachments } from "../prompt/attach";
import { mentionBlock } from "../prompt/attachments";
import type { SessionController } from "../session/controller";
import { errorText } from "../session/controller";
import type { EditViews } from "../review/editViews";
import type { PermissionBroker } from "../review/permissions";
import type { QuestionBroker } from "../review/questions";
import { pickHistory } from "../session/pickers";
import type { SessionStore } from "../session/store";

export interface Routes {
  controller: SessionController;
  permissions: PermissionBroker;
  questions: QuestionBroker;
  store: SessionStore;
  edits: EditViews;
  /** Where answers to the view's requests go (attachments, @-mention matches). */
  view?: { post(message: HostToWebview): void };
}

export function routeWebviewMessage(m: WebviewToHost, r: Routes): void {
  const run = (p: Promise<unknown>) => void p.catch((err) => vscode.window.showErrorMessage(`ACP: ${errorText(err)}`));
  switch (m.type) {
    case "ready":
      // Opening the view starts the agent and reopens the last conversation (or starts one), so the
      // header shows its modes and state.
      if (r.store.state.connection.status !== "crashed") run(r.controller.openLastOrNew().catch(() => undefined));
      return;
    case "prompt": {
      // An @-mention still in the text is a link to its file.
      const mentions = (m.mentions ?? []).filter((x) => m.text.includes(`@${x.label}`)).map((x) => mentionBlock(x.path, x.label));
      return run(r.controller.prompt(m.text, [...(m.attachments ?? []).map((a) => a.block), ...mentions]));
    }
    case "attach":
      return run(pickAttachments().then((items) => items.length && r.view?.post({ type: "attached", items })));
    case "findFiles":
      return run(findWorkspaceFiles(m.query).then((files) => r.view?.post({ type: "fileMatches", query: m.query, files })));
    case "cancel":
      return run(r.controller.cancel());
    case "permission":
      r.permissions.answer(m.requestId, m.optionId, m.feedback);
      return;
    case "question":
      r.questions.answer(m.requestId, m.action, m.content);
      return;
    case "openLocation":
      return run(openLocation(m.path, m.line ?? undefined));
    case "openDiff":
      return run(r.edits.openDiff(m.toolCallId, m.index, m.proposed));
    case "review":
      return run(r.edits.review(m.toolCallId));
    case "undo":
      return run(r.edits.undo(m.toolCallId));
    case "stopBackground":
      return run(r.controller.stopBackground(m.toolCallId));
    case "rewind":
      return run(r.controller.rewind(m.turn));
    case "revertFile":
      return run(r.controller.revertFile(m.toolCallId, m.path));
    case "openSetting":
      return run(Promise.resolve(vscode.commands.executeCommand("workbench.action.openSettings", m.id)));
    case "copy":
      return run(Promise.resolve(vscode.env.clipboard.writeText(m.text)).then(() => vscode.window.setStatusBarMessage("Copied", 2000)));
    case "newSession":
      return run(r.controller.newSession());
    case "history":
      return run(pickHistory(r.controller, r.store));
    case "renameSession":
      return run(r.controller.renameSession());
    case "restart":
      return run(r.controller.restart());
    case "installBridge":
      return run(r.controller.installBridge());
    case "setMode":
      return run(r.controller.setMode(m.modeId));
    case "setConfigOption":
      return run(r.controller.setConfigOption(m.configId, m.value));
    case "toggleFollow":
      r.store.dispatch({ type: "follow", enabled: !r.store.state.follow });
      return;
    case "login":
      return run(r.controller.login(m.methodId));
  }
}

export async function openLocation(path: string, line?: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  const l = Math.max(0, (line ?? 1) - 1);
  await vscode.window.showTextDocument(doc, { preview: true, selection: new vscode.Range(l, 0, l, 0) });
}
