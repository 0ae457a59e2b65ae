/**
 * Tool-call content: text and resources (Markdown, readable), diffs as unified hunks numbered as in
 * the file with an "Open diff" action ("Review in editor" while awaiting approval) and, when the agent
 * keeps checkpoints, "Revert this file" on a finished call's diff; and terminals.
 * Diffs longer than MAX_DIFF_LINES point to the diff editor instead.
 */
import type { ContentBlock, ToolCallContent } from "../shared/acp";
import { canRevertFile } from "../shared/checkpoints";
import { type BlockAnchor, blockAnchors, formatHunkHeader, hunks } from "../shared/diff";
import type { SessionState, ToolCard } from "../shared/state";
import { h, relPath } from "./dom";
import { renderMarkdown } from "./markdown";
import { terminalBlock } from "./terminal";
import { send } from "./vscodeApi";

const MAX_DIFF_LINES = 1500;

export interface BlockOptions {
  /** The card waits for approval: the diff's action opens the review editor. */
  awaiting?: boolean;
  /** A diff the failed card kept (`ToolCard.proposed`), not one of its content blocks. */
  proposed?: boolean;
}

export function contentBlock(state: SessionState, card: ToolCard, c: ToolCallContent, index: number, opts: BlockOptions = {}): HTMLElement {
  switch (c.type) {
    case "content":
      return block(c.content, state.cwd);
    case "diff": {
      const list = opts.proposed ? (card.proposed ?? []) : card.content;
      return diffBlock(state, card, c, blockAnchors(list, card.locations)[index], index, opts);
    }
    case "terminal":
      return terminalBlock(c.terminalId, state.terminals[c.terminalId], card);
  }
}

export function block(b: ContentBlock, cwd: string | undefined): HTMLElement {
  switch (b.type) {
    case "text": {
      const el = h("div", { class: "md" });
      renderMarkdown(el, b.text);
      return el;
    }
    case "image":
      return h("img", { class: "content-image", src: `data:${b.mimeType};base64,${b.data}`, alt: b.uri ?? "image" });
    case "audio":
      return h("div", { class: "content-note" }, `[audio: ${b.mimeType}]`);
    case "resource_link":
      return h("div", { class: "resource-link" }, fileLink(b.uri, b.title ?? b.name, cwd));
    case "resource": {
      const r = b.resource;
      const body = "text" in r ? h("pre", { class: "resource-text" }, r.text) : h("div", { class: "content-note" }, `[binary ${r.mimeType ?? "data"}]`);
      return h("div", { class: "resource" }, h("div", { class: "resource-uri" }, fileLink(r.uri, undefined, cwd)), body);
    }
  }
}

function fileLink(uri: string, label: string | undefined, cwd: string | undefined): HTMLElement {
  const path = uri.startsWith("file://") ? decodeURIComponent(uri.slice("file://".length)) : undefined;
  if (!path) return h("span", {}, label ?? uri);
  return h("button", { class: "link", onclick: () => send({ type: "openLocation", path }) }, label ?? relPath(path, cwd));
}

type DiffContent = Extract<ToolCallContent, { type: "diff" }>;

/** "Revert this file" (the agent puts the file back as it was before this call), or what reverting did. */
function revertControl(state: SessionState, card: ToolCard, path: string, index: number): HTMLElement | null {
  const done = card.reverted?.[path];
  if (done?.state === "undone") return h("span", { class: "reverted-note" }, "Reverted");
  if (!canRevertFile(state, card, path)) return null;
  return h(
    "button",
    { type: "button", class: "revert-file", "data-path": path, "data-focus-key": `revert:${index}`, title: done?.state === "failed" ? done.reason : "Put this file back as it was before this call", onclick: () => send({ type: "revertFile", toolCallId: card.toolCallId, path }) },
    "Revert this file",
  );
}

/**
 * A diff as unified hunks with the file's line numbers in a gutter (old | new), when the block's place
 * in the file is known (its anchor); otherwise the hunk header says the lines were not reported.
 */
function diffBlock(state: SessionState, card: ToolCard, d: DiffContent, anchor: BlockAnchor | undefined, index: number, opts: BlockOptions): HTMLElement {
  const toolCallId = card.toolCallId;
  // While awaiting approval, the question's own "Review in editor" opens this diff.
  const action = opts.awaiting
    ? null
    : h("button", { class: "open-diff", "data-focus-key": `${opts.proposed ? "pdiff" : "diff"}:${index}`, title: "The whole file in the diff editor", onclick: () => send({ type: "openDiff", toolCallId, index, ...(opts.proposed ? { proposed: true } : {}) }) }, "Open diff");
  const head = h("div", { class: "diff-head" }, h("span", { class: "diff-path" }, relPath(d.path, state.cwd), d.oldText == null ? h("span", { class: "diff-new" }, " (new file)") : null), action, opts.proposed ? null : revertControl(state, card, d.path, index));
  const pre = h("div", { class: "diff-body", role: "table", "aria-label": `Changes to ${relPath(d.path, state.cwd)}` });
  let shown = 0;
  for (const hunk of hunks(d.oldText, d.newText, 3, anchor)) {
    if (shown >= MAX_DIFF_LINES) break;
    pre.append(h("div", { class: "hunk-head", role: "row" }, anchor ? formatHunkHeader(hunk) : "@@ line numbers not reported @@"));
    for (const line of hunk.lines) {
      if (shown++ >= MAX_DIFF_LINES) break;
      const cls = line.op === "+" ? "add" : line.op === "-" ? "del" : "ctx";
      // Numbers as generated content: the line's text (what a copy or a screen reader gets) stays "+code".
      const num = (n: number | undefined) => h("span", { class: "ln", "data-n": anchor && n !== undefined ? String(n) : "", "aria-hidden": "true" });
      pre.append(h("div", { class: `diff-line ${cls}`, role: "row" }, num(line.oldNo), num(line.newNo), h("span", { class: "code" }, `${line.op}${line.text}`)));
    }
  }
  if (shown >= MAX_DIFF_LINES) pre.append(h("div", { class: "diff-more" }, "… more changes: use Open diff"));
  return h("div", { class: `diff${opts.proposed ? " proposed-diff" : ""}` }, head, pre);
}
