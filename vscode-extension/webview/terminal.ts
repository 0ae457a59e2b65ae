/**
 * Terminal blocks: ANSI-coloured output (every colour at least 4.5:1 on the terminal background, see
 * palette.ts), an exit-status badge, and a note when older output is not shown. The command is shown
 * once: in the head only when it differs from the card's title.
 *
 * A command can print megabytes in seconds, so drawing stays in proportion to what is new, not to what
 * was printed: each terminal's output is parsed once, as it arrives (`ingestTerminal`, shared/
 * terminalLines.ts), and a block draws only the newest VIEW_LINES lines (VIEW_CHARS characters at most),
 * appending the lines that came since it last drew, in blocks of lines (a new block is laid out on its
 * own; the ones above it are left as they were) and removing blocks that fell out of the window. The
 * lines kept further back (the state keeps the newest TERMINAL_KEEP_CHARS characters) are a click away
 * ("Show N earlier lines"). The unfinished last line is redrawn when it changes (a progress bar).
 *
 * Drawing never reads layout: a block pinned to its bottom (it is, until the user scrolls up in it) is
 * scrolled there by `pinTerminals`, which the view calls once everything of a frame is written.
 */
import type { AnsiSegment } from "../shared/ansi";
import { terminalBadge } from "../shared/cardView";
import { TERMINAL_KEEP_CHARS, type TerminalView, type ToolCard } from "../shared/state";
import { type TerminalLine, TerminalLines, windowStart } from "../shared/terminalLines";
import { h } from "./dom";
import { readable } from "./palette";

/** The newest lines a terminal block draws (a terminal shows ~20 at a time; the rest is scrollback). */
const VIEW_LINES = 500;
const VIEW_CHARS = 50_000;
/** Lines per element: appending lays out only the new block; trimming removes whole blocks. */
const BLOCK_LINES = 50;

/** The parsed output of each terminal, by id. */
const models = new Map<string, TerminalLines>();
/** Terminals whose every kept line the user asked to see. */
const expanded = new Set<string>();

/** What one terminal element shows, to bring it up to date by appending. */
interface Drawn {
  model: TerminalLines | undefined;
  expanded: boolean;
  head: HTMLElement;
  pre: HTMLElement;
  note: HTMLElement;
  tail: HTMLElement;
  blocks: Block[];
  /** The newest line drawn (-1: none). */
  lastSeq: number;
  partial: AnsiSegment[] | undefined;
  /** Follows the newest output (until the user scrolls up in it). */
  pinned: boolean;
  /** Where pinTerminals last scrolled it: the scroll event that follows is its own, not the user's. */
  autoTop: number;
}

/** An element of lines `first`..`last` (their seq). */
interface Block {
  el: HTMLElement;
  first: number;
  last: number;
  lines: number;
}

const drawn = new WeakMap<HTMLElement, Drawn>();
/** The card each terminal element was drawn for (a redrawn card draws new terminal elements). */
const cards = new WeakMap<HTMLElement, ToolCard | undefined>();
const toPin = new Set<Drawn>();
/** The elements drawn for each terminal (a card redrawn leaves its old ones out of the page). */
const elements = new Map<string, Set<HTMLElement>>();

/** The terminal's blocks in the page. */
export function terminalElements(terminalId: string): HTMLElement[] {
  const els = elements.get(terminalId);
  if (!els) return [];
  for (const el of els) if (!el.isConnected) els.delete(el);
  if (els.size === 0) elements.delete(terminalId);
  return [...els];
}

/**
 * Takes the output `term` got since the last call (or all of it, for a terminal not seen yet); it is
 * parsed when drawn. The view calls it for every event that wrote to a terminal, before the next one
 * can push older output out of the state.
 */
export function ingestTerminal(term: TerminalView): TerminalLines {
  let model = models.get(term.terminalId);
  if (model?.term === term) model.take();
  else {
    model = new TerminalLines(term, expanded.has(term.terminalId) ? TERMINAL_KEEP_CHARS : VIEW_CHARS);
    models.set(term.terminalId, model);
  }
  return model;
}

