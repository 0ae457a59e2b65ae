import { describe, expect, it } from "vitest";
import { AnsiLineReader, type AnsiSegment, parseAnsi, stripAnsi } from "../../shared/ansi";

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

/** Each character shown, with its style, line by line: how a terminal block looks, whatever the segments. */
function shown(lines: AnsiSegment[][]): string[][] {
  return lines.map((segs) => segs.flatMap((seg) => [...seg.text].map((ch) => `${ch}${styleKey(seg)}`)));
}

function styleKey({ text: _text, ...style }: AnsiSegment): string {
  return JSON.stringify(Object.entries(style).filter(([, v]) => v !== undefined && v !== false).sort());
}

/** parseAnsi of the whole text, split into lines. */
function wholeLines(text: string): AnsiSegment[][] {
  const lines: AnsiSegment[][] = [[]];
  for (const seg of parseAnsi(text)) {
    seg.text.split("\n").forEach((part, i) => {
      if (i > 0) lines.push([]);
      if (part) lines[lines.length - 1]!.push({ ...seg, text: part });
    });
  }
  return lines;
}

/** A stream cut at `cuts`, read piece by piece: its lines, then the unfinished one. */
function streamed(text: string, cuts: number[], skipBefore = 0): AnsiSegment[][] {
  const reader = new AnsiLineReader();
  const lines: AnsiSegment[][] = [];
  let at = 0;
  for (const cut of [...cuts, text.length]) {
    const piece = text.slice(at, cut);
    if (cut <= skipBefore) reader.skip(piece);
    else lines.push(...reader.push(piece));
    at = cut;
  }
  return [...lines, reader.partial()];
}

// Colours (16, 256, truecolor), resets, a progress bar (\r), \r\n, an OSC title (BEL), an OSC that holds
// a newline (ST), cursor moves, a style that lasts across lines, unicode.
const TRICKY =
  "\x1b[1;31mred bold\x1b[0m plain\n" +
  "10%\r50%\r\x1b[32m100%\x1b[0m\n" +
  "\x1b]0;title\x07after title\r\n" +
  "\x1b[38;5;196mlasts\nacross lines\x1b[39m done\r\r\n" +
  "\x1b]8;;file:///a\nb\x1b\\link\x1b]8;;\x1b\\ text\n" +
  "\x1b[2K\x1b[1Amoved\x1b[48;2;0;0;255m blue bg 🙂\n" +
  "\x1b[7minverse\x1b[27m unfinished \x1b[3";

describe("ANSI streams", () => {
  it("read in pieces, cut anywhere, show what the whole text shows", () => {
    const whole = shown(wholeLines(TRICKY));
    for (let cut = 1; cut < TRICKY.length; cut++) expect(shown(streamed(TRICKY, [cut])), `cut at ${cut}`).toEqual(whole);
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    for (let run = 0; run < 200; run++) {
      const cuts = [...new Set(Array.from({ length: 1 + Math.floor(random() * 12) }, () => 1 + Math.floor(random() * (TRICKY.length - 1))))].sort((a, b) => a - b);
      expect(shown(streamed(TRICKY, cuts)), `cuts ${cuts.join(",")}`).toEqual(whole);
    }
  });

  it("holds back the unfinished line, and shows it as it stands (a progress bar overwrites it)", () => {
    const reader = new AnsiLineReader();
    expect(reader.push("\x1b[33mbuild\n10%")).toEqual([[{ text: "build", fg: "yellow" }]]);
    expect(reader.partial()).toEqual([{ text: "10%", fg: "yellow" }]);
    expect(reader.push("\r55%")).toEqual([]);
    expect(reader.partial()).toEqual([{ text: "55%", fg: "yellow" }]);
    expect(reader.push("\r\n")).toEqual([[{ text: "55%", fg: "yellow" }]]);
    expect(reader.partial()).toEqual([]);
  });

  it("passes over output it will not show, keeping the style that output leaves in force", () => {
    const text = "\x1b[35mmagenta from here\n" + "x\n".repeat(1000) + "still magenta\n\x1b[0mplain\n";
    const skipped = text.indexOf("still");
    const lines = streamed(text, [skipped - 7, skipped], skipped);
    expect(shown(lines)).toEqual(shown(wholeLines(text)).slice(-3));
    expect(lines[0]).toEqual([{ text: "still magenta", fg: "magenta" }]);
  });
});
