/**
 * Text contrast (WCAG 2.x): relative luminance, contrast ratio, and a foreground nudged until it reaches a
 * minimum ratio against its background. VS Code's terminal does the same for ANSI colours
 * (`terminal.integrated.minimumContrastRatio`, 4.5 by default), so themes whose yellow or cyan is too
 * pale on a light background still read. Pure: colours in, colours out.
 * Reference: https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio
 */
export type Rgb = [number, number, number];
export type Rgba = [number, number, number, number];

/** WCAG 1.4.3 (AA) for normal text. */
export const MIN_TEXT_CONTRAST = 4.5;

/** `#rgb`, `#rrggbb`, `#rrggbbaa`, `rgb(r, g, b)`, `rgba(r, g, b, a)` (and the space syntax) → RGBA. */
export function parseColor(css: string): Rgba | undefined {
  const s = css.trim().toLowerCase();
  const hex = /^#([0-9a-f]{3,8})$/.exec(s)?.[1];
  if (hex) {
    const full = hex.length <= 4 ? [...hex].map((c) => c + c).join("") : hex;
    if (full.length !== 6 && full.length !== 8) return undefined;
    const n = (i: number) => parseInt(full.slice(i, i + 2), 16);
    return [n(0), n(2), n(4), full.length === 8 ? n(6) / 255 : 1];
  }
  const fn = /^rgba?\(([^)]*)\)$/.exec(s)?.[1];
  if (!fn) return undefined;
  const parts = fn.split(/[\s,/]+/).filter(Boolean);
  if (parts.length < 3) return undefined;
  const channel = (p: string) => (p.endsWith("%") ? (parseFloat(p) * 255) / 100 : parseFloat(p));
  const alpha = parts[3] === undefined ? 1 : parts[3].endsWith("%") ? parseFloat(parts[3]) / 100 : parseFloat(parts[3]);
  const rgba: Rgba = [channel(parts[0]!), channel(parts[1]!), channel(parts[2]!), alpha];
  return rgba.some((x) => Number.isNaN(x)) ? undefined : rgba;
}

/** `fg` painted over the opaque `bg`. */
export function over(fg: Rgba, bg: Rgb): Rgb {
  const a = fg[3];
  return [fg[0] * a + bg[0] * (1 - a), fg[1] * a + bg[1] * (1 - a), fg[2] * a + bg[2] * (1 - a)];
}

export function luminance([r, g, b]: Rgb): number {
  const lin = (c: number) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrastRatio(a: Rgb, b: Rgb): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/**
 * `fg` if it already has `ratio` against `bg`; else the colour closest to it, on the way to black or to
 * white, that has it (whichever direction needs less change; the better of the two if neither does).
 */
export function ensureContrast(fg: Rgb, bg: Rgb, ratio = MIN_TEXT_CONTRAST): Rgb {
  if (contrastRatio(fg, bg) >= ratio) return fg;
  const toward = (target: Rgb): { color: Rgb; t: number } => {
    const mix = (t: number): Rgb => [fg[0] + (target[0] - fg[0]) * t, fg[1] + (target[1] - fg[1]) * t, fg[2] + (target[2] - fg[2]) * t];
    if (contrastRatio(mix(1), bg) < ratio) return { color: mix(1), t: Infinity };
    let lo = 0;
    let hi = 1;
    for (let i = 0; i < 20; i++) {
      const mid = (lo + hi) / 2;
      if (contrastRatio(mix(mid), bg) >= ratio) hi = mid;
      else lo = mid;
    }
    // Rounded to whole channels, the colour must still pass: step on until it does.
    let color = round(mix(hi));
    while (contrastRatio(color, bg) < ratio && hi < 1) color = round(mix((hi = Math.min(1, hi + 0.005))));
    return { color, t: hi };
  };
  const dark = toward([0, 0, 0]);
  const light = toward([255, 255, 255]);
  if (dark.t === Infinity && light.t === Infinity) return contrastRatio(dark.color, bg) >= contrastRatio(light.color, bg) ? dark.color : light.color;
  return dark.t <= light.t ? dark.color : light.color;
}

function round(c: Rgb): Rgb {
  return [Math.round(c[0]), Math.round(c[1]), Math.round(c[2])];
}

export function toCss([r, g, b]: Rgb): string {
  return `rgb(${Math.round(r)}, ${Math.round(g)}, ${Math.round(b)})`;
}
