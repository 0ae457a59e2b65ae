/**
 * Entry point: wires the store, the agent controller, the Agent view, follow-along, edit views (review,
 * diffs, undo), approval notifications, terminals, the status bar and the commands. Identifiers come
 * from ids.ts, which mirrors package.json.
 */
import * as vscode from "vscode";
import { TerminalManager } from "./acp/terminals";
import { COMMANDS, RULES_VIEW_ID, VIEW_ID } from "./ids";
import { BridgeInstaller } from "./install/installUi";
import { selectionInEditor } from "./prompt/attach";
import { ANSWER_COMMAND, ApprovalNotifications, REVIEW_COMMAND } from "./review/approvalNotification";
import { canReview, DiffDocuments, DIFF_SCHEME, EditViews, REVIEW_SCHEME } from "./review/editViews";
import { FollowAlong } from "./review/follow";
import { currentText, replaceFile } from "./review/fsHandlers";
import { PermissionBroker } from "./review/permissions";
import { QuestionBroker } from "./review/questions";
import { BRIDGE_SECTION, followAlongDefault, permissionNotifications, SECTION, selectedAgentName } from "./session/config";
import { errorText, SessionController } from "./session/controller";
import { pickAgent, pickHistory, pickMode, pickModel, pickSessionToDelete } from "./session/pickers";
import { SessionArchive } from "./session/sessionArchive";
import { SessionStore } from "./session/store";
import { AgentViewProvider } from "./views/agentView";
import { RulesView } from "./views/rulesView";
import { createStatusBar } from "./views/statusBar";
import { TerminalMirror } from "./views/terminalView";
import { routeWebviewMessage } from "./views/viewMessages";

