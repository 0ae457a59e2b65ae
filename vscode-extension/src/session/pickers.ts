/**
 * Quick picks for the session controls: agent, mode, model (a `category: "model"` config option),
 * history (`session/list` + `session/load`: in the agent's order, each with its title, time and
 * folder; sessions without a title, i.e. without a prompt, are not offered) and deleting a stored
 * session. Each returns after acting, or quietly when dismissed.
 */
import * as vscode from "vscode";
import type { SessionConfigOption, SessionInfo } from "../../shared/acp";
import { configuredAgentNames, SECTION, selectedAgentName } from "./config";
import type { SessionController } from "./controller";
import type { SessionStore } from "./store";

export async function pickAgent(controller: SessionController): Promise<void> {
  const current = selectedAgentName();
  const items = configuredAgentNames().map((name) => ({ label: name, description: name === current ? "current" : undefined }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: Select Agent" });
  if (!pick || pick.label === current) return;
  await controller.switchAgent(() => vscode.workspace.getConfiguration(SECTION).update("agent", pick.label, vscode.ConfigurationTarget.Global));
}

export async function pickMode(controller: SessionController, store: SessionStore): Promise<void> {
  const modes = store.state.modes;
  if (!modes || modes.availableModes.length === 0) {
    void vscode.window.showInformationMessage("This agent offers no modes.");
    return;
  }
  const items = modes.availableModes.map((m) => ({ label: m.name, description: m.id === modes.currentModeId ? "current" : undefined, detail: m.description ?? undefined, id: m.id }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: Select Mode" });
  if (pick) await controller.setMode(pick.id);
}

export function modelOption(options: SessionConfigOption[]): Extract<SessionConfigOption, { type: "select" }> | undefined {
  return options.find((o): o is Extract<SessionConfigOption, { type: "select" }> => o.category === "model" && o.type === "select");
}

export function selectValues(option: Extract<SessionConfigOption, { type: "select" }>): Array<{ value: string; name: string }> {
  return option.options.flatMap((o) => ("options" in o ? o.options : [o]));
}

export async function pickModel(controller: SessionController, store: SessionStore): Promise<void> {
  const option = modelOption(store.state.configOptions);
  if (!option) {
    void vscode.window.showInformationMessage("This agent offers no model choice.");
    return;
  }
  const items = selectValues(option).map((v) => ({ label: v.name, description: v.value === option.currentValue ? "current" : undefined, value: v.value }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: Select Model" });
  if (pick) await controller.setConfigOption(option.id, pick.value);
}

/** At most this many stored sessions are offered (session/list pages are followed until then). */
const HISTORY_LIMIT = 200;

/**
 * The stored conversations of this folder, in the agent's order, following `session/list`'s pages. A
 * session without a title has no prompt yet (the bridge titles sessions by their first prompt): nothing
 * to go back to. Undefined (and the user told) when the agent keeps no history.
 */
async function conversations(controller: SessionController): Promise<SessionInfo[] | undefined> {
  const conn = await controller.connect();
  if (!conn.canListSessions || !(conn.canLoadSession || conn.canResumeSession)) {
    void vscode.window.showInformationMessage("This agent does not offer session history.");
    return undefined;
  }
  const sessions: SessionInfo[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20 && sessions.length < HISTORY_LIMIT; pages++) {
    const page = await conn.listSessions(controller.cwd, cursor);
    sessions.push(...page.sessions);
    cursor = page.nextCursor ?? undefined;
    if (!cursor) break;
  }
  const titled = sessions.filter((s) => s.title?.trim()).slice(0, HISTORY_LIMIT);
  if (titled.length === 0) void vscode.window.showInformationMessage("No stored conversations for this folder yet.");
  return titled;
}

function sessionItems(sessions: SessionInfo[], current: string | null) {
  return sessions.map((s) => ({
    label: s.title!,
    description: [s.sessionId === current ? "current" : "", localTime(s.updatedAt)].filter(Boolean).join(" · "),
    detail: s.cwd,
    session: s,
  }));
}

export async function pickHistory(controller: SessionController, store: SessionStore): Promise<void> {
  const sessions = await conversations(controller);
  if (!sessions?.length) return;
  const pick = await vscode.window.showQuickPick(sessionItems(sessions, store.state.sessionId), { title: "ACP: Open Session from History", matchOnDetail: true });
  if (pick) await controller.loadSession(pick.session.sessionId, pick.session.cwd);
}

/** Delete a stored conversation (`session/delete`): it leaves History and the agent deletes its log. */
export async function pickSessionToDelete(controller: SessionController, store: SessionStore): Promise<void> {
  const conn = await controller.connect();
  if (!conn.canDeleteSession) {
    void vscode.window.showInformationMessage("This agent cannot delete stored sessions.");
    return;
  }
  const sessions = await conversations(controller);
  if (!sessions?.length) return;
  const pick = await vscode.window.showQuickPick(sessionItems(sessions, store.state.sessionId), { title: "ACP: Delete Session from History", matchOnDetail: true });
  if (!pick) return;
  const sure = await vscode.window.showWarningMessage(`Delete "${pick.label}"? Its history is removed for good.`, { modal: true }, "Delete");
  if (sure === "Delete") await controller.deleteSession(pick.session.sessionId);
}

function localTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleString();
}
