/**
 * Quick picks for the session controls: agent, mode, model (a `category: "model"` config option) and
 * history (`session/list` + `session/load`: in the agent's order, each with its title, time and
 * folder; sessions without a title, i.e. without a prompt, are not offered). Each returns after acting, or quietly when dismissed.
 */
import * as vscode from "vscode";
import type { SessionConfigOption, SessionInfo } from "../shared/acp";
import { configuredAgentNames, SECTION, selectedAgentName } from "./config";
import type { SessionController } from "./controller";
import type { SessionStore } from "./store";

export async function pickAgent(controller: SessionController): Promise<void> {
  const current = selectedAgentName();
  const items = configuredAgentNames().map((name) => ({ label: name, description: name === current ? "current" : undefined }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: Select Agent" });
  if (!pick || pick.label === current) return;
  await vscode.workspace.getConfiguration(SECTION).update("agent", pick.label, vscode.ConfigurationTarget.Global);
  await controller.restart();
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

export async function pickHistory(controller: SessionController, store: SessionStore): Promise<void> {
  const conn = await controller.connect();
  if (!conn.canListSessions || !conn.canLoadSession) {
    void vscode.window.showInformationMessage("This agent does not offer session history.");
    return;
  }
  const sessions: SessionInfo[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 20 && sessions.length < HISTORY_LIMIT; pages++) {
    const page = await conn.listSessions(controller.cwd, cursor);
    sessions.push(...page.sessions);
    cursor = page.nextCursor ?? undefined;
    if (!cursor) break;
  }
  // A session without a title has no prompt yet (the bridge titles sessions by their first prompt):
  // nothing to go back to.
  const conversations = sessions.filter((s) => s.title?.trim());
  if (conversations.length === 0) {
    void vscode.window.showInformationMessage("No stored conversations for this folder yet.");
    return;
  }
  const current = store.state.sessionId;
  const items = conversations.slice(0, HISTORY_LIMIT).map((s) => ({
    label: s.title!,
    description: [s.sessionId === current ? "current" : "", localTime(s.updatedAt)].filter(Boolean).join(" · "),
    detail: s.cwd,
    session: s,
  }));
  const pick = await vscode.window.showQuickPick(items, { title: "ACP: Open Session from History", matchOnDetail: true });
  if (pick) await controller.loadSession(pick.session.sessionId, pick.session.cwd);
}

function localTime(iso: string | null | undefined): string {
  if (!iso) return "";
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleString();
}
