/**
 * The prompt box: Enter sends, Shift+Enter adds a line, Escape cancels a running turn. Typing "/" lists
 * the agent's slash commands (`available_commands_update`).
 */
import type { AvailableCommand } from "../shared/acp";
import { h } from "./dom";
import { send } from "./vscodeApi";

export interface Composer {
  root: HTMLElement;
  textarea: HTMLTextAreaElement;
  setRunning(running: boolean): void;
  setCommands(commands: AvailableCommand[]): void;
}

export function createComposer(draft: string, onDraft: (text: string) => void): Composer {
  const textarea = h("textarea", { id: "prompt", rows: 3, "aria-label": "Prompt for the agent", placeholder: "Ask the agent… (Enter to send, Shift+Enter for a new line)" });
  textarea.value = draft;
  const sendBtn = h("button", { type: "submit", id: "send" }, "Send");
  const cancelBtn = h("button", { type: "button", id: "cancel", class: "secondary", hidden: true, onclick: () => send({ type: "cancel" }) }, "Cancel");
  let running = false;
  let commands: AvailableCommand[] = [];
  const suggestions = h("div", { class: "suggestions", role: "listbox", "aria-label": "Slash commands", hidden: true });
  const suggest = () => {
    const m = /^\/(\S*)$/.exec(textarea.value);
    const matches = m ? commands.filter((c) => c.name.startsWith(m[1]!)) : [];
    suggestions.hidden = matches.length === 0;
    suggestions.replaceChildren(
      ...matches.map((c) =>
        h("button", { type: "button", class: "suggestion", role: "option", onclick: () => ((textarea.value = `/${c.name} `), suggest(), textarea.focus()) }, `/${c.name}`, h("span", { class: "suggestion-desc" }, ` ${c.description}`)),
      ),
    );
  };
  const submit = () => {
    const text = textarea.value.trim();
    if (!text || running) return;
    send({ type: "prompt", text });
    textarea.value = "";
    onDraft("");
    suggest();
  };
  const root = h(
    "form",
    {
      id: "composer",
      onsubmit: (e: Event) => {
        e.preventDefault();
        submit();
      },
    },
    suggestions,
    textarea,
    h("div", { class: "composer-actions" }, cancelBtn, sendBtn),
  );
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    } else if (e.key === "Escape" && running) {
      send({ type: "cancel" });
    }
  });
  textarea.addEventListener("input", () => {
    onDraft(textarea.value);
    suggest();
  });
  return {
    root,
    textarea,
    setCommands(list: AvailableCommand[]) {
      commands = list;
      suggest();
    },
    setRunning(r: boolean) {
      running = r;
      cancelBtn.hidden = !r;
      sendBtn.disabled = r;
    },
  };
}
