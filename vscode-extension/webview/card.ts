/**
 * One tool-call card: outcome badge, kind icon, title, clickable locations, the agent's note, the
 * content, and the approval question. A plan update is one line (the plan lives in the footer). Long
 * read/search/fetch bodies start collapsed; a card waiting for approval is always open.
 *
 * The question: "Allow once" (primary), "Reject" and "Reject with a reason…" as buttons, the "always"
 * choices behind "More choices" (they outlive this call), each button saying what it covers ("Always
 * allow `ls` commands (this session)", wrapped when long), and "Review" to open a pending edit in the
 * diff editor. A terminal of a card that waits for its answer says "not started", never "running". Every control carries a `data-focus-key`, so focus survives the card being re-rendered.
 *
 * A program's card (Code Mode) or a subagent's (`task`) holds the cards of the calls it made, each a full
 * card of its own, in a box after its own parts (timeline.ts folds it); a program's text list of those
 * calls is then left out, the nested cards say it live.
 *
 * A command running in the background (`run_in_background`) stays live after its call returned, and
 * after its turn; its card has **Stop** (`_acpBridge/killBackground`) while it runs.
 */
import type { PermissionOption, ToolCallContent } from "../shared/acp";
import { stopControl } from "../shared/background";
import { answerText, approvalLayout, cardOutcome, choiceLabel, isAwaiting, isNestedCallList, isPlanCard, startsCollapsed } from "../shared/cardView";
import { cardTerminalIds } from "../shared/reducer";
import type { SessionState, ToolCard } from "../shared/state";
import { contentBlock } from "./content";
import { h, icon, relPath } from "./dom";
import { KIND_ICONS } from "./icons";
import { renderMarkdown } from "./markdown";
import { terminalBlock } from "./terminal";
import { send } from "./vscodeApi";

export interface CardUi {
  /** The user's own choice for this card, if they toggled it. */
  collapsedByUser(id: string): boolean | undefined;
  toggle(id: string, collapsed: boolean): void;
  /** Reason typed for a rejection, by request id (kept across re-renders). */
  reason(requestId: string): string | undefined;
  setReason(requestId: string, text: string | undefined): void;
  /** An approval button was used: focus moves on once the answer lands. */
  answered(requestId: string): void;
}

export function isCollapsed(card: ToolCard, ui: CardUi): boolean {
  if (isAwaiting(card)) return false;
  return ui.collapsedByUser(card.toolCallId) ?? startsCollapsed(card);
}

export function renderCard(el: HTMLElement, state: SessionState, card: ToolCard, ui: CardUi): void {
  const awaiting = isAwaiting(card);
  const outcome = cardOutcome(card, state.terminals);
  el.dataset.toolCallId = card.toolCallId;
  el.setAttribute("aria-label", `${card.title.split("\n")[0]}: ${outcome.text}`);
  if (isPlanCard(card) && !awaiting) {
    el.className = `card compact status-${card.status} kind-${card.kind}${card.parentId ? " nested" : ""}`;
    const done = state.plan.filter((e) => e.status === "completed").length;
    setParts(el, [
      h("div", { class: "card-head" }, icon(KIND_ICONS.think, "plan"), h("span", { class: "card-title" }, "Plan updated"), h("span", { class: "plan-progress" }, state.plan.length ? `${done}/${state.plan.length} done` : "")),
    ]);
    return;
  }
  // A nested call waiting for an answer keeps its program's card open.
  const collapsed = isCollapsed(card, ui) && !hasAwaitingNested(state, card);
  const nested = card.parentId ? " nested" : "";
  el.className = `card status-${card.status} kind-${card.kind}${awaiting ? " awaiting" : ""}${card.undo?.state === "undone" ? " undone" : ""}${nested}${collapsed ? " collapsed" : ""}`;
  const bodyId = `body-${card.toolCallId}`;
  const head = h(
    "div",
    { class: "card-head" },
    h(
      "button",
      { class: "card-toggle", "data-focus-key": "toggle", "aria-expanded": String(!collapsed), "aria-controls": bodyId, title: collapsed ? "Show details" : "Hide details", onclick: () => ui.toggle(card.toolCallId, !collapsed) },
      collapsed ? "▸" : "▾",
    ),
    icon(KIND_ICONS[card.kind] ?? KIND_ICONS.other, card.kind),
    h("span", { class: "card-title", title: card.title }, card.title.split("\n")[0]!),
    h("span", { class: `badge status-badge status-${card.status} tone-${outcome.tone}` }, outcome.text),
  );
  const parts: Array<HTMLElement | null> = [head, locations(state, card)];
  if (card.note) parts.push(h("div", { class: "card-note" }, card.note));
  parts.push(backgroundRow(card));
  if (!collapsed) parts.push(body(state, card, bodyId));
  else if (card.content.length > 0) parts.push(h("button", { class: "link show-more", "data-focus-key": "more", onclick: () => ui.toggle(card.toolCallId, false) }, "Show details"));
  parts.push(undoRow(card));
  // The question comes after the content, so the diff or command it is about is read first.
  if (card.permission) parts.push(permission(card, ui));
  setParts(el, parts.filter((p): p is HTMLElement => p !== null));
}