/** Forgets terminals the state no longer has (a new session, or a snapshot that replaced them). */
export function forgetTerminals(terminals: Record<string, TerminalView>): void {
  for (const [id, model] of models) {
    if (terminals[id] !== model.term) {
      models.delete(id);
      expanded.delete(id);
    }
  }
}

/** A terminal block of `card` (its badge follows the card: a card waiting for approval ran nothing yet). */
export function terminalBlock(terminalId: string, term: TerminalView | undefined, card?: ToolCard): HTMLElement {
  const el = h("div", { class: "terminal", "data-terminal-id": terminalId });
  if (card !== undefined) el.dataset.cardTitle = card.title;
  cards.set(el, card);
  let els = elements.get(terminalId);
  if (!els) elements.set(terminalId, (els = new Set()));
  els.add(el);
  fillTerminal(el, term);
  return el;
}

/** Brings a terminal block up to date: appends what is new, or (`redraw`, e.g. a new theme) draws it anew. */
export function fillTerminal(el: HTMLElement, term: TerminalView | undefined, redraw = false): void {
  const model = term ? ingestTerminal(term) : undefined;
  model?.sync();
  const wantAll = !!term && expanded.has(term.terminalId);
  let d = drawn.get(el);
  if (!d || redraw || d.model !== model || d.expanded !== wantAll) {
    d = draw(el, model, wantAll, d?.pinned ?? true);
    drawn.set(el, d);
  } else {
    update(d);
  }
  const head = termHead(el, term);
  d.head.replaceWith(head);
  d.head = head;
  if (d.pinned) toPin.add(d);
}

/**
 * Scrolls the terminal blocks that follow their output to their bottom. Called once a frame's DOM writes
 * are done: the first read lays the page out once, and the writes that follow do not undo that.
 */
export function pinTerminals(): void {
  for (const d of toPin) {
    if (!d.pinned || !d.pre.isConnected) continue;
    d.pre.scrollTop = d.pre.scrollHeight;
    d.autoTop = d.pre.scrollTop;
  }
  toPin.clear();
}

function draw(el: HTMLElement, model: TerminalLines | undefined, all: boolean, pinned: boolean): Drawn {
  const pre = h("pre", { class: "term-out", tabindex: 0, "aria-label": "Terminal output" });
  const d: Drawn = { model, expanded: all, head: h("div"), pre, note: h("div", { class: "term-dropped", hidden: true }), tail: h("div", { class: "term-lines term-partial" }), blocks: [], lastSeq: -1, partial: undefined, pinned, autoTop: -1 };
  pre.addEventListener("scroll", () => {
    if (pre.scrollTop === d.autoTop) return;
    d.pinned = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  });
  pre.append(d.note, d.tail);
  el.replaceChildren(d.head, pre);
  update(d);
  return d;
}

/** Appends the lines that came since the last draw, drops those that left the window, redraws the unfinished line. */
function update(d: Drawn): void {
  const model = d.model;
  if (!model) return;
  const lines = model.lines;
  const start = d.expanded ? 0 : windowStart(lines, VIEW_LINES, VIEW_CHARS);
  const firstSeq = lines[start]?.seq ?? Infinity;
  // Blocks wholly before the window go; one that starts before it is drawn again from the window's start.
  while (d.blocks.length > 0 && d.blocks[0]!.first < firstSeq) {
    const block = d.blocks.shift()!;
    if (block.last >= firstSeq) {
      const kept = lines.slice(start, start + (block.last - firstSeq) + 1);
      const again = linesBlock(kept);
      block.el.replaceWith(again);
      d.blocks.unshift({ el: again, first: firstSeq, last: block.last, lines: kept.length });
      if (d.blocks.length > 1) settle(d.blocks[0]);
      break;
    }
    block.el.remove();
  }
  const from = Math.max(start, d.lastSeq + 1 - (lines[0]?.seq ?? 0));
  for (let i = from; i < lines.length; i += BLOCK_LINES) {
    const part = lines.slice(i, Math.min(lines.length, i + BLOCK_LINES));
    const el = linesBlock(part);
    settle(d.blocks[d.blocks.length - 1]);
    d.tail.before(el);
    d.blocks.push({ el, first: part[0]!.seq, last: part[part.length - 1]!.seq, lines: part.length });
  }
  if (lines.length > 0) d.lastSeq = lines[lines.length - 1]!.seq;
  const partial = model.partial();
  if (partial !== d.partial) {
    d.partial = partial;
    d.tail.replaceChildren(...partial.map(segmentNode));
  }
  noteFor(d, start);
}

