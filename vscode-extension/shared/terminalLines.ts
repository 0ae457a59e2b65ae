/**
 * A terminal's output as lines, kept in step with its TerminalView as output arrives. The view takes
 * each piece of output as it comes (`take`: cheap, before newer output can push it out of the state,
 * which keeps only its newest characters) and parses what it took when it draws (`sync`), once: where
 * re-parsing the whole buffer on every update would cost in proportion to all the output kept, many
 * times a second. Lines are made for the newest `keepChars` characters only; of the output before them
 * only the style it leaves in force is read, so a colour set long ago still shows, and a 10 MB burst
 * costs a scan, not 10 MB of lines. Each line has a number (`seq`, counting from the first line made),
 * so a view that drew up to line n appends only what came after it.
 */
import { AnsiLineReader, type AnsiSegment } from "./ansi";
import type { TerminalView } from "./state";

export interface TerminalLine {
  seq: number;
  segments: AnsiSegment[];
  /** The characters it shows (its newline not counted). */
  chars: number;
}

export class TerminalLines {
  /** The newest complete lines, in order, at most `keepChars` characters of them (always the last one). */
  lines: TerminalLine[] = [];
  /** Characters of output before the first line (not kept, or passed over unparsed). */
  droppedChars = 0;
  private reader = new AnsiLineReader();
  private keptChars = 0;
  private nextSeq = 0;
  /** The terminal's totalChars already taken. */
  private read = 0;
  /** Output taken, not parsed yet. */
  private fresh: string[] = [];
  private freshChars = 0;

  constructor(
    readonly term: TerminalView,
    private keepChars: number,
  ) {
    this.take();
  }

  /** The unfinished last line, as it shows now (of what `sync` parsed). */
  partial(): AnsiSegment[] {
    return this.reader.partial();
  }

  /** Takes the output the terminal got since the last call; parsing it waits for `sync`. */
  take(): void {
    const { output, totalChars } = this.term;
    const fresh = totalChars - this.read;
    if (fresh <= 0) return;
    this.read = totalChars;
    if (fresh <= output.length) {
      this.fresh.push(output.slice(output.length - fresh));
      this.freshChars += fresh;
    } else {
      // Some of it is gone from the state already: start over from what it keeps.
      this.restart(this.keptChars + this.freshChars + (fresh - output.length));
      this.fresh = [output];
      this.freshChars = output.length;
    }
    // Nobody draws (a hidden view): keep what waits bounded.
    if (this.freshChars > 4 * this.keepChars) this.sync();
  }

  /** Parses what was taken; false when there was nothing new. */
  sync(): boolean {
    this.take();
    if (this.freshChars === 0) return false;
    let text = this.fresh.length === 1 ? this.fresh[0]! : this.fresh.join("");
    this.fresh = [];
    this.freshChars = 0;
    if (text.length > this.keepChars) {
      // Only the newest keepChars characters can be kept: the rest is read for its style.
      const passed = this.reader.skip(text.slice(0, text.length - this.keepChars));
      text = text.slice(text.length - this.keepChars);
      if (passed > 0) this.restart(this.keptChars + passed, this.reader);
    }
    for (const segments of this.reader.push(text)) {
      let chars = 0;
      for (const s of segments) chars += s.text.length;
      this.lines.push({ seq: this.nextSeq++, segments, chars });
      this.keptChars += chars + 1;
    }
    let drop = 0;
    let dropped = 0;
    while (drop < this.lines.length - 1 && this.keptChars - dropped > this.keepChars) dropped += this.lines[drop++]!.chars + 1;
    if (drop > 0) {
      this.lines.splice(0, drop);
      this.keptChars -= dropped;
      this.droppedChars += dropped;
    }
    return true;
  }

  /** Makes lines for the newest `keepChars` characters the state keeps (parsed anew from its output). */
  widen(keepChars: number): void {
    this.keepChars = keepChars;
    this.restart(0);
    this.droppedChars = this.term.droppedChars;
    this.fresh = [this.term.output];
    this.freshChars = this.term.output.length;
    this.read = this.term.totalChars;
  }

  /** No lines any more; `dropped` more characters before the next ones. */
  private restart(dropped: number, reader = new AnsiLineReader()): void {
    this.droppedChars += dropped;
    this.lines = [];
    this.keptChars = 0;
    this.reader = reader;
    this.fresh = [];
    this.freshChars = 0;
  }
}

/**
 * The newest lines to draw: at most `maxLines` lines and `maxChars` characters (the last line always,
 * however long). Returns the index in `lines` of the first one.
 */
export function windowStart(lines: readonly TerminalLine[], maxLines: number, maxChars: number): number {
  let i = lines.length;
  let chars = 0;
  while (i > 0 && lines.length - i < maxLines) {
    const next = chars + lines[i - 1]!.chars + 1;
    if (next > maxChars && i < lines.length) break;
    chars = next;
    i--;
  }
  return i;
}
