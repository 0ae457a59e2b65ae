/**
 * ANSI text → styled segments for terminal cards. Understands SGR (colours 16/256/truecolor, bold, dim,
 * italic, underline, inverse, resets); drops every other escape sequence (cursor moves, OSC titles).
 * A lone carriage return overwrites its line, as a terminal would for progress bars.
 *
 * A stream (AnsiLineReader) is read as it arrives: each piece is parsed once, from the style the text
 * before it left in force, and comes out as complete lines; what follows the last newline waits for the
 * rest of its line (a carriage return or an escape sequence may still change it). Read that way, a
 * stream cut anywhere gives what parseAnsi gives for the whole text.
 */
export interface AnsiStyle {
  fg?: string;
  bg?: string;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  inverse?: boolean;
}
export interface AnsiSegment extends AnsiStyle {
  text: string;
}

// CSI ... final byte | OSC ... (BEL | ST) | other two-byte escapes
// eslint-disable-next-line no-control-regex
const ESCAPE = /\x1b\[([0-9;:?]*)([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]?/g;

export const ANSI_16 = ["black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"];

export function parseAnsi(input: string): AnsiSegment[] {
  return parseAnsiFrom(input, {}).segments;
}

/** parseAnsi for text that starts with `style` in force; also the style in force at its end. */
export function parseAnsiFrom(input: string, start: AnsiStyle): { segments: AnsiSegment[]; style: AnsiStyle } {
  const text = applyCarriageReturns(input);
  const out: AnsiSegment[] = [];
  let style = start;
  let last = 0;
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m; m = ESCAPE.exec(text)) {
    if (m.index > last) pushText(out, text.slice(last, m.index), style);
    last = ESCAPE.lastIndex;
    if (m[2] === "m") style = applySgr(style, m[1] ?? "");
  }
  if (last < text.length) pushText(out, text.slice(last), style);
  return { segments: out, style };
}

/** The style in force after `input`, from `start`: parseAnsiFrom without the segments (for text not shown). */
export function styleAfter(input: string, start: AnsiStyle): AnsiStyle {
  const text = applyCarriageReturns(input);
  let style = start;
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m; m = ESCAPE.exec(text)) if (m[2] === "m") style = applySgr(style, m[1] ?? "");
  return style;
}

/** An unfinished line longer than this is taken as a line of its own (it is not held back any longer). */
const MAX_PENDING_CHARS = 1 << 20;

/** Terminal output read as it streams in: complete lines out, the unfinished last line held back. */
export class AnsiLineReader {
  /** The style in force where `pending` starts. */
  private style: AnsiStyle = {};
  /** Raw text after the last complete line. */
  private pending = "";
  private partialCache: AnsiSegment[] | undefined = [];

  /** The lines `data` completes (with what was pending), parsed; each line's segments, its newline left out. */
  push(data: string): AnsiSegment[][] {
    if (data === "") return [];
    let text = this.pending + data;
    this.partialCache = undefined;
    let end = lineBoundary(text);
    if (end === 0 && text.length > MAX_PENDING_CHARS) end = text.length;
    let lines: AnsiSegment[][] = [];
    if (end > 0) {
      const { segments, style } = parseAnsiFrom(text.slice(0, end), this.style);
      this.style = style;
      lines = splitLines(segments, text.charCodeAt(end - 1) === 10);
      text = text.slice(end);
    }
    this.pending = overwritten(text);
    return lines;
  }

  /**
   * Reads `data` for the style it leaves in force, without parsing what the lines it completes show
   * (they are not shown: newer output follows). Returns how many characters those lines took.
   */
  skip(data: string): number {
    if (data === "") return 0;
    const text = this.pending + data;
    this.partialCache = undefined;
    let end = lineBoundary(text);
    if (end === 0 && text.length > MAX_PENDING_CHARS) end = text.length;
    if (end > 0) this.style = styleAfter(text.slice(0, end), this.style);
    this.pending = overwritten(text.slice(end));
    return end;
  }

  /** The unfinished last line as it shows now. */
  partial(): AnsiSegment[] {
    this.partialCache ??= parseAnsiFrom(this.pending, this.style).segments;
    return this.partialCache;
  }
}

/**
 * Where the complete lines of `text` end: after its last newline that no escape sequence holds (an OSC
 * string may contain newlines, and one not terminated yet may go on past them). 0: no complete line.
 */
function lineBoundary(text: string): number {
  let end = text.lastIndexOf("\n") + 1;
  if (end === 0 || !text.includes("\x1b]")) return end;
  const spans: Array<[number, number]> = [];
  const scan = new RegExp(ESCAPE.source, "g");
  for (let m = scan.exec(text); m; m = scan.exec(text)) {
    if (!m[0].startsWith("\x1b]")) continue;
    const stop = m.index + m[0].length;
    const terminated = m[0].endsWith("\x07") || m[0].endsWith("\x1b\\");
    // Unterminated and at the end of the text: its terminator has not arrived yet.
    spans.push([m.index, !terminated && stop >= text.length - 1 ? Infinity : stop]);
  }
  for (let i = spans.length - 1; i >= 0 && end > 0; i--) {
    const [from, to] = spans[i]!;
    if (end - 1 >= to) break;
    if (end - 1 >= from) end = text.lastIndexOf("\n", from - 1) + 1;
  }
  return end;
}