/** The element that holds a card's nested calls (a program's sub-calls), if it has any yet. */
export function nestedBox(el: HTMLElement): HTMLElement | null {
  return el.querySelector<HTMLElement>(":scope > .card-children");
}

/**
 * Replace the card's own parts. Its nested calls' box stays where it is, untouched, so a nested card
 * keeps its element and its focus while the program's card is redrawn around it.
 */
function setParts(el: HTMLElement, parts: HTMLElement[]): void {
  const box = nestedBox(el);
  for (const child of [...el.childNodes]) if (child !== box) child.remove();
  if (box) box.before(...parts);
  else el.append(...parts);
}

function hasAwaitingNested(state: SessionState, card: ToolCard): boolean {
  return (card.children ?? []).some((id) => {
    const child = state.cards[id];
    return !!child && (isAwaiting(child) || hasAwaitingNested(state, child));
  });
}

function locations(state: SessionState, card: ToolCard): HTMLElement | null {
  if (card.locations.length === 0) return null;
  return h(
    "div",
    { class: "card-locations" },
    ...card.locations
      .slice(0, 20)
      .map((loc, i) =>
        h("button", { class: "link loc", "data-path": loc.path, "data-focus-key": `loc:${i}`, onclick: () => send({ type: "openLocation", path: loc.path, line: loc.line }) }, `${relPath(loc.path, state.cwd)}${loc.line ? `:${loc.line}` : ""}`),
      ),
  );
}

function permission(card: ToolCard, ui: CardUi): HTMLElement {
  const p = card.permission!;
  if (p.outcome !== undefined) return h("div", { class: "permission answered" }, `Answered: ${answerText(card)}`);
  return approvalControls(card, ui, "card");
}

/** The question's controls: in the card, and (the same) in the footer's pinned approval bar. */
export function approvalControls(card: ToolCard, ui: CardUi, where: "card" | "bar"): HTMLElement {
  const p = card.permission!;
  const requestId = p.requestId;
  const layout = approvalLayout(p.options);
  const answer = (o: PermissionOption, feedback?: string) => {
    ui.answered(requestId);
    send({ type: "permission", requestId, optionId: o.optionId, ...(feedback ? { feedback } : {}) });
  };
  const button = (o: PermissionOption, extra = "") =>
    h("button", { type: "button", class: `perm-btn perm-${o.kind}${extra}`, "data-option-id": o.optionId, "data-focus-key": `perm:${o.optionId}`, title: o.name, onclick: () => answer(o) }, choiceLabel(o));
  const hasDiff = card.content.some((c) => c.type === "diff");
  const row = h("div", { class: "perm-row" }, ...layout.main.map((o) => button(o)));
  if (layout.reject) {
    row.append(h("button", { type: "button", class: "secondary perm-reason-toggle", "data-focus-key": "reason-toggle", "aria-expanded": String(ui.reason(requestId) !== undefined), onclick: () => ui.setReason(requestId, ui.reason(requestId) === undefined ? "" : undefined) }, "Reject with a reason…"));
  }
  if (hasDiff) row.append(h("button", { type: "button", class: "secondary perm-review", "data-focus-key": "review", title: "Open the whole file in the diff editor, with Accept and Reject", onclick: () => send({ type: "review", toolCallId: card.toolCallId }) }, "Review in editor"));
  if (where === "bar") row.append(h("button", { type: "button", class: "link perm-show", "data-focus-key": "show", onclick: () => document.getElementById(`card-${card.toolCallId}`)?.scrollIntoView({ block: "nearest" }) }, "Show card"));
  const parts: HTMLElement[] = [h("span", { class: "permission-q" }, where === "bar" ? `Approve: ${card.title.split("\n")[0]}` : "Allow this?"), row];
  const reason = ui.reason(requestId);
  if (layout.reject && reason !== undefined) {
    const input = h("input", { type: "text", class: "perm-reason", "data-focus-key": "reason", "aria-label": "Why reject? (the agent is told)", placeholder: "Why? The agent is told, so it can do better" });
    input.value = reason;
    input.addEventListener("input", () => ui.setReason(requestId, input.value));
    const reject = layout.reject;
    const submit = () => answer(reject, input.value.trim() || undefined);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") {
        e.preventDefault();
        submit();
      }
    });
    parts.push(h("div", { class: "perm-reason-row" }, input, h("button", { type: "button", class: "perm-btn-reason", "data-focus-key": "reason-send", onclick: submit }, "Send rejection")));
  }
  if (layout.always.length > 0) {
    const more = h("details", { class: "perm-more" }, h("summary", { "data-focus-key": "more-choices" }, "More choices"), h("div", { class: "perm-row" }, ...layout.always.map((o) => button(o, " perm-always"))));
    parts.push(more);
  }
  return h("div", { class: `permission${where === "bar" ? " in-bar" : ""}`, role: "group", "aria-label": `Approval for ${card.title.split("\n")[0]}` }, ...parts);
}

