/** The agent's `notice` session updates as toasts: live advice, at the severity the agent gives. */
import * as vscode from "vscode";
import type { SessionUpdate } from "../../shared/acp";

type Notice = Extract<SessionUpdate, { sessionUpdate: "notice" }>;

export function showNotice(n: Notice): void {
  const text = n.description ? `${n.title}: ${n.description}` : n.title;
  const show = n.severity === "error" ? vscode.window.showErrorMessage : n.severity === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  void show(`ACP agent: ${text}`);
}
