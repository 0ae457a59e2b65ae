/**
 * Line diff → unified hunks for diff cards (a Myers shortest edit script, O((N+M)·D)).
 * Very large inputs fall back to one replace-all hunk so a huge rewrite cannot stall the view.
 */
export interface DiffLine {
  op: " " | "-" | "+";
  text: string;
  oldNo?: number;
  newNo?: number;
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
    else if (op === "-") out.push({ op, text: a[i]!, oldNo: ++i });
    else out.push({ op, text: b[j]!, newNo: ++j });
  };
  for (let k = 0; k < pre; k++) push(" ");
  for (const op of mid) push(op);
  for (let k = 0; k < suf; k++) push(" ");
  return out;
}

/** Group the edit script into hunks with `context` unchanged lines around each change. */
export function hunks(oldText: string | null | undefined, newText: string, context = 3): Hunk[] {
  const lines = diffLines(oldText, newText);
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
  const oldStart = oldLines === 0 ? (firstNew ?? 1) - 1 : firstOld!;
  const newStart = newLines === 0 ? (firstOld ?? 1) - 1 : firstNew!;
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
