/**
 * Terminal blocks: ANSI-coloured output (every colour at least 4.5:1 on the terminal background, see
 * palette.ts), an exit-status badge, and a note when older output was dropped. The command is shown
 * once: in the head only when it differs from the card's title. Only the newest TERMINAL_KEEP_CHARS
 * characters exist, so a 10 MB stream stays cheap.
 */
import { parseAnsi } from "../shared/ansi";
import { terminalBadge } from "../shared/cardView";
import type { TerminalView, ToolCard } from "../shared/state";
import { h } from "./dom";
import { readable } from "./palette";

/** A terminal block of `card` (its badge follows the card: a card waiting for approval ran nothing yet). */
export function terminalBlock(terminalId: string, term: TerminalView | undefined, card?: ToolCard): HTMLElement {
  const el = h("div", { class: "terminal", "data-terminal-id": terminalId });
  if (card !== undefined) el.dataset.cardTitle = card.title;
  cards.set(el, card);
  fillTerminal(el, term);
  return el;
}

/** The card each terminal element was drawn for (a redrawn card draws new terminal elements). */
const cards = new WeakMap<HTMLElement, ToolCard | undefined>();

/** (Re)render one terminal block in place; keeps the scroll pinned to the bottom if it was there. */
export function fillTerminal(el: HTMLElement, term: TerminalView | undefined): void {
  const old = el.querySelector<HTMLElement>("pre.term-out");
  const pinned = !old || old.scrollTop + old.clientHeight >= old.scrollHeight - 4;
  const pre = h("pre", { class: "term-out", tabindex: 0, "aria-label": "Terminal output" });
  if (term && term.droppedChars > 0) {
    pre.append(h("span", { class: "term-dropped" }, `… ${formatCount(term.droppedChars)} earlier characters not shown\n`));
  }
  for (const seg of parseAnsi(term?.output ?? "")) {
    if (!seg.fg && !seg.bg && !seg.bold && !seg.dim && !seg.italic && !seg.underline && !seg.inverse) {
      pre.append(seg.text);
      continue;
    }
    const span = h("span", {}, seg.text);
    const cls: string[] = [];
    const fg = seg.inverse ? seg.bg : seg.fg;
    const bg = seg.inverse ? (seg.fg ?? "default-fg") : seg.bg;
    const bgCss = bg?.startsWith("#") ? bg : bg && bg !== "default-fg" ? `var(--vscode-terminal-ansi${cssName(bg)})` : undefined;
    // A named colour alone uses the adjusted palette (a class); on a background, or as #rrggbb, it is
    // adjusted against what it is painted on.
    if (fg && (fg.startsWith("#") || bgCss)) span.style.color = readable(fg.startsWith("#") ? fg : `var(--acp-ansi-${fg})`, bgCss);
    else if (fg) cls.push(`ansi-fg-${fg}`);
    if (bg?.startsWith("#")) span.style.backgroundColor = bg;
    else if (bg) cls.push(`ansi-bg-${bg}`);
    if (seg.bold) cls.push("ansi-bold");
    if (seg.dim) cls.push("ansi-dim");
    if (seg.italic) cls.push("ansi-italic");
    if (seg.underline) cls.push("ansi-underline");
    span.className = cls.join(" ");
    pre.append(span);
  }
  const sameAsTitle = term?.command !== undefined && term.command.trim() === el.dataset.cardTitle?.trim();
  const label = term?.command && !sameAsTitle ? `$ ${term.command}` : "Output";
  const head = h("div", { class: "term-head" }, h("span", { class: "term-cmd", title: term?.command }, label), badge(term, cards.get(el)));
  el.replaceChildren(head, pre);
  if (pinned) pre.scrollTop = pre.scrollHeight;
}

function badge(term: TerminalView | undefined, card: ToolCard | undefined): HTMLElement {
  const { text, tone } = terminalBadge(term?.exit, card);
  return h("span", { class: `exit-badge ${tone}`, title: term?.exit ? "Exit status" : undefined }, text);
}

function formatCount(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 1000 ? `${Math.round(n / 1000)}k` : String(n);
}

/** "bright-cyan" → "BrightCyan", as in `--vscode-terminal-ansiBrightCyan`. */
function cssName(name: string): string {
  return name.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase()).replace(/^\w/, (c) => c.toUpperCase());
}

