import { describe, expect, it } from "vitest";
import { contrastRatio, ensureContrast, over, parseColor, type Rgb } from "../../shared/contrast";

describe("text contrast", () => {
  it("reads CSS colours as the browser computes them", () => {
    expect(parseColor("rgb(12, 34, 56)")).toEqual([12, 34, 56, 1]);
    expect(parseColor("rgba(0, 0, 0, 0.5)")).toEqual([0, 0, 0, 0.5]);
    expect(parseColor("#fff")).toEqual([255, 255, 255, 1]);
    expect(parseColor("#11223380")).toEqual([17, 34, 51, 128 / 255]);
    expect(parseColor("var(--x)")).toBeUndefined();
  });

  it("computes WCAG ratios", () => {
    expect(contrastRatio([0, 0, 0], [255, 255, 255])).toBeCloseTo(21, 5);
    expect(contrastRatio([255, 255, 255], [255, 255, 255])).toBe(1);
    expect(over([0, 0, 0, 0.5], [255, 255, 255])).toEqual([127.5, 127.5, 127.5]);
  });

  it("darkens a pale terminal yellow on white to 4.5:1, as VS Code's terminal does", () => {
    const white: Rgb = [255, 255, 255];
    const yellow: Rgb = [0xbf, 0x88, 0x03]; // Light Modern's ansiYellow: 2.9:1 on white
    expect(contrastRatio(yellow, white)).toBeLessThan(4.5);
    const fixed = ensureContrast(yellow, white);
    expect(contrastRatio(fixed, white)).toBeGreaterThanOrEqual(4.5);
    expect(fixed.every((c, i) => c <= yellow[i]!)).toBe(true); // toward black, not white
  });

  it("lightens on a dark background, and leaves readable colours alone", () => {
    const dark: Rgb = [30, 30, 30];
    const blue: Rgb = [0, 0, 200];
    const fixed = ensureContrast(blue, dark);
    expect(contrastRatio(fixed, dark)).toBeGreaterThanOrEqual(4.5);
    expect(ensureContrast([240, 240, 240], dark)).toEqual([240, 240, 240]);
  });
});
