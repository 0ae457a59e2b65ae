/**
 * The conversation: user prompts, streamed agent text (Markdown), collapsible thoughts, notices and tool
 * cards, in order. Elements are keyed by item id so an update re-renders one element, and new items are
 * appended without touching the rest. A card's nested calls (Code Mode sub-calls) are cards of their
 * own, keyed the same way, inside their program's card.
 */
import type { SessionState, TimelineItem, ToolCard } from "../shared/state";
import { block } from "./content";
import { type CardUi, nestedBox, renderCard } from "./card";
import { h } from "./dom";
import { renderMarkdown } from "./markdown";
import { renderQuestion } from "./question";
import { landedNote } from "../shared/steering";
import { compactionTitle } from "../shared/usage";

/** A control of the card itself with this focus key (not one of a nested card's). */
function ownControl(el: HTMLElement, key: string): HTMLElement | null {
  const box = nestedBox(el);
  for (const c of el.querySelectorAll<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`)) if (!box?.contains(c)) return c;
  return null;
}

export class Timeline {
  private readonly els = new Map<string, HTMLElement>();
  private rendered = 0;

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

  /** Append elements for items added since the last call. */
  appendNew(s: SessionState): void {
    const frag = document.createDocumentFragment();
    for (; this.rendered < s.timeline.length; this.rendered++) {
      const item = s.timeline[this.rendered]!;
      const el = this.create(item);
      this.els.set(item.id, el);
      this.fill(el, s, item);
      frag.append(el);
    }
    this.root.append(frag);
  }

  /** Re-render one message item or card (cards are keyed by toolCallId). */
  refresh(s: SessionState, id: string): void {
    const el = this.els.get(id);
    if (!el) return;
    const item = s.cards[id] ? ({ type: "tool", id } as const) : s.timeline.find((t) => t.id === id);
    if (item) this.fill(el, s, item);
  }

  element(id: string): HTMLElement | undefined {
    return this.els.get(id);
  }

  /** The cards of the calls `card` made, in its nested box in arrival order (new ones created). */
  private syncNested(el: HTMLElement, s: SessionState, card: ToolCard): void {
    const ids = card.children ?? [];
    if (ids.length === 0) return;
    let box = nestedBox(el);
    if (!box) {
      box = h("div", { class: "card-children", role: "group", "aria-label": "Calls made by this program" });
      el.append(box);
    }
    for (const id of ids) {
      let child = this.els.get(id);
      if (!child) {
        child = this.create({ type: "tool", id });
        this.els.set(id, child);
        this.fill(child, s, { type: "tool", id });
      }
      if (child.parentElement !== box) box.append(child);
    }
  }

  private create(item: TimelineItem): HTMLElement {
    if (item.type === "tool") return h("article", { class: "card", id: `card-${item.id}` });
    if (item.type === "thought") return h("details", { class: "thought" });
    if (item.type === "compaction") return h("details", { class: "compaction", open: item.status === "in_progress" });
    if (item.type === "question") return h("section", { class: "question", id: `question-${item.id}`, role: "group", "aria-label": "A question from the agent" });
    return h("div", { class: `msg msg-${item.type}${item.type === "notice" ? ` notice-${item.severity}` : ""}` });
  }

  private fill(el: HTMLElement, s: SessionState, item: TimelineItem): void {
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
        el.replaceChildren(...(note ? [h("div", { class: "steer-note" }, note)] : []), h("div", { class: "msg-text" }, item.text), ...item.blocks.map((b) => block(b, s.cwd)));
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
