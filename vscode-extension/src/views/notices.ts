/**
 * The agent's `notice` session updates as toasts: live advice, at the severity the agent gives. A notice
 * that the model keeps the prompt waiting is no toast: the Agent view shows it as its waiting line; nor
 * is the bridge's report of the instructions files it follows (a line in the view's header).
 */
import * as vscode from "vscode";
import type { SessionUpdate } from "../../shared/acp";
import { instructionsOf } from "../../shared/instructions";
import { modelWaitOf } from "../../shared/waiting";

type Notice = Extract<SessionUpdate, { sessionUpdate: "notice" }>;

export function showNotice(n: Notice): void {
  if (modelWaitOf(n)) return; // the model keeps the prompt waiting: the view's waiting line says it, with Cancel
  if (instructionsOf(n)) return; // the instructions files the agent follows: a line in the view's header
  const text = n.description ? `${n.title}: ${n.description}` : n.title;
  const show = n.severity === "error" ? vscode.window.showErrorMessage : n.severity === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  void show(`ACP agent: ${text}`);
}
