/** The status bar item: agent name and state (starting, ready, working, crashed); a click opens the view. */
import * as vscode from "vscode";
import type { SessionState } from "../../shared/state";
import { COMMANDS } from "../ids";
import type { SessionStore } from "../session/store";

export function createStatusBar(store: SessionStore): vscode.Disposable {
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  item.name = "ACP Agent";
  item.command = COMMANDS.focus;
  const render = (s: SessionState) => {
    const { status, agentName } = s.connection;
    const label = status === "ready" && s.running ? "working" : status;
    const icon = { idle: "$(hubot)", starting: "$(loading~spin)", ready: s.running ? "$(loading~spin)" : "$(hubot)", crashed: "$(error)", stopped: "$(circle-slash)" }[status];
    item.text = `${icon} ${agentName || "Agent"}: ${label}`;
    item.tooltip = s.connection.error ? `ACP agent error: ${s.connection.error}` : `ACP agent ${agentName} (${label})`;
    item.backgroundColor = status === "crashed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  };
  render(store.state);
  item.show();
  const sub = store.listen((_e, change) => {
    if (change.header) render(store.state);
  });
  return { dispose: () => (sub.dispose(), item.dispose()) };
}
