/**
 * The Agent webview. It sends `ready`, receives a snapshot and then batches of SessionEvents, applies
 * them with the shared reducer, and re-renders only what changed, at most once per frame. It never
 * imports `vscode`; everything it does goes through postMessage (shared/protocol.ts).
 *
 * Under a flood of updates (an agent streaming a thousand tool calls, a command printing megabytes),
 * each event is applied as it arrives (the reducer is cheap: it mutates in place) and marks what it
 * touched (a dirty set), so a card changed ten times between two frames is drawn once. A frame draws
 * for at most FRAME_BUDGET_MS; what is left is drawn in the next frame, so no task holds the page for
 * long (input, scrolling and a click stay answered). A frame first writes everything (cards, terminals,
 * header), then reads layout once (scrolling terminals and the page to their newest lines, the pinned
 * approval's visibility), so the page is laid out once per frame, not once per card. The update →
 * render figures (perf.ts) count an update as rendered once the frame that leaves nothing to draw has
 * been painted.
 *
 * Keeping approvals in sight: the view follows the newest content unless the user scrolled up
 * (scroll.ts); a pending approval whose buttons are not fully visible between the sticky header and the
 * footer is pinned in the footer, above the prompt, with the same choices; and when a question is
 * answered, focus moves to the next pending approval, or back to the prompt.
 */
import { pendingApprovals } from "../shared/cardView";
import type { Change } from "../shared/events";
import type { HostToWebview } from "../shared/protocol";
import { applyEvent } from "../shared/reducer";
import { emptyState, type SessionState } from "../shared/state";
import { approvalControls, type CardUi } from "./card";
import { type ComposerDraft, createComposer } from "./composer";
import { h } from "./dom";
import { renderHeader } from "./header";
import { updatePalette, watchTheme } from "./palette";
import { mountPerf, record, recordTransport } from "./perf";
import { renderPlan } from "./plan";
import { renderSteers } from "./steers";
import { TailFollower } from "./scroll";
import { fillTerminal, forgetTerminals, ingestTerminal, pinTerminals, terminalElements } from "./terminal";
import { nestedFoldKey, Timeline } from "./timeline";
import { loadUiState, saveUiState, send } from "./vscodeApi";
import { renderWaiting } from "./waiting";
import { renderWelcome } from "./welcome";

let state: SessionState = emptyState();
const ui = loadUiState();
const collapsed = new Map<string, boolean>(Object.entries(ui.collapsed ?? {}));
const reasons = new Map<string, string>();
let composerDraft: ComposerDraft = { text: ui.draft ?? "", attachments: ui.attachments ?? [], mentions: ui.mentions ?? [] };
const persist = () => saveUiState({ draft: composerDraft.text, attachments: composerDraft.attachments, mentions: composerDraft.mentions, collapsed: Object.fromEntries(collapsed) });

const header = h("header", { id: "header" });
const welcome = h("section", { id: "welcome", "aria-label": "Welcome", hidden: true });
const timelineEl = h("main", { id: "timeline", "aria-label": "Conversation" });
const jump = h("button", { id: "jump-newest", class: "secondary", hidden: true, title: "Scroll to the newest and follow the conversation again", onclick: () => follower.follow() }, "↓ Back to the newest");
const approvalBar = h("section", { id: "approval-bar", "aria-label": "Pending approval", hidden: true });
const planEl = h("section", { id: "plan", "aria-label": "Plan", hidden: true });
const steersEl = h("section", { id: "steers", "aria-label": "Sent, waiting for the agent's next step", "aria-live": "polite", hidden: true });
const waitingEl = h("section", { id: "waiting", "aria-label": "Waiting for the model", "aria-live": "polite", hidden: true });
const announcer = h("div", { class: "sr-only", "aria-live": "assertive" });
const composer = createComposer(composerDraft, (d) => {
  composerDraft = d;
  persist();
});
const footer = h("footer", { id: "footer" }, jump, approvalBar, planEl, steersEl, waitingEl, composer.root);
const app = document.getElementById("app")!;
app.append(header, welcome, timelineEl, footer, announcer);
mountPerf(app);
updatePalette(app);

