import { describe, expect, it } from "vitest";
import { applyEvent } from "../../shared/reducer";
import { TERMINAL_KEEP_CHARS } from "../../shared/state";
import { TerminalLines, windowStart } from "../../shared/terminalLines";
import { stateAfter, toolCall, toolUpdate } from "./helpers";

/** A session with terminal t1 open, and a way to stream output into it through the reducer. */
function terminal() {
  const s = stateAfter(toolCall("t1", { kind: "execute", title: "yes", _meta: { terminal_info: { terminal_id: "t1" } } }));
  const write = (data: string) => applyEvent(s, toolUpdate("t1", { _meta: { terminal_output: { terminal_id: "t1", data } } }));
  return { term: s.terminals.t1!, write };
}

const textOf = (lines: TerminalLines) => lines.lines.map((l) => l.segments.map((s) => s.text).join(""));

describe("terminal lines", () => {
  it("parses each piece of output once, and a later read adds only the lines after it", () => {
    const { term, write } = terminal();
    const model = new TerminalLines(term, 50_000);
    write("one\ntw");
    model.take();
    write("o\nthree");
    expect(model.sync()).toBe(true);
    expect(model.lines.map((l) => [l.seq, l.segments.map((s) => s.text).join("")])).toEqual([
      [0, "one"],
      [1, "two"],
    ]);
    expect(model.partial()).toEqual([{ text: "three" }]);
    expect(model.sync()).toBe(false);
    write("\n\x1b[32mfour\n");
    model.sync();
    expect(model.lines.map((l) => l.seq)).toEqual([0, 1, 2, 3]);
    expect(model.lines[3]!.segments).toEqual([{ text: "four", fg: "green" }]);
  });

  it("keeps lines for the newest characters only, with the style set before them (10 MB of output)", () => {
    const { term, write } = terminal();
    const model = new TerminalLines(term, 50_000);
    write("\x1b[31m");
    const chunk = "y".repeat(60).concat("\n").repeat(67); // 4 KiB
    for (let i = 0; i < 2560; i++) {
      write(chunk);
      model.take(); // what the view does for every event
      if (i % 50 === 49) model.sync(); // ...and at each frame
    }
    model.sync();
    const kept = model.lines.reduce((n, l) => n + l.chars + 1, 0);
    expect(kept).toBeLessThanOrEqual(50_000);
    expect(kept).toBeGreaterThan(49_000);
    // Red from the first escape, 10 MB earlier: the state itself no longer has it.
    expect(term.output.includes("\x1b[31m")).toBe(false);
    expect(model.lines.every((l) => l.segments.length === 1 && l.segments[0]!.fg === "red")).toBe(true);
    const seqs = model.lines.map((l) => l.seq);
    expect(seqs).toEqual(seqs.map((_, i) => seqs[0]! + i));
    expect(model.droppedChars + kept).toBe(term.totalChars);
    expect(model.partial()).toEqual([]);
  });

  it("starts over from what the state keeps when output was dropped before it was taken", () => {
    const { term, write } = terminal();
    const model = new TerminalLines(term, 50_000);
    write("first\n");
    model.sync();
    for (let i = 0; i < 30; i++) write(`${String(i).padStart(4, "0")}${"z".repeat(4090)}\n`); // 120 KiB, never taken
    model.sync();
    expect(textOf(model).at(-1)).toBe(`0029${"z".repeat(4090)}`);
    expect(textOf(model)).not.toContain("first");
    expect(model.droppedChars).toBeGreaterThanOrEqual(term.droppedChars);
  });

  it("widens to everything the state keeps, on demand", () => {
    const { term, write } = terminal();
    const model = new TerminalLines(term, 1000);
    for (let i = 0; i < 500; i++) write(`line ${i}\n`);
    model.sync();
    expect(model.lines.length).toBeLessThan(200);
    model.widen(TERMINAL_KEEP_CHARS);
    model.sync();
    expect(textOf(model)).toEqual(Array.from({ length: 500 }, (_, i) => `line ${i}`));
    expect(model.droppedChars).toBe(0);
  });

  it("draws the newest lines within a count and a size, and always the last one", () => {
    const { term, write } = terminal();
    const model = new TerminalLines(term, 1_000_000);
    for (let i = 0; i < 100; i++) write("abcd\n"); // 5 characters a line, newline counted
    write(`${"L".repeat(100)}\n`);
    model.sync();
    expect(windowStart(model.lines, 10, 1_000)).toBe(91);
    expect(windowStart(model.lines, 1_000, 126)).toBe(95);
    expect(windowStart(model.lines, 1_000, 50)).toBe(100);
    expect(windowStart([], 10, 10)).toBe(0);
  });
});
