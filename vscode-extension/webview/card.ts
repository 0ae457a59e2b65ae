/**
 * One tool-call card: status, kind icon, title, clickable locations, the approval question with one
 * button per option, and the content. Cards start open and collapse with their header button; a card
 * waiting for approval is always open.
 */
import type { PermissionOption } from "../shared/acp";
import { cardTerminalIds } from "../shared/reducer";
import type { SessionState, ToolCard } from "../shared/state";
import { contentBlock } from "./content";
import { h, icon, relPath } from "./dom";
import { KIND_ICONS } from "./icons";
import { renderMarkdown } from "./markdown";
import { terminalBlock } from "./terminal";
import { send } from "./vscodeApi";

const STATUS_LABEL: Record<ToolCard["status"], string> = {
  pending: "pending",
  in_progress: "in progress",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
};

export interface CardUi {
  isCollapsed(id: string): boolean;
  toggle(id: string): void;
}

export function renderCard(el: HTMLElement, state: SessionState, card: ToolCard, ui: CardUi): void {
  const awaiting = card.permission && card.permission.outcome === undefined;
  const collapsed = ui.isCollapsed(card.toolCallId) && !awaiting;
  el.className = `card status-${card.status} kind-${card.kind}${awaiting ? " awaiting" : ""}`;
  el.dataset.toolCallId = card.toolCallId;
  el.setAttribute("aria-label", `${card.title}: ${STATUS_LABEL[card.status]}`);
  const bodyId = `body-${card.toolCallId}`;
  const head = h(
    "div",
    { class: "card-head" },
    h("button", { class: "card-toggle", "aria-expanded": String(!collapsed), "aria-controls": bodyId, title: collapsed ? "Expand" : "Collapse", onclick: () => ui.toggle(card.toolCallId) }, collapsed ? "▸" : "▾"),
    icon(KIND_ICONS[card.kind] ?? KIND_ICONS.other, card.kind),
    h("span", { class: "card-title", title: card.title }, card.title.split("\n")[0]!),
    h("span", { class: `badge status-badge status-${card.status}` }, awaiting ? "awaiting approval" : STATUS_LABEL[card.status]),
  );
  const parts: Array<HTMLElement | null> = [head, locations(state, card)];
  if (!collapsed) parts.push(body(state, card, bodyId));
  // The question comes after the content, so the diff or command it is about is read first.
  if (card.permission) parts.push(permission(card, card.permission.options, card.permission.outcome));
  el.replaceChildren(...parts.filter((p): p is HTMLElement => p !== null));
}

function locations(state: SessionState, card: ToolCard): HTMLElement | null {
  if (card.locations.length === 0) return null;
  return h(
    "div",
    { class: "card-locations" },
    ...card.locations.slice(0, 20).map((loc) =>
      h("button", { class: "link loc", "data-path": loc.path, onclick: () => send({ type: "openLocation", path: loc.path, line: loc.line }) }, `${relPath(loc.path, state.cwd)}${loc.line ? `:${loc.line}` : ""}`),
    ),
  );
}

function permission(card: ToolCard, options: PermissionOption[], outcome: string | undefined): HTMLElement {
  if (outcome !== undefined) {
    const chosen = outcome === "cancelled" ? "Cancelled" : (options.find((o) => o.optionId === outcome)?.name ?? outcome);
    return h("div", { class: "permission answered" }, `Answered: ${chosen}`);
  }
  const requestId = card.permission!.requestId;
  return h(
    "div",
    { class: "permission", role: "group", "aria-label": `Approval for ${card.title}` },
    h("span", { class: "permission-q" }, "Allow this?"),
    ...options.map((o) =>
      h("button", { class: `perm-btn perm-${o.kind}`, "data-option-id": o.optionId, onclick: () => send({ type: "permission", requestId, optionId: o.optionId }) }, o.name),
    ),
  );
}

function body(state: SessionState, card: ToolCard, bodyId: string): HTMLElement {
  const el = h("div", { class: "card-body", id: bodyId });
  card.content.forEach((c, i) => el.append(contentBlock(state, card.toolCallId, c, i)));
  const embedded = new Set(card.content.flatMap((c) => (c.type === "terminal" ? [c.terminalId] : [])));
  for (const tid of cardTerminalIds(card)) if (!embedded.has(tid)) el.append(terminalBlock(tid, state.terminals[tid]));
  if (card.content.length === 0 && !card.metaTerminalId && card.rawOutput != null && card.status !== "pending") {
    const md = h("div", { class: "md raw-output" });
    renderMarkdown(md, typeof card.rawOutput === "string" ? card.rawOutput : "```json\n" + JSON.stringify(card.rawOutput, null, 2).slice(0, 20_000) + "\n```");
    el.append(md);
  }
  return el;
}
