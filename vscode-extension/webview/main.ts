/**
 * The Agent webview. It sends `ready`, receives a snapshot and then batches of SessionEvents, applies
 * them with the shared reducer, and re-renders only what changed, at most once per frame. It never
 * imports `vscode`; everything it does goes through postMessage (shared/protocol.ts).
 */
import type { Change } from "../shared/events";
import type { HostToWebview } from "../shared/protocol";
import { applyEvent } from "../shared/reducer";
import { emptyState, type SessionState } from "../shared/state";
import { createComposer } from "./composer";
import { h } from "./dom";
import { renderHeader } from "./header";
import { mountPerf, record, recordTransport } from "./perf";
import { renderPlan } from "./plan";
import { fillTerminal } from "./terminal";
import { Timeline } from "./timeline";
import { loadUiState, saveUiState, send } from "./vscodeApi";

let state: SessionState = emptyState();
const ui = loadUiState();
const collapsed = new Set(ui.collapsed ?? []);
const persist = () => saveUiState({ draft: composer.textarea.value, collapsed: [...collapsed] });

const header = h("header", { id: "header" });
const timelineEl = h("main", { id: "timeline", "aria-label": "Conversation" });
const planEl = h("section", { id: "plan", "aria-label": "Plan", hidden: true });
const announcer = h("div", { class: "sr-only", "aria-live": "assertive" });
const composer = createComposer(ui.draft ?? "", () => persist());
const footer = h("footer", { id: "footer" }, planEl, composer.root);
const app = document.getElementById("app")!;
app.append(header, timelineEl, footer, announcer);
mountPerf(app);

const timeline = new Timeline(timelineEl, {
  isCollapsed: (id) => collapsed.has(id),
  toggle: (id) => {
    if (collapsed.has(id)) collapsed.delete(id);
    else collapsed.add(id);
    persist();
    dirty.ids.add(id);
    schedule();
  },
});

const dirty = { reset: true, header: true, plan: true, append: false, ids: new Set<string>(), terminals: new Set<string>() };
let pendingT0: number[] = [];
let scheduled = false;

function merge(c: Change): void {
  if (c.reset) dirty.reset = true;
  if (c.header) dirty.header = true;
  if (c.plan) dirty.plan = true;
  if (c.timeline) dirty.append = true;
  for (const id of c.items ?? []) dirty.ids.add(id);
  for (const id of c.cards ?? []) dirty.ids.add(id);
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
  const scroller = document.scrollingElement ?? document.documentElement;
  const atBottom = scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 40;
  if (dirty.reset) {
    timeline.reset();
    timeline.appendNew(state);
  } else {
    if (dirty.append) timeline.appendNew(state);
    for (const id of dirty.ids) timeline.refresh(state, id);
    for (const tid of dirty.terminals) {
      const els = timelineEl.querySelectorAll<HTMLElement>(`.terminal[data-terminal-id="${CSS.escape(tid)}"]`);
      els.forEach((el) => fillTerminal(el, state.terminals[tid]));
    }
  }
  if (dirty.reset || dirty.header) {
    renderHeader(header, state);
    composer.setRunning(state.running);
    composer.setCommands(state.commands);
  }
  if (dirty.reset || dirty.plan) renderPlan(planEl, state.plan);
  Object.assign(dirty, { reset: false, header: false, plan: false, append: false });
  dirty.ids.clear();
  dirty.terminals.clear();
  if (atBottom) scroller.scrollTop = scroller.scrollHeight;
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
        merge(applyEvent(state, event));
        if (event.type === "update" || event.type === "permissionRequested") {
          pendingT0.push(t0);
          recordTransport(Date.now() - t0);
        }
        if (event.type === "permissionRequested") announcer.textContent = `Approval needed: ${event.toolCall.title ?? "tool call"}`;
      }
      schedule();
      return;
    case "focusPrompt":
      composer.textarea.focus();
      return;
  }
});

send({ type: "ready" });
