import { describe, expect, it } from "vitest";
import { sliceLines } from "../../src/acp/textLines";
import { appendCapped } from "../../shared/terminalText";

describe("fs/read_text_file line windows", () => {
  const text = "one\ntwo\nthree\nfour\n";
  it("returns everything without line or limit", () => expect(sliceLines(text)).toBe(text));
  it("starts at a 1-based line", () => expect(sliceLines(text, 3)).toBe("three\nfour\n"));
  it("honours limit", () => expect(sliceLines(text, 2, 2)).toBe("two\nthree\n"));
  it("limit alone counts from the first line", () => expect(sliceLines(text, null, 1)).toBe("one\n"));
  it("a start past the end is empty", () => expect(sliceLines(text, 10)).toBe(""));
});

describe("capped terminal text", () => {
  it("never cuts inside a surrogate pair", () => {
    const buf = { output: "", droppedChars: 0, totalChars: 0 };
    appendCapped(buf, "😀".repeat(10), 5);
    expect(buf.output.length).toBeLessThanOrEqual(5);
    expect(buf.output.codePointAt(0)).toBe(0x1f600);
  });
});
