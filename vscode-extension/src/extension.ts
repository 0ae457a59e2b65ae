/**
 * Entry point: wires the store, the agent controller, the Agent view, follow-along, diffs, terminals,
 * the status bar and the commands. Identifiers come from ids.ts, which mirrors package.json.
 */
import * as vscode from "vscode";
import { TerminalManager } from "./acp/terminals";
import { AgentViewProvider } from "./agentView";
import { followAlongDefault, permissionNotifications, SECTION, selectedAgentName } from "./config";
import { errorText, SessionController } from "./controller";
import { DiffDocuments, DIFF_SCHEME } from "./diffView";
import { FollowAlong } from "./follow";
import { COMMANDS, VIEW_ID } from "./ids";
import { PermissionBroker } from "./permissions";
import { pickAgent, pickHistory, pickMode, pickModel } from "./pickers";
import { createStatusBar } from "./statusBar";
import { SessionStore } from "./store";
import { TerminalMirror } from "./terminalView";
import { routeWebviewMessage } from "./viewMessages";

export function activate(context: vscode.ExtensionContext): void {
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? "0.0.0");
  const output = vscode.window.createOutputChannel("ACP Agent");
  const store = new SessionStore(selectedAgentName(), followAlongDefault());
  const permissions = new PermissionBroker(store, (message, names) =>
    permissionNotifications() ? vscode.window.showInformationMessage(message, ...names) : Promise.resolve(undefined),
  );
  const mirror = new TerminalMirror(store);
  const terminals = new TerminalManager(mirror);
  // The built-in bridge logs sessions here, so History works without any setting.
  const historyDir = vscode.Uri.joinPath(context.globalStorageUri, "sessions").fsPath;
  const controller = new SessionController({ store, permissions, terminals, output, version, historyDir });
  const follow = new FollowAlong();
  const diffs = new DiffDocuments();
  const view = new AgentViewProvider(context.extensionUri, store, (m) => routeWebviewMessage(m, { controller, permissions, store, diffs }));

  const followSub = store.listen((event, change) => {
    if (event.type === "sessionStarted") follow.reset();
    for (const id of change.cards ?? []) {
      const card = store.state.cards[id];
      if (card) follow.onCard(card, store.state.follow);
    }
  });

  const command = (id: string, fn: (...args: unknown[]) => unknown) =>
    vscode.commands.registerCommand(id, async (...args: unknown[]) => {
      try {
        await fn(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(`ACP: ${errorText(err)}`);
      }
    });

  context.subscriptions.push(
    output,
    mirror,
    follow,
    view,
    followSub,
    createStatusBar(store),
    { dispose: () => void controller.dispose() },
    vscode.window.registerWebviewViewProvider(VIEW_ID, view),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, diffs),
    command(COMMANDS.newSession, () => controller.newSession()),
    command(COMMANDS.cancel, () => controller.cancel()),
    command(COMMANDS.restart, () => controller.restart()),
    command(COMMANDS.selectAgent, () => pickAgent(controller)),
    command(COMMANDS.pickMode, () => pickMode(controller, store)),
    command(COMMANDS.pickModel, () => pickModel(controller, store)),
    command(COMMANDS.history, () => pickHistory(controller, store)),
    command(COMMANDS.showOutput, () => output.show(true)),
    command(COMMANDS.toggleFollow, () => store.dispatch({ type: "follow", enabled: !store.state.follow })),
    command(COMMANDS.focus, async () => {
      await vscode.commands.executeCommand(`${VIEW_ID}.focus`);
      view.post({ type: "focusPrompt" });
    }),
    command(COMMANDS.sendPrompt, async (text?: unknown) => {
      const prompt = typeof text === "string" ? text : await vscode.window.showInputBox({ prompt: "Prompt for the agent" });
      if (prompt) await controller.prompt(prompt);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(`${SECTION}.followAlong`)) store.dispatch({ type: "follow", enabled: followAlongDefault() });
      const agentChanged = ["agent", "agents", "pythonCommand", "bridgeArgs"].some((k) => e.affectsConfiguration(`${SECTION}.${k}`));
      if (agentChanged && controller.connection) void vscode.window.showInformationMessage("ACP agent settings changed.", "Restart Agent").then((p) => p && controller.restart());
    }),
  );
}

export function deactivate(): void {}
