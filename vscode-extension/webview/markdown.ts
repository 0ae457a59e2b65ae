/** Markdown → HTML for agent text. Raw HTML is escaped (html: false); huge texts render as plain text. */
import MarkdownIt from "markdown-it";

const md = new MarkdownIt({ html: false, linkify: false, breaks: false });
const MAX_MARKDOWN_CHARS = 200_000;

export function renderMarkdown(el: HTMLElement, text: string): void {
  if (text.length > MAX_MARKDOWN_CHARS) {
    el.textContent = text;
    el.classList.add("plain");
    return;
  }
  el.innerHTML = md.render(text);
}
