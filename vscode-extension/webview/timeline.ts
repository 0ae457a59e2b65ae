/**
 * The conversation: user prompts, streamed agent text (Markdown), collapsible thoughts, notices, tool
 * cards and what restoring files from a checkpoint did, in order. Elements are keyed by item id so an
 * update re-renders one element, and new items are appended without touching the rest. A card's nested
 * calls (a Code Mode program's or a subagent's) are cards of their own, keyed the same way, inside their
 * parent's card, under a fold that says how many there are ("12 calls · 1 running"): a task's calls
 * start folded, a program's open, and a call waiting for an answer keeps the fold open.
 *
 * A user message whose turn the agent numbered offers "Restore to before this turn" when the agent keeps
 * checkpoints (shared/checkpoints.ts).
 */
import { canRestoreTurn, restoreText } from "../shared/checkpoints";
import { nestedFold, nestedFoldText } from "../shared/cardView";
import type { RestoreView, SessionState, TimelineItem, ToolCard } from "../shared/state";
import { block } from "./content";
import { type CardUi, nestedBox, renderCard } from "./card";
import { h, relPath } from "./dom";
import { renderMarkdown } from "./markdown";
import { renderQuestion } from "./question";
import { landedNote } from "../shared/steering";
import { compactionTitle } from "../shared/usage";
import { send } from "./vscodeApi";

/** The key under which the user's folding of a card's nested calls is kept (CardUi.collapsedByUser). */
export const nestedFoldKey = (toolCallId: string) => `nested:${toolCallId}`;

