/**
 * The first-run welcome, shown while the conversation is empty: what the agent is, which model runs,
 * and, when that model is a script (the bridge's offline demo, or a script file), that its answers are
 * canned and what it does (the demo reads notes.md and edits app.py, files the workspace may not have),
 * and how to pick a real one.
 */
import type { SessionState } from "../shared/state";
import { h } from "./dom";
import { send } from "./vscodeApi";

export function renderWelcome(el: HTMLElement, s: SessionState): void {
  const show = s.timeline.length === 0 && s.connection.status !== "crashed";
  el.hidden = !show;
  if (!show) {
    el.replaceChildren();
    return;
  }
  const agent = s.agent;
  const name = agent?.title || s.connection.agentName || "The agent";
  const parts: HTMLElement[] = [
    h("h2", { class: "welcome-title" }, "Agent"),
    h("p", {}, `${name}${agent?.version ? ` ${agent.version}` : ""} is an ACP agent running on this machine. It reads, edits and runs commands in this workspace; edits, writes and commands ask you first, in its cards.`),
  ];
  if (agent?.model) parts.push(h("p", {}, h("strong", {}, "Model: "), agent.model));
  if (agent?.demo) {
    parts.push(
      h(
        "p",
        { class: "welcome-demo" },
        h("strong", {}, "This is a demo, not an AI model. "),
        agent.demoNote ?? "",
      ),
    );
    if (agent.modelHint) parts.push(h("p", {}, agent.modelHint));
    parts.push(h("button", { class: "secondary", id: "welcome-settings", onclick: () => send({ type: "openSetting", id: "acp.bridgeArgs" }) }, "Choose a model (settings)"));
  } else {
    parts.push(h("p", {}, "Type a request below: Enter sends, Shift+Enter adds a line, Escape stops the agent."));
  }
  el.replaceChildren(...parts);
}