/** The request just answered from this view: once its card re-renders, focus moves on. */
let answeredHere: string | undefined;

const cardUi: CardUi = {
  collapsedByUser: (id) => collapsed.get(id),
  toggle: (id, value) => {
    collapsed.set(id, value);
    persist();
    // A card's own fold, or the fold of the calls it made (kept under nestedFoldKey): that card redraws.
    dirty.ids.add(id.startsWith(nestedFoldKey("")) ? id.slice(nestedFoldKey("").length) : id);
    schedule();
  },
  reason: (requestId) => reasons.get(requestId),
  setReason: (requestId, text) => {
    const opening = !reasons.has(requestId) && text !== undefined;
    if (text === undefined) reasons.delete(requestId);
    else reasons.set(requestId, text);
    if (text === undefined || opening) {
      const card = Object.values(state.cards).find((c) => c.permission?.requestId === requestId);
      if (card) dirty.ids.add(card.toolCallId);
      dirty.bar = true;
      if (opening) focusAfterRender = { requestId, key: "reason" };
      schedule();
    }
  },
  answered: (requestId) => {
    answeredHere = requestId;
  },
};

let focusAfterRender: { requestId: string; key: string } | undefined;

const scroller = (document.scrollingElement ?? document.documentElement) as HTMLElement;
const follower = new TailFollower(
  scroller,
  timelineEl,
  { top: () => header.getBoundingClientRect().bottom, bottom: () => footer.getBoundingClientRect().top },
  (following) => {
    jump.hidden = following;
    scheduleBar();
  },
);

const timeline = new Timeline(timelineEl, cardUi, () => focusNext());

// Scrolling an element into view (focus, find, scrollIntoView) keeps it clear of the sticky header and footer.
new ResizeObserver(() => {
  scroller.style.scrollPaddingTop = `${header.offsetHeight}px`;
  scroller.style.scrollPaddingBottom = `${footer.offsetHeight}px`;
  scheduleBar();
}).observe(footer);
new ResizeObserver(() => (scroller.style.scrollPaddingTop = `${header.offsetHeight}px`)).observe(header);

const dirty = { reset: true, header: true, plan: true, steers: true, waiting: true, append: false, bar: true, ids: new Set<string>(), terminals: new Set<string>(), redrawTerminals: false };
/** A frame's share of drawing, in ms: what is left is drawn in the next one. */
const FRAME_BUDGET_MS = 20;
let pendingT0: number[] = [];
let planCompact = false;
let scheduled = false;

function merge(c: Change): void {
  if (c.reset) dirty.reset = true;
  if (c.header) dirty.header = true;
  if (c.plan) dirty.plan = true;
  if (c.steers) dirty.steers = true;
  if (c.waiting) dirty.waiting = true;
  if (c.timeline) dirty.append = true;
  for (const id of c.items ?? []) dirty.ids.add(id);
  for (const id of c.cards ?? []) {
    dirty.ids.add(id);
    dirty.bar = true;
  }
  for (const id of c.terminals ?? []) dirty.terminals.add(id);
}

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  // rAF paces rendering to frames; the timer covers a view whose frames are throttled (VS Code's
  // webview iframes often are), so an update never waits more than a frame's time.
  const timer = setTimeout(render, 16);
  requestAnimationFrame(() => {
    clearTimeout(timer);
    render();
  });
}

