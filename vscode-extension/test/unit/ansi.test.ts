import { describe, expect, it } from "vitest";
import { parseAnsi, stripAnsi } from "../../shared/ansi";

describe("ANSI parsing", () => {
  it("splits text into styled segments", () => {
    expect(parseAnsi("a\x1b[31mred\x1b[0m b")).toEqual([{ text: "a" }, { text: "red", fg: "red" }, { text: " b" }]);
  });

  it("understands bold, bright, 256-colour and truecolour", () => {
    const segs = parseAnsi("\x1b[1;92mok\x1b[38;5;196mx\x1b[48;2;0;0;255my");
    expect(segs[0]).toMatchObject({ text: "ok", bold: true, fg: "bright-green" });
    expect(segs[1]).toMatchObject({ text: "x", fg: "#ff0000" });
    expect(segs[2]).toMatchObject({ text: "y", bg: "#0000ff" });
  });

  it("drops cursor moves and OSC titles", () => {
    expect(stripAnsi("\x1b]0;title\x07\x1b[2Khello\x1b[1A")).toBe("hello");
  });

  it("lets a carriage return overwrite the line", () => {
    expect(stripAnsi("10%\r50%\r100%\ndone\r\n")).toBe("100%\ndone\n");
  });
});
