/**
 * Tool-call content: text and resources (Markdown, readable), diffs as unified hunks with an
 * "Open diff" action, and terminals. Diffs longer than MAX_DIFF_LINES point to the diff editor instead.
 */
import type { ContentBlock, ToolCallContent } from "../shared/acp";
import { formatHunkHeader, hunks } from "../shared/diff";
import type { SessionState } from "../shared/state";
import { h, relPath } from "./dom";
import { renderMarkdown } from "./markdown";
import { terminalBlock } from "./terminal";
import { send } from "./vscodeApi";

const MAX_DIFF_LINES = 1500;

export function contentBlock(state: SessionState, toolCallId: string, c: ToolCallContent, index: number): HTMLElement {
  switch (c.type) {
    case "content":
      return block(c.content, state.cwd);
    case "diff":
      return diffBlock(state, toolCallId, c.path, c.oldText, c.newText, index);
    case "terminal":
      return terminalBlock(c.terminalId, state.terminals[c.terminalId]);
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

function diffBlock(state: SessionState, toolCallId: string, path: string, oldText: string | null | undefined, newText: string, index: number): HTMLElement {
  const head = h(
    "div",
    { class: "diff-head" },
    h("span", { class: "diff-path" }, relPath(path, state.cwd), oldText == null ? h("span", { class: "diff-new" }, " (new file)") : null),
    h("button", { class: "open-diff", onclick: () => send({ type: "openDiff", toolCallId, index }) }, "Open diff"),
  );
  const pre = h("pre", { class: "diff-body" });
  let shown = 0;
  for (const hunk of hunks(oldText, newText)) {
    if (shown >= MAX_DIFF_LINES) break;
    pre.append(h("div", { class: "hunk-head" }, formatHunkHeader(hunk)));
    for (const line of hunk.lines) {
      if (shown++ >= MAX_DIFF_LINES) break;
      const cls = line.op === "+" ? "add" : line.op === "-" ? "del" : "ctx";
      pre.append(h("div", { class: `diff-line ${cls}` }, `${line.op}${line.text}`));
    }
  }
  if (shown >= MAX_DIFF_LINES) pre.append(h("div", { class: "diff-more" }, "… more changes: use Open diff"));
  return h("div", { class: "diff" }, head, pre);
}
