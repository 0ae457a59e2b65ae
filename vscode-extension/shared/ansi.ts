/**
 * ANSI text → styled segments for terminal cards. Understands SGR (colours 16/256/truecolor, bold, dim,
 * italic, underline, inverse, resets); drops every other escape sequence (cursor moves, OSC titles).
 * A lone carriage return overwrites its line, as a terminal would for progress bars.
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
  const text = applyCarriageReturns(input);
  const out: AnsiSegment[] = [];
  let style: AnsiStyle = {};
  let last = 0;
  ESCAPE.lastIndex = 0;
  for (let m = ESCAPE.exec(text); m; m = ESCAPE.exec(text)) {
    if (m.index > last) pushText(out, text.slice(last, m.index), style);
    last = ESCAPE.lastIndex;
    if (m[2] === "m") style = applySgr(style, m[1] ?? "");
  }
  if (last < text.length) pushText(out, text.slice(last), style);
  return out;
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
