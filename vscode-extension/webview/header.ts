/** The view header: agent and connection state, session title, mode and model pickers, session actions. */
import type { SessionConfigOption } from "../shared/acp";
import type { SessionState } from "../shared/state";
import { h } from "./dom";
import { send } from "./vscodeApi";

type SelectOption = Extract<SessionConfigOption, { type: "select" }>;

export function renderHeader(el: HTMLElement, s: SessionState): void {
  const { status, agentName, error } = s.connection;
  const label = status === "ready" ? (s.running ? "working…" : "ready") : status;
  const row1 = h(
    "div",
    { class: "header-row" },
    h("span", { class: `conn-dot conn-${status}${s.running ? " running" : ""}`, "aria-hidden": "true" }),
    h("span", { class: "agent-name" }, agentName || "Agent"),
    h("span", { class: "conn-status", role: "status" }, label),
    h("span", { class: "spacer" }),
    h("button", { class: "icon-btn", id: "follow-toggle", "aria-pressed": String(s.follow), title: "Follow the agent in the editor", onclick: () => send({ type: "toggleFollow" }) }, s.follow ? "Following" : "Follow"),
    s.canLoadSessions ? h("button", { class: "icon-btn", id: "history", title: "Open a session from history", onclick: () => send({ type: "history" }) }, "History") : null,
    h("button", { class: "icon-btn", id: "new-session", title: "Start a new session", onclick: () => send({ type: "newSession" }) }, "New"),
  );
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
  const parts: HTMLElement[] = [row1];
  if (pickers.childElementCount > 0) parts.push(pickers);
  if (s.title) parts.push(h("div", { class: "session-title" }, s.title));
  if (status === "crashed") {
    parts.push(
      h("div", { class: "error-banner", role: "alert" }, h("span", {}, `The agent stopped: ${error ?? "unknown error"}`), h("button", { id: "restart", onclick: () => send({ type: "restart" }) }, "Restart")),
    );
  }
  el.replaceChildren(...parts);
}

function labelled(text: string, control: HTMLElement): HTMLElement {
  return h("label", { class: "picker" }, h("span", {}, text), control);
}

function select(id: string, values: Array<{ value: string; name: string }>, current: string, onChange: (v: string) => void): HTMLSelectElement {
  const el = h("select", { id, onchange: (e: Event) => onChange((e.target as HTMLSelectElement).value) });
  for (const v of values) el.append(h("option", { value: v.value, selected: v.value === current }, v.name));
  return el;
}