function render(): void {
  if (!scheduled) return;
  scheduled = false;
  const deadline = performance.now() + FRAME_BUDGET_MS;
  const f = { ...dirty };
  Object.assign(dirty, { reset: false, header: false, plan: false, steers: false, waiting: false, bar: false });
  // Writes: new items, then changed terminals and cards, each drawn once; the rest waits past the deadline.
  timeline.beginFrame();
  if (f.reset) {
    forgetTerminals(state.terminals);
    timeline.reset();
    dirty.append = true;
  }
  if (dirty.append) dirty.append = !timeline.appendNew(state, deadline);
  for (const tid of dirty.terminals) {
    if (performance.now() > deadline) break;
    dirty.terminals.delete(tid);
    for (const el of terminalElements(tid)) fillTerminal(el, state.terminals[tid], dirty.redrawTerminals);
  }
  if (dirty.terminals.size === 0) dirty.redrawTerminals = false;
  for (const id of dirty.ids) {
    if (performance.now() > deadline) break;
    dirty.ids.delete(id);
    timeline.refresh(state, id);
  }
  if (f.reset || f.header) {
    renderHeader(header, state);
    composer.setRunning(state.running);
    composer.setCommands(state.commands);
  }
  if (f.reset || f.header || f.append) renderWelcome(welcome, state);
  // The plan folds to its summary while a question waits (re-rendered only when that flips, so the
  // user's own folding stays).
  const compact = pendingApprovals(state).length > 0;
  if (f.reset || f.plan || compact !== planCompact) renderPlan(planEl, state.plan, compact);
  planCompact = compact;
  if (f.reset || f.steers) renderSteers(steersEl, state);
  if (f.reset || f.waiting || f.header) renderWaiting(waitingEl, state);
  if (f.reset || f.bar) renderBar();
  // Reads (one layout for the frame), and the scrolling they decide.
  pinTerminals();
  follower.afterRender();
  placeFocus();
  updateBarVisibility();
  const done = !dirty.append && dirty.ids.size === 0 && dirty.terminals.size === 0;
  if (!done) {
    schedule();
    return;
  }
  const t0s = pendingT0;
  pendingT0 = [];
  if (t0s.length > 0) {
    // after this task the browser paints the frame: measure then
    setTimeout(() => {
      const now = Date.now();
      record(t0s.map((t) => now - t));
    }, 0);
  }
}

/** The footer's copy of the oldest pending question (shown only when the card's own is out of sight). */
function renderBar(): void {
  const first = pendingApprovals(state)[0];
  const keep = document.activeElement instanceof HTMLElement && approvalBar.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
  if (!first) {
    approvalBar.replaceChildren();
    approvalBar.dataset.requestId = "";
    if (keep) focusNext();
    return;
  }
  const count = pendingApprovals(state).length;
  approvalBar.dataset.requestId = first.permission!.requestId;
  approvalBar.replaceChildren(approvalControls(first, cardUi, "bar"), count > 1 ? h("div", { class: "bar-count" }, `${count - 1} more waiting`) : "");
  if (keep) approvalBar.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(keep)}"]`)?.focus({ preventScroll: true });
}

let barCheck = false;
function scheduleBar(): void {
  if (barCheck) return;
  barCheck = true;
  requestAnimationFrame(() => {
    barCheck = false;
    updateBarVisibility();
  });
}

/** Pin the question in the footer when the card's own buttons are not fully in sight. */
function updateBarVisibility(): void {
  const requestId = approvalBar.dataset.requestId;
  const card = requestId ? Object.values(state.cards).find((c) => c.permission?.requestId === requestId) : undefined;
  const group = card ? document.querySelector(`#card-${CSS.escape(card.toolCallId)} .permission`) : null;
  let needed = false;
  if (group) {
    const r = group.getBoundingClientRect();
    const barHeight = approvalBar.hidden ? 0 : approvalBar.getBoundingClientRect().height;
    // Where the footer would start without the bar: measuring against the bar itself would flip-flop.
    const bottom = footer.getBoundingClientRect().top + barHeight;
    needed = r.top < header.getBoundingClientRect().bottom || r.bottom > bottom || r.height === 0;
  }
  const focusedInBar = approvalBar.contains(document.activeElement);
  const hide = !needed && !focusedInBar;
  if (approvalBar.hidden !== hide) approvalBar.hidden = hide;
}
window.addEventListener("scroll", scheduleBar, { passive: true });
window.addEventListener("resize", scheduleBar);

/**
 * Focus was parked on the prompt after an answer (no other question was open then): the next question
 * to arrive takes it, as long as the user has not started doing something else.
 */
let parked = false;
let focusNewApproval = false;
composer.textarea.addEventListener("input", () => (parked = false));
document.addEventListener("pointerdown", () => (parked = false), true);
document.addEventListener("focusin", (e) => {
  if (e.target !== composer.textarea) parked = false;
});