/** A background command's line while it runs: it says so, with Stop (or that it is being stopped). */
function backgroundRow(card: ToolCard): HTMLElement | null {
  const control = stopControl(card);
  const failed = card.stop?.state === "failed" ? h("div", { class: "undo-error", role: "status" }, card.stop.reason) : null;
  if (control === "none") return failed;
  const button =
    control === "stopping"
      ? h("button", { type: "button", class: "secondary bg-stop", "data-focus-key": "stop", disabled: true }, "Stopping…")
      : h("button", { type: "button", class: "secondary bg-stop", "data-focus-key": "stop", title: "End this command (its processes stop; the agent is told)", onclick: () => send({ type: "stopBackground", toolCallId: card.toolCallId }) }, "Stop");
  return h("div", { class: "bg-row" }, h("span", { class: "bg-label" }, "Runs in the background"), button, failed);
}

function undoRow(card: ToolCard): HTMLElement | null {
  const edited = card.content.some((c) => c.type === "diff");
  if (!edited || card.status !== "completed") return null;
  if (card.undo?.state === "undone") return h("div", { class: "card-note undo-done" }, "Edit undone: the file is back to what it was before it.");
  const failed = card.undo?.state === "failed" ? h("div", { class: "undo-error", role: "status" }, card.undo.reason) : null;
  return h(
    "div",
    { class: "undo-row" },
    h("button", { type: "button", class: "secondary undo", "data-focus-key": "undo", title: "Put the file back as it was before this edit", onclick: () => send({ type: "undo", toolCallId: card.toolCallId }) }, "Undo edit"),
    failed,
  );
}

function body(state: SessionState, card: ToolCard, bodyId: string): HTMLElement {
  const el = h("div", { class: "card-body", id: bodyId });
  const awaiting = isAwaiting(card);
  const nestedShown = (card.children?.length ?? 0) > 0;
  card.content.forEach((c, i) => {
    if (isNoteBlock(c, card.note)) return; // shown once, as the card's note
    if (nestedShown && isNestedCallList(c)) return; // the nested cards below say it, live
    if (card.parentId && isProgramNote(c)) return; // nested under that program already
    el.append(contentBlock(state, card, c, i, { awaiting }));
  });
  const embedded = new Set(card.content.flatMap((c) => (c.type === "terminal" ? [c.terminalId] : [])));
  for (const tid of cardTerminalIds(card)) if (!embedded.has(tid)) el.append(terminalBlock(tid, state.terminals[tid], card));
  if (card.proposed && card.status !== "completed") {
    const section = h("div", { class: "proposed" }, h("div", { class: "proposed-head" }, "Proposed change (not applied)"));
    card.proposed.forEach((c, i) => section.append(contentBlock(state, card, c, i, { proposed: true })));
    el.append(section);
  }
  if (card.content.length === 0 && !card.metaTerminalId && card.rawOutput != null && card.status !== "pending") {
    const md = h("div", { class: "md raw-output" });
    renderMarkdown(md, typeof card.rawOutput === "string" ? card.rawOutput : "```json\n" + JSON.stringify(card.rawOutput, null, 2).slice(0, 20_000) + "\n```");
    el.append(md);
  }
  return el;
}

/** The line a nested call's approval starts with: "Asked by the program of `…` (call …)." */
function isProgramNote(c: ToolCallContent): boolean {
  return c.type === "content" && c.content.type === "text" && /^Asked by the program of /.test(c.content.text);
}

function isNoteBlock(c: ToolCallContent, note: string | undefined): boolean {
  return !!note && c.type === "content" && c.content.type === "text" && c.content.text.trim() === note;
}
