/**
 * Line diff → unified hunks for diff cards (a Myers shortest edit script, O((N+M)·D)).
 * Very large inputs fall back to one replace-all hunk so a huge rewrite cannot stall the view.
 */
export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
  oldNo?: number;
  newNo?: number;
  /** For an added line: how many old lines come before it (for a removed line: new lines). */
  oldBefore?: number;
  newBefore?: number;
}
export interface Hunk {
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
  lines: DiffLine[];
}

const MAX_EDIT_DISTANCE = 2000;

export function splitLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The edit script as a flat list of lines (context, removed, added). */
export function diffLines(oldText: string | null | undefined, newText: string): DiffLine[] {
  const a = splitLines(oldText ?? "");
  const b = splitLines(newText);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const mid = myers(a.slice(pre, a.length - suf), b.slice(pre, b.length - suf));
  const out: DiffLine[] = [];
  let i = 0;
  let j = 0;
  const push = (op: DiffLine["op"]) => {
    if (op === " ") out.push({ op, text: a[i]!, oldNo: ++i, newNo: ++j });
    else if (op === "-") out.push({ op, text: a[i]!, oldNo: ++i, newBefore: j });
    else out.push({ op, text: b[j]!, newNo: ++j, oldBefore: i });
  };
  for (let k = 0; k < pre; k++) push(" ");
  for (const op of mid) push(op);
  for (let k = 0; k < suf; k++) push(" ");
  return out;
}

/**
 * Where a diff block's texts start in the file: line numbers of the first line of `oldText` (in the file
 * before the edit) and of `newText` (after it). ACP diff blocks may carry excerpts (a hunk and its
 * context) rather than whole files; their position comes from the card's locations.
 */
export interface BlockAnchor {
  oldStart: number;
  newStart: number;
}

/** A content block as far as diffs go (ACP's `ToolCallContent`, or a test's literal). */
export interface DiffBlockLike {
  type: string;
  path?: string;
  oldText?: string | null;
  newText?: string;
}

/**
 * The anchor of each diff block of a card (undefined for other blocks, or when no line is known).
 * Agents that send one excerpt per hunk (this project's bridge does) report one location per hunk, in
 * the same order, whose `line` is the hunk's first changed line in the new file. Blocks and located
 * locations of the same path are paired in order, only when their counts match. A block whose old text
 * is null is a new file: its lines are numbered from 1.
 */
export function blockAnchors(content: readonly DiffBlockLike[], locations: ReadonlyArray<{ path: string; line?: number | null }>): Array<BlockAnchor | undefined> {
  const out: Array<BlockAnchor | undefined> = content.map(() => undefined);
  const byPath = new Map<string, number[]>();
  content.forEach((c, i) => {
    if (c.type === "diff" && c.path !== undefined) byPath.set(c.path, [...(byPath.get(c.path) ?? []), i]);
  });
  for (const [path, indices] of byPath) {
    const lines = locations.filter((l) => l.path === path && typeof l.line === "number" && l.line > 0).map((l) => l.line!);
    const paired = lines.length === indices.length;
    let delta = 0; // lines added so far by earlier hunks of this file: old = new - delta
    indices.forEach((i, k) => {
      const block = content[i]!;
      const newText = block.newText ?? "";
      if (block.oldText == null) {
        out[i] = { oldStart: 0, newStart: 1 };
        return;
      }
      if (!paired) return;
      const lead = leadingContext(block.oldText, newText);
      const newStart = Math.max(1, lines[k]! - lead);
      out[i] = { oldStart: Math.max(1, newStart - delta), newStart };
      delta += splitLines(newText).length - splitLines(block.oldText).length;
    });
  }
  return out;
}

/** How many unchanged lines an excerpt starts with. */
function leadingContext(oldText: string, newText: string): number {
  const a = splitLines(oldText);
  const b = splitLines(newText);
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/**
 * Group the edit script into hunks with `context` unchanged lines around each change. With an anchor,
 * line numbers are the file's (the texts are an excerpt starting at those lines); without one they
 * count from 1 within the texts.
 */
export function hunks(oldText: string | null | undefined, newText: string, context = 3, anchor?: BlockAnchor): Hunk[] {
  const lines = diffLines(oldText, newText);
  if (anchor) {
    const oldOffset = Math.max(0, anchor.oldStart - 1);
    const newOffset = anchor.newStart - 1;
    for (const l of lines) {
      if (l.oldNo !== undefined) l.oldNo += oldOffset;
      if (l.newNo !== undefined) l.newNo += newOffset;
      if (l.oldBefore !== undefined) l.oldBefore += oldOffset;
      if (l.newBefore !== undefined) l.newBefore += newOffset;
    }
  }
  const changed: number[] = [];
  lines.forEach((l, i) => {
    if (l.op !== " ") changed.push(i);
  });
  const result: Hunk[] = [];
  let g = 0;
  while (g < changed.length) {
    let last = g;
    while (last + 1 < changed.length && changed[last + 1]! - changed[last]! <= 2 * context + 1) last++;
    const start = Math.max(0, changed[g]! - context);
    const end = Math.min(lines.length, changed[last]! + context + 1);
    result.push(makeHunk(lines.slice(start, end)));
    g = last + 1;
  }
  return result;
}

function makeHunk(slice: DiffLine[]): Hunk {
  const oldLines = slice.filter((l) => l.op !== "+").length;
  const newLines = slice.filter((l) => l.op !== "-").length;
  const firstOld = slice.find((l) => l.oldNo !== undefined)?.oldNo;
  const firstNew = slice.find((l) => l.newNo !== undefined)?.newNo;
  // For an empty side, unified diff names the line before the hunk (0 at the start of the file).
  const oldStart = oldLines === 0 ? (slice[0]?.oldBefore ?? 0) : firstOld!;
  const newStart = newLines === 0 ? (slice[0]?.newBefore ?? 0) : firstNew!;
  return { oldStart, oldLines, newStart, newLines, lines: slice };
}

export function formatHunkHeader(h: Hunk): string {
  return `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`;
}

type Op = " " | "-" | "+";

function myers(a: string[], b: string[]): Op[] {
  const n = a.length;
  const m = b.length;
  if (n === 0) return Array<Op>(m).fill("+");
  if (m === 0) return Array<Op>(n).fill("-");
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) return backtrack(trace, off, n, m, d);
    }
  }
  return [...Array<Op>(n).fill("-"), ...Array<Op>(m).fill("+")];
}

function backtrack(trace: Int32Array[], off: number, n: number, m: number, dEnd: number): Op[] {
  const ops: Op[] = [];
  let x = n;
  let y = m;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? k + 1 : k - 1;
    const prevX = v[off + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push(" ");
      x--;
      y--;
    }
    ops.push(x === prevX ? "+" : "-");
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) {
    ops.push(" ");
    x--;
    y--;
  }
  return ops.reverse();
}
