/**
 * The view header: the agent, its state and its model (a "demo" badge when the model is the offline
 * demo script), the follow-along toggle, one picker per select config option (placed by category: mode,
 * model, thought level, then the rest) and a switch per boolean one, the context gauge and cost, the session title, the
 * instructions files the agent follows (each name opens its file), a login banner when the
 * agent asks for one, and when the agent stopped, what happened, why and what to do, with buttons for it.
 * New session, History and Restart are the view's title-bar actions, so they are not repeated here.
 */
import { type BooleanOption, pickerOptions, type SelectOption, toggleOptions } from "../shared/configOptions";
import { instructionLabel } from "../shared/instructions";
import type { AuthView, InstructionFileView, SessionState, UsageView } from "../shared/state";
import { usageText } from "../shared/usage";
import { h } from "./dom";
import { send } from "./vscodeApi";

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
  const options = pickerOptions(s.configOptions);
  // Config options supersede the older session modes: a `mode` option is the same choice.
  if (s.modes && s.modes.availableModes.length > 0 && !options.some((o) => o.category === "mode")) {
    const modes = s.modes;
    pickers.append(
      labelled("Mode", select("mode-picker", modes.availableModes.map((m) => ({ value: m.id, name: m.name })), modes.currentModeId, (v) => send({ type: "setMode", modeId: v })), "Mode"),
    );
  }
  for (const opt of options) {
    pickers.append(
      labelled(opt.name, select(`config-${opt.id}`, selectValues(opt), opt.currentValue, (v) => send({ type: "setConfigOption", configId: opt.id, value: v })), opt.description ?? opt.name, opt.category ?? undefined),
    );
  }
  for (const opt of toggleOptions(s.configOptions)) pickers.append(toggle(opt));
  if (pickers.childElementCount > 0) parts.push(pickers);
  if (s.usage) parts.push(gauge(s.usage));
  if (s.title) {
    parts.push(
      h(
        "div",
        { class: "header-row session-row" },
        h("span", { class: "session-title", title: s.title }, s.title),
        h("button", { class: "link rename", id: "rename-session", title: "Rename this session (History lists it by its title)", onclick: () => send({ type: "renameSession" }) }, "Rename"),
      ),
    );
  }
  if (s.instructions?.length) parts.push(instructionsLine(s.instructions, s.cwd));
  if (s.auth) parts.push(authBanner(s.auth));
  if (status === "crashed") parts.push(crashBanner(s));
  el.replaceChildren(...parts);
}

/** "Instructions: AGENTS.md, docs/AGENTS.md": the files the agent follows, each a link that opens it. */
function instructionsLine(files: InstructionFileView[], cwd: string | undefined): HTMLElement {
  const links: Array<HTMLElement | string> = [];
  files.forEach((f, i) => {
    if (i > 0) links.push(", ");
    const title = f.skipped ? `${f.path}: not read, ${f.skipped}` : f.scope === "folder" ? `${f.path} (for work in its folder)` : f.path;
    links.push(h("button", { type: "button", class: `link instructions-file${f.skipped ? " skipped" : ""}`, "data-path": f.path, title, onclick: () => send({ type: "openLocation", path: f.path }) }, instructionLabel(f, cwd)));
  });
  return h("div", { class: "header-row instructions", id: "instructions" }, h("span", { class: "model-label" }, "Instructions: "), ...links);
}

/** A boolean config option as a switch, like "Follow edits": a click asks the agent for the other value. */
function toggle(opt: BooleanOption): HTMLElement {
  return h(
    "button",
    { class: "toggle-btn config-toggle", id: `config-${opt.id}`, role: "switch", "aria-checked": String(opt.currentValue), title: opt.description ?? opt.name, "data-category": opt.category ?? undefined, onclick: () => send({ type: "setConfigOption", configId: opt.id, value: !opt.currentValue }) },
    h("span", { class: "switch-track", "aria-hidden": "true" }, h("span", { class: "switch-thumb" })),
    opt.name,
  );
}

function selectValues(opt: SelectOption): Array<{ value: string; name: string; group?: string }> {
  return opt.options.flatMap((o) => ("options" in o ? o.options.map((v) => ({ value: v.value, name: v.name, group: o.name })) : [{ value: o.value, name: o.name }]));
}

/** Tokens in context against the window, and the cost when the agent reports it. */
function gauge(u: UsageView): HTMLElement {
  const t = usageText(u);
  const bar = h("div", { class: `gauge-bar${t.percent >= 80 ? " high" : ""}`, role: "meter", "aria-label": "Context window in use", "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": t.percent, "aria-valuetext": `${t.percent}%: ${t.tokens}` });
  const fill = h("div", { class: "gauge-fill" });
  fill.style.width = `${t.percent}%`;
  bar.append(fill);
  return h(
    "div",
    { class: "header-row usage", title: `${t.tokens} (${t.percent}% of the context window)` },
    bar,
    h("span", { class: "usage-tokens" }, `${t.tokens} · ${t.percent}%`),
    t.cost ? h("span", { class: "usage-cost", title: t.incomplete ?? "The session's cost so far" }, t.cost) : null,
    t.incomplete ? h("span", { class: "badge usage-incomplete", title: t.incomplete }, "incomplete") : null,
  );
}

/** The agent needs a login: what it said, and a button per way to log in it offers. */
function authBanner(a: AuthView): HTMLElement {
  return h(
    "div",
    { class: "auth-banner", role: "alert" },
    h("div", { class: "error-summary" }, "The agent needs you to log in."),
    h("div", { class: "error-fix" }, a.message),
    h(
      "div",
      { class: "error-actions" },
      ...a.methods.map((m, i) =>
        h("button", { class: i === 0 ? "login" : "login secondary", "data-method-id": m.id, title: m.description ?? m.name, disabled: a.running ?? false, onclick: () => send({ type: "login", methodId: m.id }) }, a.methods.length === 1 ? "Log in" : m.name),
      ),
      a.methods.length === 0 ? h("span", {}, "The agent offers no login this view can run: see its documentation.") : null,
    ),
  );
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
      f?.install ? h("button", { id: "install-bridge", title: "Create a Python environment for the extension and install acp-bridge into it", onclick: () => send({ type: "installBridge" }) }, "Install acp-bridge") : null,
      h("button", { id: "restart", class: f?.install ? "secondary" : undefined, onclick: () => send({ type: "restart" }) }, "Restart"),
      f?.setting ? h("button", { id: "open-setting", class: "secondary", onclick: () => send({ type: "openSetting", id: f.setting! }) }, "Open setting") : null,
      command ? h("button", { id: "copy-fix", class: "secondary", title: command, onclick: () => send({ type: "copy", text: command }) }, "Copy command") : null,
    ),
  );
}

function labelled(text: string, control: HTMLElement, title: string, category?: string): HTMLElement {
  return h("label", { class: "picker", title, "data-category": category }, h("span", {}, text), control);
}

function select(id: string, values: Array<{ value: string; name: string; group?: string }>, current: string, onChange: (v: string) => void): HTMLSelectElement {
  const el = h("select", { id, onchange: (e: Event) => onChange((e.target as HTMLSelectElement).value) });
  let group: HTMLOptGroupElement | undefined;
  for (const v of values) {
    const option = h("option", { value: v.value, selected: v.value === current }, v.name);
    if (v.group === undefined) {
      group = undefined;
      el.append(option);
      continue;
    }
    if (group?.label !== v.group) el.append((group = h("optgroup", { label: v.group })));
    group.append(option);
  }
  return el;
}
