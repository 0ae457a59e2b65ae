/** Routes messages from the Agent webview to the controller, the permission broker and the editors. */
import * as vscode from "vscode";
import type { WebviewToHost } from "../shared/protocol";
import type { SessionController } from "./controller";
import { errorText } from "./controller";
import type { DiffDocuments } from "./diffView";
import type { PermissionBroker } from "./permissions";
import { pickHistory } from "./pickers";
import type { SessionStore } from "./store";

export interface Routes {
  controller: SessionController;
  permissions: PermissionBroker;
  store: SessionStore;
  diffs: DiffDocuments;
}

export function routeWebviewMessage(m: WebviewToHost, r: Routes): void {
  const run = (p: Promise<unknown>) => void p.catch((err) => vscode.window.showErrorMessage(`ACP: ${errorText(err)}`));
  switch (m.type) {
    case "ready":
      // Opening the view starts the agent and a session, so the header shows its modes and state.
      if (r.store.state.connection.status !== "crashed") run(r.controller.ensureSession().catch(() => undefined));
      return;
    case "prompt":
      return run(r.controller.prompt(m.text));
    case "cancel":
      return run(r.controller.cancel());
    case "permission":
      r.permissions.answer(m.requestId, m.optionId);
      return;
    case "openLocation":
      return run(openLocation(m.path, m.line ?? undefined));
    case "openDiff": {
      const block = r.store.state.cards[m.toolCallId]?.content[m.index];
      if (block?.type === "diff") run(r.diffs.open(block.path, block.oldText, block.newText));
      return;
    }
    case "newSession":
      return run(r.controller.newSession());
    case "history":
      return run(pickHistory(r.controller, r.store));
    case "restart":
      return run(r.controller.restart());
    case "setMode":
      return run(r.controller.setMode(m.modeId));
    case "setConfigOption":
      return run(r.controller.setConfigOption(m.configId, m.value));
    case "toggleFollow":
      r.store.dispatch({ type: "follow", enabled: !r.store.state.follow });
      return;
  }
}

export async function openLocation(path: string, line?: number): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(path));
  const l = Math.max(0, (line ?? 1) - 1);
  await vscode.window.showTextDocument(doc, { preview: true, selection: new vscode.Range(l, 0, l, 0) });
}
