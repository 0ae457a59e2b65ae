import { describe, expect, it } from "vitest";
import { blockAnchors, diffLines, formatHunkHeader, hunks } from "../../shared/diff";

describe("diff hunks", () => {
  it("produces one hunk with context for a one-line change", () => {
    const old = "1\n2\n3\n4\n5\n6\n7\n8\n9\n";
    const neu = "1\n2\n3\n4\nFIVE\n6\n7\n8\n9\n";
    const hs = hunks(old, neu);
    expect(hs).toHaveLength(1);
    expect(formatHunkHeader(hs[0]!)).toBe("@@ -2,7 +2,7 @@");
    expect(hs[0]!.lines.map((l) => l.op + l.text)).toEqual([" 2", " 3", " 4", "-5", "+FIVE", " 6", " 7", " 8"]);
  });

  it("splits distant changes into separate hunks and merges close ones", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `l${i + 1}`);
    const changed = [...lines];
    changed[1] = "X";
    changed[25] = "Y";
    expect(hunks(lines.join("\n"), changed.join("\n"))).toHaveLength(2);
    const close = [...lines];
    close[1] = "X";
    close[6] = "Y";
    expect(hunks(lines.join("\n"), close.join("\n"))).toHaveLength(1);
  });

  it("treats a missing old text as a new file", () => {
    const hs = hunks(null, "a\nb\n");
    expect(formatHunkHeader(hs[0]!)).toBe("@@ -0,0 +1,2 @@");
    expect(hs[0]!.lines.every((l) => l.op === "+")).toBe(true);
  });

  it("finds a minimal edit script for insertions in the middle", () => {
    const ops = diffLines("a\nb\nc\n", "a\nb\nX\nY\nc\n").map((l) => l.op).join("");
    expect(ops).toBe("  ++ ");
  });

  it("returns no hunks for identical texts", () => {
    expect(hunks("same\n", "same\n")).toEqual([]);
  });

  it("stays fast on a large rewrite", () => {
    const a = Array.from({ length: 20000 }, (_, i) => `a${i}`).join("\n");
    const b = Array.from({ length: 20000 }, (_, i) => `b${i}`).join("\n");
    const t = performance.now();
    const hs = hunks(a, b);
    expect(performance.now() - t).toBeLessThan(2000);
    expect(hs[0]!.oldLines).toBe(20000);
  });
});

describe("diff blocks numbered as in the file", () => {
  const file = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`);
  const excerpt = (from: number, to: number, lines = file) => lines.slice(from - 1, to).join("\n") + "\n";
  const edited = [...file.slice(0, 12), "LINE 13", "extra", ...file.slice(13)];

  it("numbers an excerpt from its location: a change at line 13 starts its hunk at line 10", () => {
    // What the bridge sends: lines 10-16 with context, and a location at the first changed line.
    const block = { type: "diff", path: "/ws/app.txt", oldText: excerpt(10, 16), newText: excerpt(10, 17, edited) };
    const [anchor] = blockAnchors([block], [{ path: "/ws/app.txt", line: 13 }]);
    expect(anchor).toEqual({ oldStart: 10, newStart: 10 });
    const [h] = hunks(block.oldText, block.newText, 3, anchor);
    expect(formatHunkHeader(h!)).toBe("@@ -10,7 +10,8 @@");
    expect(h!.lines.filter((l) => l.op !== " ").map((l) => `${l.oldNo ?? "-"}/${l.newNo ?? "-"} ${l.op}${l.text}`)).toEqual(["13/- -line 13", "-/13 +LINE 13", "-/14 +extra"]);
  });

  it("pairs several excerpts of one file with their locations, shifting old lines by earlier hunks", () => {
    const a = { type: "diff", path: "/f", oldText: "a\nb\n", newText: "a\nB\nB2\n" }; // hunk 1 adds a line
    const b = { type: "diff", path: "/f", oldText: "x\ny\n", newText: "x\nY\n" };
    const anchors = blockAnchors([a, { type: "content" }, b], [{ path: "/f", line: 5 }, { path: "/f", line: 31 }]);
    expect(anchors).toEqual([{ oldStart: 4, newStart: 4 }, undefined, { oldStart: 29, newStart: 30 }]);
  });

  it("leaves blocks unnumbered when locations do not say where they are", () => {
    const block = { type: "diff", path: "/f", oldText: "old", newText: "new" };
    expect(blockAnchors([block], [{ path: "/f" }])).toEqual([undefined]);
    expect(blockAnchors([block, block], [{ path: "/f", line: 3 }])).toEqual([undefined, undefined]);
    expect(blockAnchors([{ type: "diff", path: "/n", oldText: null, newText: "x\n" }], [])).toEqual([{ oldStart: 0, newStart: 1 }]);
  });

  it("names the line before an insertion or a deletion on the empty side", () => {
    expect(formatHunkHeader(hunks("a\nc\n", "a\nb\nc\n", 0, { oldStart: 40, newStart: 40 })[0]!)).toBe("@@ -40,0 +41,1 @@");
    expect(formatHunkHeader(hunks("a\nb\nc\n", "a\nc\n", 0, { oldStart: 40, newStart: 40 })[0]!)).toBe("@@ -41,1 +40,0 @@");
  });
});
