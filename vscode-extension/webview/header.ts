/**
 * The view header: the agent, its state and its model (a "demo" badge when the model is the offline
 * demo script), the follow-along toggle, the session title, mode and model pickers, and when the agent
 * stopped, what happened, why and what to do, with buttons for it. New session, History and Restart are
 * the view's title-bar actions, so they are not repeated here.
 */
import type { SessionConfigOption } from "../shared/acp";
import type { SessionState } from "../shared/state";
import { h } from "./dom";
import { send } from "./vscodeApi";

type SelectOption = Extract<SessionConfigOption, { type: "select" }>;

export function renderHeader(el: HTMLElement, s: SessionState): void {
  const { status, agentName } = s.connection;
  const label = status === "ready" ? (s.running ? "working…" : "ready") : status;
  const row1 = h(
    "div",
    { class: "header-row" },
    h("span", { class: `conn-dot conn-${status}${s.running ? " running" : ""}`, "aria-hidden": "true" }),
    h("span", { class: "agent-name" }, s.agent?.title || agentName || "Agent"),
    h("span", { class: "conn-status", role: "status" }, label),
    s.agent?.demo ? h("span", { class: "badge demo-badge", title: s.agent.model }, "demo") : null,
    h("span", { class: "spacer" }),
    h(
      "button",
      { class: "toggle-btn", id: "follow-toggle", role: "switch", "aria-checked": String(s.follow), title: "Open the files the agent works on, at the line", onclick: () => send({ type: "toggleFollow" }) },
      h("span", { class: "switch-track", "aria-hidden": "true" }, h("span", { class: "switch-thumb" })),
      "Follow edits",
    ),
  );
  const parts: HTMLElement[] = [row1];
  // The model in words, unless a model picker below already names it (a demo is always said so).
  const picker = s.configOptions.some((o) => o.category === "model" && o.type === "select");
  if (s.agent?.model && (!picker || s.agent.demo)) parts.push(h("div", { class: "model-line" }, h("span", { class: "model-label" }, "Model: "), h("span", { class: "model-name", title: s.agent.model }, s.agent.model)));
  const pickers = h("div", { class: "header-row pickers" });
  if (s.modes && s.modes.availableModes.length > 0) {
    const modes = s.modes;
    pickers.append(
      labelled("Mode", select("mode-picker", modes.availableModes.map((m) => ({ value: m.id, name: m.name })), modes.currentModeId, (v) => send({ type: "setMode", modeId: v }))),
    );
  }
  for (const opt of s.configOptions.filter((o): o is SelectOption => o.type === "select" && (o.category === "model" || o.category === "mode"))) {
    if (opt.category === "mode" && s.modes) continue; // legacy modes already shown
    const values = opt.options.flatMap((o) => ("options" in o ? o.options : [o]));
    pickers.append(labelled(opt.name, select(`config-${opt.id}`, values, opt.currentValue, (v) => send({ type: "setConfigOption", configId: opt.id, value: v }))));
  }
  if (pickers.childElementCount > 0) parts.push(pickers);
  if (s.title) parts.push(h("div", { class: "session-title", title: s.title }, s.title));
  if (status === "crashed") parts.push(crashBanner(s));
  el.replaceChildren(...parts);
}

/** What happened, the agent's own words, what to do, and the buttons to do it (wrapping in a narrow view). */
function crashBanner(s: SessionState): HTMLElement {
  const f = s.connection.failure;
  const summary = f?.summary ?? `The agent stopped: ${s.connection.error ?? "unknown error"}`;
  const command = f?.fix && /`([^`]+)`/.exec(f.fix)?.[1];
  return h(
    "div",
    { class: "error-banner", role: "alert" },
    h("div", { class: "error-summary" }, summary),
    f?.cause ? h("pre", { class: "error-cause" }, f.cause) : null,
    f?.fix ? h("div", { class: "error-fix" }, f.fix) : null,
    h(
      "div",
      { class: "error-actions" },
      h("button", { id: "restart", onclick: () => send({ type: "restart" }) }, "Restart"),
      f?.setting ? h("button", { id: "open-setting", class: "secondary", onclick: () => send({ type: "openSetting", id: f.setting! }) }, "Open setting") : null,
      command ? h("button", { id: "copy-fix", class: "secondary", title: command, onclick: () => send({ type: "copy", text: command }) }, "Copy command") : null,
    ),
  );
}

function labelled(text: string, control: HTMLElement): HTMLElement {
  return h("label", { class: "picker" }, h("span", {}, text), control);
}

function select(id: string, values: Array<{ value: string; name: string }>, current: string, onChange: (v: string) => void): HTMLSelectElement {
  const el = h("select", { id, onchange: (e: Event) => onChange((e.target as HTMLSelectElement).value) });
  for (const v of values) el.append(h("option", { value: v.value, selected: v.value === current }, v.name));
  return el;
}
