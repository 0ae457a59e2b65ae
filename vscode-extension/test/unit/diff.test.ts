import { describe, expect, it } from "vitest";
import { diffLines, formatHunkHeader, hunks } from "../../shared/diff";

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