/** What a carriage return in the unfinished line has already overwritten need not be kept (progress bars). */
function overwritten(line: string): string {
  if (line.includes("\n")) return line; // an OSC string still open: kept whole
  for (let i = line.length - 2; i >= 0; i--) {
    // "\r\n" keeps the line: only a return followed by more of the line overwrites it.
    if (line.charCodeAt(i) === 13 && line.charCodeAt(i + 1) !== 13) return line.slice(i + 1);
  }
  return line;
}

/** Segments of complete lines → one array per line; `closed`: the text ended with its newline. */
function splitLines(segments: AnsiSegment[], closed: boolean): AnsiSegment[][] {
  const lines: AnsiSegment[][] = [];
  let line: AnsiSegment[] = [];
  for (const seg of segments) {
    const parts = seg.text.split("\n");
    parts.forEach((text, i) => {
      if (i > 0) {
        lines.push(line);
        line = [];
      }
      if (text !== "") line.push({ ...seg, text });
    });
  }
  if (!closed || line.length > 0) lines.push(line);
  return lines;
}

/** Plain text with every escape sequence removed. */
export function stripAnsi(input: string): string {
  return parseAnsi(input)
    .map((s) => s.text)
    .join("");
}

function pushText(out: AnsiSegment[], text: string, style: AnsiStyle): void {
  const prev = out[out.length - 1];
  if (prev && sameStyle(prev, style)) prev.text += text;
  else out.push({ ...style, text });
}

function sameStyle(a: AnsiStyle, b: AnsiStyle): boolean {
  return (
    a.fg === b.fg &&
    a.bg === b.bg &&
    !a.bold === !b.bold &&
    !a.dim === !b.dim &&
    !a.italic === !b.italic &&
    !a.underline === !b.underline &&
    !a.inverse === !b.inverse
  );
}

function applyCarriageReturns(text: string): string {
  if (!text.includes("\r")) return text;
  return text
    .replace(/\r+\n/g, "\n")
    .split("\n")
    .map((line) => {
      const i = line.lastIndexOf("\r");
      return i === -1 ? line : line.slice(i + 1);
    })
    .join("\n");
}

function applySgr(prev: AnsiStyle, params: string): AnsiStyle {
  if (params === "" || params === "0") return {}; // the common reset, without the work
  const s: AnsiStyle = { ...prev };
  const codes = params === "" ? [0] : params.split(/[;:]/).map((p) => (p === "" ? 0 : Number(p)));
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i]!;
    if (c === 0) Object.keys(s).forEach((k) => delete s[k as keyof AnsiStyle]);
    else if (c === 1) s.bold = true;
    else if (c === 2) s.dim = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 7) s.inverse = true;
    else if (c === 22) s.bold = s.dim = false;
    else if (c === 23) s.italic = false;
    else if (c === 24) s.underline = false;
    else if (c === 27) s.inverse = false;
    else if (c >= 30 && c <= 37) s.fg = ANSI_16[c - 30];
    else if (c >= 90 && c <= 97) s.fg = `bright-${ANSI_16[c - 90]}`;
    else if (c === 39) delete s.fg;
    else if (c >= 40 && c <= 47) s.bg = ANSI_16[c - 40];
    else if (c >= 100 && c <= 107) s.bg = `bright-${ANSI_16[c - 100]}`;
    else if (c === 49) delete s.bg;
    else if (c === 38 || c === 48) {
      const [color, used] = extendedColor(codes, i + 1);
      if (color) s[c === 38 ? "fg" : "bg"] = color;
      i += used;
    }
  }
  return s;
}

/** 38;5;N or 38;2;R;G;B → a colour name or `#rrggbb`; returns how many params it consumed. */
function extendedColor(codes: number[], i: number): [string | undefined, number] {
  if (codes[i] === 5 && codes[i + 1] !== undefined) return [color256(codes[i + 1]!), 2];
  if (codes[i] === 2 && codes[i + 3] !== undefined) return [hex(codes[i + 1]!, codes[i + 2]!, codes[i + 3]!), 4];
  return [undefined, 0];
}

function color256(n: number): string {
  if (n < 8) return ANSI_16[n]!;
  if (n < 16) return `bright-${ANSI_16[n - 8]}`;
  if (n < 232) {
    const v = n - 16;
    const step = (x: number) => (x === 0 ? 0 : 55 + x * 40);
    return hex(step(Math.floor(v / 36)), step(Math.floor(v / 6) % 6), step(v % 6));
  }
  const g = 8 + (n - 232) * 10;
  return hex(g, g, g);
}

function hex(r: number, g: number, b: number): string {
  const h = (x: number) => Math.max(0, Math.min(255, x)).toString(16).padStart(2, "0");
  return `#${h(r)}${h(g)}${h(b)}`;
}