/** A control of the card itself with this focus key (not one of a nested card's). */
function ownControl(el: HTMLElement, key: string): HTMLElement | null {
  const box = nestedBox(el);
  for (const c of el.querySelectorAll<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`)) if (!box?.contains(c)) return c;
  return null;
}

export class Timeline {
  private readonly els = new Map<string, HTMLElement>();
  private rendered = 0;
  /** Items drawn in this frame (one created and updated between two frames is drawn once). */
  private readonly drawn = new Set<string>();

  constructor(
    readonly root: HTMLElement,
    private readonly ui: CardUi,
    private readonly onFocusLost: (toolCallId: string) => void,
  ) {}

  reset(): void {
    this.els.clear();
    this.rendered = 0;
    this.root.replaceChildren();
  }

  /** A new frame: every item may be drawn again. */
  beginFrame(): void {
    this.drawn.clear();
  }

  /**
   * Append elements for items added since the last call, until `deadline` (performance.now()) passes;
   * at least one. False: some are left for the next call.
   */
  appendNew(s: SessionState, deadline = Infinity): boolean {
    const frag = document.createDocumentFragment();
    for (; this.rendered < s.timeline.length; this.rendered++) {
      if (frag.childNodes.length > 0 && performance.now() > deadline) break;
      const item = s.timeline[this.rendered]!;
      const el = this.create(item);
      this.els.set(item.id, el);
      this.fill(el, s, item);
      frag.append(el);
    }
    this.root.append(frag);
    return this.rendered >= s.timeline.length;
  }

  /** Re-render one message item or card (cards are keyed by toolCallId), unless drawn in this frame already. */
  refresh(s: SessionState, id: string): void {
    const el = this.els.get(id);
    if (!el) return;
    const card = s.cards[id];
    const item = card ? ({ type: "tool", id } as const) : s.timeline.find((t) => t.id === id);
    if (item && !this.drawn.has(id)) this.fill(el, s, item);
    // The parent's fold counts its calls' states: a call that changed may change that line.
    const parent = card?.parentId ? s.cards[card.parentId] : undefined;
    const parentEl = parent ? this.els.get(parent.toolCallId) : undefined;
    if (parent && parentEl) this.syncNested(parentEl, s, parent);
  }

  element(id: string): HTMLElement | undefined {
    return this.els.get(id);
  }

  /**
   * The cards of the calls `card` made, in its nested box in arrival order (new ones created), under the
   * fold's toggle. The box and its toggle are made once and only updated, so focus on the toggle or in
   * a nested card survives the parent being redrawn.
   */
  private syncNested(el: HTMLElement, s: SessionState, card: ToolCard): void {
    const fold = nestedFold(s, card);
    if (!fold) return;
    const key = nestedFoldKey(card.toolCallId);
    let box = nestedBox(el);
    if (!box) {
      const listId = `nested-${card.toolCallId}`;
      const toggle = h("button", { type: "button", class: "link nested-toggle", "data-focus-key": "nested-toggle", "aria-controls": listId });
      toggle.addEventListener("click", () => this.ui.toggle(key, toggle.getAttribute("aria-expanded") === "true"));
      box = h("div", { class: "card-children", role: "group", "aria-label": "Calls made by this call" }, toggle, h("div", { class: "nested-list", id: listId }));
      el.append(box);
    }
    const toggle = box.querySelector<HTMLElement>(":scope > .nested-toggle")!;
    const list = box.querySelector<HTMLElement>(":scope > .nested-list")!;
    const collapsed = !fold.forcedOpen && (this.ui.collapsedByUser(key) ?? fold.startsCollapsed);
    toggle.textContent = `${collapsed ? "▸" : "▾"} ${nestedFoldText(fold)}`;
    toggle.setAttribute("aria-expanded", String(!collapsed));
    toggle.title = collapsed ? "Show the calls it made" : "Hide the calls it made";
    box.classList.toggle("folded", collapsed);
    list.hidden = collapsed;
    for (const id of card.children ?? []) {
      let child = this.els.get(id);
      if (!child) {
        child = this.create({ type: "tool", id });
        this.els.set(id, child);
        this.fill(child, s, { type: "tool", id });
      }
      if (child.parentElement !== list) list.append(child);
    }
  }

  private create(item: TimelineItem): HTMLElement {
    if (item.type === "tool") return h("article", { class: "card", id: `card-${item.id}` });
    if (item.type === "thought") return h("details", { class: "thought" });
    if (item.type === "compaction") return h("details", { class: "compaction", open: item.status === "in_progress" });
    if (item.type === "question") return h("section", { class: "question", id: `question-${item.id}`, role: "group", "aria-label": "A question from the agent" });
    if (item.type === "restore") return h("section", { class: "restore", id: `restore-${item.id}`, role: "status" });
    return h("div", { class: `msg msg-${item.type}${item.type === "notice" ? ` notice-${item.severity}` : ""}` });
  }

  private fill(el: HTMLElement, s: SessionState, item: TimelineItem): void {
    this.drawn.add(item.id);
    switch (item.type) {
      case "tool": {
        const card = s.cards[item.id];
        if (!card) return;
        // Re-rendering replaces the card's controls: the focused one gets focus back (same key), or, if
        // it is gone (an answered question), the view decides where focus goes next. Focus inside a
        // nested card is not this card's: that element is not re-rendered.
        const active = document.activeElement;
        const focused = active instanceof HTMLElement && el.contains(active) && !nestedBox(el)?.contains(active) ? active : undefined;
        const key = focused?.dataset.focusKey;
        renderCard(el, s, card, this.ui);
        this.syncNested(el, s, card);
        if (!focused) return;
        const again = key ? ownControl(el, key) : null;
        if (again) again.focus({ preventScroll: true });
        else this.onFocusLost(card.toolCallId);
        return;
      }
      case "notice":
        el.textContent = item.text;
        return;
      case "question":
        renderQuestion(el, item);
        return;
      case "restore":
        renderRestore(el, s, item);
        return;
      case "compaction": {
        const details = el as HTMLDetailsElement;
        // Open while the summary streams in; closed once it is done (the user may open it again).
        if (details.dataset.status === "in_progress" && item.status !== "in_progress") details.open = false;
        details.dataset.status = item.status;
        el.className = `compaction status-${item.status}`;
        const text = item.summary.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");
        const body = h("div", { class: "md" });
        renderMarkdown(body, text || (item.status === "in_progress" ? "…" : "(no summary)"));
        el.replaceChildren(h("summary", {}, compactionTitle(item)), body, ...item.summary.filter((b) => b.type !== "text").map((b) => block(b, s.cwd)));
        return;
      }
      case "thought": {
        const body = h("div", { class: "md" });
        renderMarkdown(body, item.text);
        el.replaceChildren(h("summary", {}, "Thinking"), body);
        return;
      }
      case "user": {
        // A message sent while the agent worked says so, where the agent read it.
        const note = landedNote(item);
        el.classList.toggle("msg-steered", note !== undefined);
        if (item.turn !== undefined) el.dataset.turn = String(item.turn);
        const restore = canRestoreTurn(s, item)
          ? h("div", { class: "msg-actions" }, h("button", { type: "button", class: "link restore-turn", "data-turn": String(item.turn), title: "Put the files back as they were before the agent worked on this message (the conversation goes on)", onclick: () => send({ type: "rewind", turn: item.turn! }) }, "Restore to before this turn"))
          : null;
        el.replaceChildren(...(note ? [h("div", { class: "steer-note" }, note)] : []), h("div", { class: "msg-text" }, item.text), ...item.blocks.map((b) => block(b, s.cwd)), ...(restore ? [restore] : []));
        return;
      }
      case "agent": {
        const body = h("div", { class: "md" });
        renderMarkdown(body, item.text);
        el.replaceChildren(body, ...item.blocks.map((b) => block(b, s.cwd)));
        return;
      }
    }
  }
}

/** What a restore did: a headline, then each file (a link to it) with what happened to it. */
function renderRestore(el: HTMLElement, s: SessionState, item: RestoreView): void {
  const { title, lines } = restoreText(item);
  el.className = `restore status-${item.status}`;
  el.replaceChildren(
    h("div", { class: "restore-title" }, title),
    ...(lines.length
      ? [
          h(
            "ul",
            { class: "restore-files" },
            ...lines.map((l) => h("li", {}, h("button", { type: "button", class: "link restore-file", "data-path": l.path, onclick: () => send({ type: "openLocation", path: l.path }) }, relPath(l.path, s.cwd)), h("span", { class: "restore-action" }, ` ${l.text}`))),
          ),
        ]
      : []),
  );
}