/** After an answer from this view: the next pending approval's first button, else the prompt. */
function focusNext(): void {
  const next = pendingApprovals(state)[0];
  if (next) {
    const inCard = document.querySelector<HTMLElement>(`#card-${CSS.escape(next.toolCallId)} .permission .perm-btn`);
    if (inCard) {
      inCard.focus({ preventScroll: true });
      follower.reveal(inCard);
      return;
    }
  }
  composer.textarea.focus({ preventScroll: true });
  parked = document.activeElement === composer.textarea;
}

function placeFocus(): void {
  if (focusAfterRender) {
    const { requestId, key } = focusAfterRender;
    focusAfterRender = undefined;
    const card = Object.values(state.cards).find((c) => c.permission?.requestId === requestId);
    const inBar = approvalBar.dataset.requestId === requestId && approvalBar.contains(document.activeElement) ? approvalBar : undefined;
    const scope = inBar ?? (card ? document.getElementById(`card-${card.toolCallId}`) : null);
    scope?.querySelector<HTMLElement>(`[data-focus-key="${CSS.escape(key)}"]`)?.focus();
  }
  if (focusNewApproval) {
    focusNewApproval = false;
    if (parked && document.activeElement === composer.textarea) focusNext();
  }
  if (answeredHere) {
    const card = Object.values(state.cards).find((c) => c.permission?.requestId === answeredHere);
    if (card?.permission?.outcome !== undefined) {
      answeredHere = undefined;
      const active = document.activeElement;
      if (!active || active === document.body || !document.contains(active)) focusNext();
    }
  }
}

watchTheme(() => {
  updatePalette(app);
  // Spans coloured per span (#rrggbb, or a colour on a background) take the new theme's adjustment.
  for (const tid of Object.keys(state.terminals)) dirty.terminals.add(tid);
  dirty.redrawTerminals = true;
  schedule();
});

window.addEventListener("message", (e: MessageEvent<HostToWebview>) => {
  const m = e.data;
  switch (m.type) {
    case "snapshot":
      state = m.state;
      dirty.reset = true;
      schedule();
      return;
    case "events":
      for (const { event, t0 } of m.items) {
        const change = applyEvent(state, event);
        merge(change);
        // Terminal output is read as it comes, before later output can push it out of the state.
        for (const tid of change.terminals ?? []) {
          const term = state.terminals[tid];
          if (term) ingestTerminal(term);
        }
        if (event.type === "update" || event.type === "permissionRequested") {
          pendingT0.push(t0);
          recordTransport(Date.now() - t0);
        }
        if (event.type === "permissionRequested") {
          announcer.textContent = `Approval needed: ${event.toolCall.title ?? state.cards[event.toolCall.toolCallId]?.title ?? "tool call"}`;
          focusNewApproval = true;
        }
        if (event.type === "permissionResolved") reasons.delete(event.requestId);
        if (event.type === "questionAsked") announcer.textContent = `The agent asks: ${event.message}`;
      }
      schedule();
      return;
    case "focusPrompt":
      composer.textarea.focus();
      // Not focused yet (the workbench is still moving focus here): take it when it arrives.
      if (!document.hasFocus()) window.addEventListener("focus", () => composer.textarea.focus(), { once: true });
      return;
    case "attached":
      composer.addAttachments(m.items);
      return;
    case "fileMatches":
      composer.fileMatches(m.query, m.files);
      return;
    case "revealItem": {
      const el = document.getElementById(`question-${m.id}`);
      el?.scrollIntoView({ block: "nearest" });
      el?.querySelector<HTMLElement>("input, button")?.focus({ preventScroll: true });
      return;
    }
    case "revealCard": {
      const el = document.getElementById(`card-${m.toolCallId}`);
      const target = el?.querySelector<HTMLElement>(".permission .perm-btn, button");
      if (el) el.scrollIntoView({ block: "nearest" });
      if (target) {
        target.focus({ preventScroll: true });
        follower.reveal(target);
      }
      return;
    }
  }
});

send({ type: "ready" });