export function activate(context: vscode.ExtensionContext): void {
  const version = String((context.extension.packageJSON as { version?: unknown }).version ?? "0.0.0");
  const output = vscode.window.createOutputChannel("ACP Agent");
  const store = new SessionStore(selectedAgentName(), followAlongDefault());
  const notifications = new ApprovalNotifications((toolCallId) => canReview(store.state.cards[toolCallId]));
  const permissions = new PermissionBroker(store, (prompt) => (permissionNotifications() ? notifications.ask(prompt) : Promise.resolve(undefined)));
  const questions = new QuestionBroker(store);
  const mirror = new TerminalMirror(store);
  const terminals = new TerminalManager(mirror);
  // The built-in bridge logs sessions here, so History works without any setting.
  const historyDir = vscode.Uri.joinPath(context.globalStorageUri, "sessions").fsPath;
  const archive = new SessionArchive(vscode.Uri.joinPath(context.globalStorageUri, "views").fsPath);
  const installer: BridgeInstaller = new BridgeInstaller(context.extensionUri.fsPath, context.globalStorageUri.fsPath, output, () => controller.restart());
  const controller: SessionController = new SessionController({
    store,
    permissions,
    questions,
    terminals,
    output,
    version,
    historyDir,
    archive,
    memory: context.workspaceState,
    managedPython: () => installer.managedPython(),
    installBridge: () => installer.install(),
  });
  const follow = new FollowAlong();
  const docs = new DiffDocuments();
  const edits = new EditViews(docs, store, permissions, { read: currentText, write: replaceFile, noteForAgent: (t) => controller.noteForAgent(t) });
  const rules = new RulesView(controller, store);
  const rulesTree = vscode.window.createTreeView(RULES_VIEW_ID, { treeDataProvider: rules });
  rules.attach(rulesTree);
  const view: AgentViewProvider = new AgentViewProvider(context.extensionUri, store, (m) => routeWebviewMessage(m, { controller, permissions, questions, store, edits, view }));

  const storeSub = store.listen((event, change) => {
    if (event.type === "sessionStarted") follow.reset();
    if (event.type === "permissionResolved") edits.onAnswered(event.requestId);
    // A question waits for the user: said where they are looking when the view is out of sight.
    if (event.type === "questionAsked" && !view.isVisible) {
      void vscode.window.showInformationMessage(`The agent asks: ${event.message}`, "Answer").then((pick) => pick && focusView({ type: "revealItem", id: event.requestId }));
    }
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
  // The view's focus command may settle late (a closed view is being created): the request is posted
  // at once (the view keeps it until its webview is ready to take it), and again once the view has
  // focus, in case the workbench moved focus in between (e.g. back from the command palette).
  const focusView = (message: Parameters<AgentViewProvider["post"]>[0]) => {
    void Promise.resolve(vscode.commands.executeCommand(`${VIEW_ID}.focus`)).then(() => view.post(message));
    view.post(message);
  };

  context.subscriptions.push(
    output,
    mirror,
    follow,
    view,
    notifications,
    storeSub,
    createStatusBar(store),
    { dispose: () => void controller.dispose() },
    vscode.window.registerWebviewViewProvider(VIEW_ID, view),
    vscode.workspace.registerTextDocumentContentProvider(DIFF_SCHEME, docs),
    vscode.workspace.registerTextDocumentContentProvider(REVIEW_SCHEME, docs),
    command(COMMANDS.newSession, () => controller.newSession()),
    command(COMMANDS.cancel, () => controller.cancel()),
    command(COMMANDS.restart, () => controller.restart()),
    command(COMMANDS.selectAgent, () => pickAgent(controller)),
    command(COMMANDS.pickMode, () => pickMode(controller, store)),
    command(COMMANDS.pickModel, () => pickModel(controller, store)),
    command(COMMANDS.history, () => pickHistory(controller, store)),
    command(COMMANDS.renameSession, () => controller.renameSession()),
    command(COMMANDS.forkSession, () => controller.forkSession()),
    command(COMMANDS.deleteSession, () => pickSessionToDelete(controller, store)),
    rules,
    rulesTree,
    command(COMMANDS.refreshRules, () => rules.refresh()),
    command(COMMANDS.revokeRule, (line) => {
      if (typeof line === "object" && line !== null && typeof (line as { number?: unknown }).number === "number") return rules.revoke((line as { number: number }).number);
    }),
    command(COMMANDS.revokeAllRules, async () => {
      const count = rules.rules?.rules.length ?? 0;
      if (count === 0) return;
      const sure = await vscode.window.showWarningMessage(`Revoke all ${count} remembered "always" answers? The agent will ask again.`, { modal: true }, "Revoke All");
      if (sure) await rules.revoke();
    }),
    command(COMMANDS.showOutput, () => output.show(true)),
    command(COMMANDS.login, () => controller.login()),
    command(COMMANDS.toggleFollow, () => store.dispatch({ type: "follow", enabled: !store.state.follow })),
    command(COMMANDS.focus, () => focusView({ type: "focusPrompt" })),
    command(COMMANDS.attachSelection, () => {
      const item = selectionInEditor();
      if (item) focusView({ type: "attached", items: [item] });
    }),
    command(COMMANDS.acceptEdit, (uri) => edits.answerReview(uri instanceof vscode.Uri ? uri : undefined, true)),
    command(COMMANDS.rejectEdit, (uri) => edits.answerReview(uri instanceof vscode.Uri ? uri : undefined, false)),
    command(ANSWER_COMMAND, (requestId, optionId) => {
      if (typeof requestId !== "string" || typeof optionId !== "string") return;
      if (!permissions.isOpen(requestId)) void vscode.window.showInformationMessage("This question was already answered.");
      notifications.choose(requestId, optionId);
    }),
    command(REVIEW_COMMAND, async (toolCallId) => {
      if (typeof toolCallId !== "string") return;
      if (canReview(store.state.cards[toolCallId])) await edits.review(toolCallId);
      else await focusView({ type: "revealCard", toolCallId });
    }),
    command(COMMANDS.sendPrompt, async (text?: unknown) => {
      const prompt = typeof text === "string" ? text : await vscode.window.showInputBox({ prompt: "Prompt for the agent" });
      if (prompt) await controller.prompt(prompt);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration(`${SECTION}.followAlong`)) store.dispatch({ type: "follow", enabled: followAlongDefault() });
      const agentChanged = ["agent", "agents", "pythonCommand", "bridgeArgs"].some((k) => e.affectsConfiguration(`${SECTION}.${k}`)) || e.affectsConfiguration(`${BRIDGE_SECTION}.rememberAlways`);
      // Select Agent restarts on the agent it stores itself.
      if (!agentChanged || controller.switchingAgent) return;
      output.appendLine(`[acp] agent settings changed (agent: ${selectedAgentName()}, ${controller.isDown ? "not running" : "running"})`);
      // A stopped agent restarts on the new settings at once (that is usually the fix); a running one
      // is offered a restart, which reopens the conversation.
      if (controller.isDown && store.state.connection.status !== "idle") void controller.restart().catch(() => undefined);
      else if (!controller.isDown)
        void vscode.window.showInformationMessage("ACP agent settings changed. Restart the agent to use them (the conversation stays).", "Restart Agent").then((p) => p && controller.restart());
    }),
  );
}

export function deactivate(): void {}