/** "… 9.9M earlier characters not shown", and a button for what the state still keeps of it. */
function noteFor(d: Drawn, start: number): void {
  const model = d.model!;
  const dropped = model.droppedChars;
  const more = !d.expanded && (start > 0 || dropped > model.term.droppedChars);
  const text = dropped > 0 ? `… ${formatCount(dropped)} earlier characters not shown` : start > 0 ? `… ${start.toLocaleString("en-US")} earlier lines not shown` : "";
  const key = `${text}|${more}`;
  if (d.note.dataset.key === key) return;
  d.note.dataset.key = key;
  d.note.hidden = !text;
  const button = h(
    "button",
    {
      type: "button",
      class: "link term-more",
      title: `Show the newest ${formatCount(TERMINAL_KEEP_CHARS)} characters of the output`,
      onclick: () => {
        expanded.add(model.term.terminalId);
        model.widen(TERMINAL_KEEP_CHARS);
        const el = d.pre.parentElement;
        if (el) fillTerminal(el, model.term);
        pinTerminals();
        d.pre.focus({ preventScroll: true });
      },
    },
    "Show more",
  );
  d.note.replaceChildren(text, ...(more ? [" · ", button] : []));
}

/**
 * A block with newer lines after it: the page lays it out only while it is scrolled into view (the
 * newest block, where a terminal that follows its output is, is always laid out). Until then it counts
 * as a line of text per line (`lh`); long lines that wrap take more once drawn.
 */
function settle(block: Block | undefined): void {
  if (!block || block.el.classList.contains("settled")) return;
  block.el.classList.add("settled");
  block.el.style.containIntrinsicBlockSize = `auto ${block.lines}lh`;
}

/**
 * One element of lines: coloured spans and text, a newline between lines. Being a block, it ends a line
 * itself: a newline after its last line would show (and copy) as an empty line; an empty last line
 * keeps one, as that is how a block shows it.
 */
function linesBlock(lines: readonly TerminalLine[]): HTMLElement {
  const el = h("div", { class: "term-lines" });
  let text = "";
  for (const [i, line] of lines.entries()) {
    if (i > 0) text += "\n";
    for (const seg of line.segments) {
      if (plain(seg)) {
        text += seg.text;
        continue;
      }
      if (text) el.append(text);
      text = "";
      el.append(segmentNode(seg));
    }
  }
  if (lines[lines.length - 1]?.chars === 0) text += "\n";
  if (text) el.append(text);
  return el;
}

function plain(seg: AnsiSegment): boolean {
  return !seg.fg && !seg.bg && !seg.bold && !seg.dim && !seg.italic && !seg.underline && !seg.inverse;
}

function segmentNode(seg: AnsiSegment): Node {
  if (plain(seg)) return document.createTextNode(seg.text);
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
  return span;
}

function termHead(el: HTMLElement, term: TerminalView | undefined): HTMLElement {
  const sameAsTitle = term?.command !== undefined && term.command.trim() === el.dataset.cardTitle?.trim();
  const label = term?.command && !sameAsTitle ? `$ ${term.command}` : "Output";
  const { text, tone } = terminalBadge(term?.exit, cards.get(el));
  return h("div", { class: "term-head" }, h("span", { class: "term-cmd", title: term?.command }, label), h("span", { class: `exit-badge ${tone}`, title: term?.exit ? "Exit status" : undefined }, text));
}

function formatCount(n: number): string {
  return n >= 1_000_000 ? `${(n / 1_000_000).toFixed(1)}M` : n >= 1000 ? `${Math.round(n / 1000)}k` : String(n);
}

/** "bright-cyan" → "BrightCyan", as in `--vscode-terminal-ansiBrightCyan`. */
function cssName(name: string): string {
  return name.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase()).replace(/^\w/, (c) => c.toUpperCase());
}
