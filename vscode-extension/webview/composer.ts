/**
 * The prompt box: Enter sends, Shift+Enter adds a line, Escape cancels a running turn. While the agent
 * works it stays usable: Enter (the "Send now" button) sends at once, and the agent reads the message at
 * its next step (shared/steering.ts). Typing "/" lists
 * the agent's slash commands (`available_commands_update`); typing "@" lists workspace files (the host
 * searches), and a chosen file is sent as a link to it while its @-mention stays in the text. "Attach"
 * adds the editor's selection, a file or an image (the host asks which); attachments show as chips,
 * each removable, until the prompt is sent.
 */
import type { AvailableCommand } from "../shared/acp";
import type { Attachment } from "../shared/protocol";
import { h } from "./dom";
import { sendControl } from "../shared/steering";
import { send } from "./vscodeApi";

export interface Composer {
  root: HTMLElement;
  textarea: HTMLTextAreaElement;
  setRunning(running: boolean): void;
  setCommands(commands: AvailableCommand[]): void;
  addAttachments(items: Attachment[]): void;
  fileMatches(query: string, files: Array<{ label: string; path: string }>): void;
}

export interface ComposerDraft {
  text: string;
  attachments: Attachment[];
  mentions: Array<{ label: string; path: string }>;
}

/** The "@query" being typed just before the caret, if any. */
function mentionAt(text: string, caret: number): { start: number; query: string } | undefined {
  const m = /(^|\s)@([^\s@]*)$/.exec(text.slice(0, caret));
  return m ? { start: caret - m[2]!.length - 1, query: m[2]! } : undefined;
}

export function createComposer(draft: ComposerDraft, onDraft: (d: ComposerDraft) => void): Composer {
  const textarea = h("textarea", { id: "prompt", rows: 3, "aria-label": "Prompt for the agent", placeholder: sendControl(false).placeholder });
  textarea.value = draft.text;
  let attachments = [...draft.attachments];
  const mentions = new Map(draft.mentions.map((m) => [m.label, m.path]));
  const save = () => onDraft({ text: textarea.value, attachments, mentions: [...mentions].map(([label, path]) => ({ label, path })) });
  const sendBtn = h("button", { type: "submit", id: "send", title: sendControl(false).title }, sendControl(false).label);
  const cancelBtn = h("button", { type: "button", id: "cancel", class: "secondary", hidden: true, onclick: () => send({ type: "cancel" }) }, "Cancel");
  const attachBtn = h("button", { type: "button", id: "attach", class: "secondary", title: "Attach the editor's selection, a file or an image", onclick: () => send({ type: "attach" }) }, "Attach…");
  const chips = h("div", { class: "attachments", "aria-label": "Attached to the next prompt", hidden: true });
  let running = false;
  let commands: AvailableCommand[] = [];
  let fileQuery: string | undefined;
  let files: Array<{ label: string; path: string }> = [];
  let searchTimer: ReturnType<typeof setTimeout> | undefined;
  const suggestions = h("div", { class: "suggestions", role: "listbox", "aria-label": "Suggestions", hidden: true });

  const renderChips = () => {
    chips.hidden = attachments.length === 0;
    chips.replaceChildren(
      ...attachments.map((a, i) =>
        h(
          "span",
          { class: `chip chip-${a.block.type}`, title: blockTitle(a) },
          a.label,
          h("button", { type: "button", class: "chip-remove", "aria-label": `Remove ${a.label}`, onclick: () => ((attachments = attachments.filter((_, j) => j !== i)), renderChips(), save()) }, "×"),
        ),
      ),
    );
  };

  const chooseFile = (f: { label: string; path: string }) => {
    const at = mentionAt(textarea.value, textarea.selectionStart);
    if (!at) return;
    const before = textarea.value.slice(0, at.start);
    const after = textarea.value.slice(textarea.selectionStart);
    textarea.value = `${before}@${f.label} ${after}`;
    const caret = before.length + f.label.length + 2;
    textarea.setSelectionRange(caret, caret);
    mentions.set(f.label, f.path);
    save();
    suggest();
    textarea.focus();
  };

  const suggest = () => {
    const slash = /^\/(\S*)$/.exec(textarea.value);
    const at = slash ? undefined : mentionAt(textarea.value, textarea.selectionStart);
    if (at && at.query !== fileQuery) {
      fileQuery = at.query;
      files = [];
      if (searchTimer) clearTimeout(searchTimer);
      searchTimer = setTimeout(() => send({ type: "findFiles", query: at.query }), 120);
    }
    if (!at) fileQuery = undefined;
    const items = slash
      ? commands
          .filter((c) => c.name.startsWith(slash[1]!))
          .map((c) => h("button", { type: "button", class: "suggestion", role: "option", onclick: () => ((textarea.value = `/${c.name} `), suggest(), textarea.focus()) }, `/${c.name}`, h("span", { class: "suggestion-desc" }, ` ${c.description}`)))
      : at
        ? files.map((f) => h("button", { type: "button", class: "suggestion file-suggestion", role: "option", title: f.path, onclick: () => chooseFile(f) }, `@${f.label}`))
        : [];
    suggestions.hidden = items.length === 0;
    suggestions.replaceChildren(...items);
  };

  const submit = () => {
    const text = textarea.value.trim();
    if (!text) return; // while the agent works too: it reads it at its next step
    const named = [...mentions].filter(([label]) => text.includes(`@${label}`)).map(([label, path]) => ({ label, path }));
    send({ type: "prompt", text, ...(attachments.length ? { attachments } : {}), ...(named.length ? { mentions: named } : {}) });
    textarea.value = "";
    attachments = [];
    mentions.clear();
    renderChips();
    save();
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
    chips,
    textarea,
    h("div", { class: "composer-actions" }, attachBtn, h("span", { class: "spacer" }), cancelBtn, sendBtn),
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
    save();
    suggest();
  });
  renderChips();
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
      const control = sendControl(r);
      sendBtn.textContent = control.label;
      sendBtn.title = control.title;
      textarea.placeholder = control.placeholder;
    },
    addAttachments(items: Attachment[]) {
      attachments = [...attachments, ...items];
      renderChips();
      save();
    },
    fileMatches(query: string, found: Array<{ label: string; path: string }>) {
      if (query !== fileQuery) return; // an answer to an older search
      files = found;
      suggest();
    },
  };
}

function blockTitle(a: Attachment): string {
  const b = a.block;
  if (b.type === "resource") return `${b.resource.uri} (its text is sent)`;
  if (b.type === "image") return `${b.mimeType} image`;
  if (b.type === "resource_link") return `${b.uri} (a link)`;
  return a.label;
}
