/**
 * Whole files from a card's diff blocks: the file as it will be once a proposed edit is applied (for
 * review before approval), the file as it was before an applied edit (for Open diff and Undo).
 *
 * A block's texts are either excerpts placed by an anchor (see `blockAnchors`: the line where the text
 * starts), or loose strings without a line (an agent's `old_string → new_string`), or, for a new file,
 * the whole content with `oldText: null`. Each block is found where its anchor says, else at the
 * occurrence nearest to it (the file may have moved a little since, as `patch` allows), else, without an
 * anchor, at its only occurrence; a text that is not there means the file changed where the edit was,
 * which is reported with the line, never guessed around. Pure: no I/O.
 */
import { type BlockAnchor, blockAnchors, type DiffBlockLike } from "./diff";

export interface EditBlock {
  oldText: string | null;
  newText: string;
  anchor?: BlockAnchor;
}

/** `text: null` means the file does not exist (before a create, or after undoing one). */
export type EditResult = { ok: true; text: string | null } | { ok: false; reason: string; line?: number };

type Direction = "apply" | "revert";

/** The blocks of a card that touch `path`, in order, with their anchors. */
export function editBlocksFor(content: readonly DiffBlockLike[], locations: ReadonlyArray<{ path: string; line?: number | null }>, path: string): EditBlock[] {
  const anchors = blockAnchors(content, locations);
  const out: EditBlock[] = [];
  content.forEach((c, i) => {
    if (c.type === "diff" && c.path === path) out.push({ oldText: c.oldText ?? null, newText: c.newText ?? "", anchor: anchors[i] });
  });
  return out;
}

/**
 * `apply`: the file `current` with every block's old text replaced by its new text (what a pending
 * edit will make of it). `revert`: the file with every block's new text replaced by its old text (what
 * it was before an applied edit, or what Undo writes).
 */
export function editFile(current: string | null, blocks: readonly EditBlock[], direction: Direction): EditResult {
  if (blocks.length === 0) return { ok: false, reason: "the card has no change for this file" };
  const created = blocks.find((b) => b.oldText === null);
  if (created) {
    if (direction === "apply") return current === null ? { ok: true, text: created.newText } : { ok: false, reason: "the file was created by someone else in the meantime" };
    if (current === null) return { ok: false, reason: "the file no longer exists" };
    return current === created.newText ? { ok: true, text: null } : { ok: false, reason: "the file changed since the agent created it" };
  }
  if (current === null) return { ok: false, reason: "the file does not exist" };
  // Replace from the bottom up, so each anchor still points into unchanged text.
  const placed: Array<{ at: number; from: string; to: string }> = [];
  for (const b of blocks) {
    const from = direction === "apply" ? b.oldText! : b.newText;
    const to = direction === "apply" ? b.newText : b.oldText!;
    const line = b.anchor ? (direction === "apply" ? b.anchor.oldStart : b.anchor.newStart) : undefined;
    const at = locate(current, from, line);
    if (at === undefined) {
      const where = line !== undefined ? ` at line ${line}` : "";
      return { ok: false, reason: `the file changed where the agent's edit was${where}`, line };
    }
    placed.push({ at, from, to });
  }
  placed.sort((x, y) => y.at - x.at);
  for (let k = 1; k < placed.length; k++) {
    if (placed[k]!.at + placed[k]!.from.length > placed[k - 1]!.at) return { ok: false, reason: "the edit's changes overlap in the file as it is now" };
  }
  let text = current;
  for (const p of placed) text = text.slice(0, p.at) + p.to + text.slice(p.at + p.from.length);
  return { ok: true, text };
}

/** Offset of `needle` in `text`: at the start of `line` if it is there, else the occurrence nearest to it. */
function locate(text: string, needle: string, line: number | undefined): number | undefined {
  if (line !== undefined) {
    const start = lineOffset(text, line);
    if (start !== undefined && text.startsWith(needle, start)) return start;
  }
  if (needle === "") return undefined; // an empty text has no place of its own
  const hits: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + 1)) hits.push(i);
  if (hits.length === 0) return undefined;
  if (line === undefined) return hits.length === 1 ? hits[0] : undefined;
  const target = lineOffset(text, line) ?? text.length;
  hits.sort((a, b) => Math.abs(a - target) - Math.abs(b - target));
  const [best, next] = hits;
  return next !== undefined && Math.abs(next - target) === Math.abs(best! - target) ? undefined : best;
}

/** Character offset where 1-based `line` starts (the end of the text for the line after the last). */
function lineOffset(text: string, line: number): number | undefined {
  if (line < 1) return undefined;
  let at = 0;
  for (let n = 1; n < line; n++) {
    const nl = text.indexOf("\n", at);
    if (nl === -1) return n === line - 1 && at <= text.length ? text.length : undefined;
    at = nl + 1;
  }
  return at;
}
