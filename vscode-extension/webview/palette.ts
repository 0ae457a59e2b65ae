/**
 * Terminal colours that stay readable: each ANSI colour of the theme is nudged until it has 4.5:1
 * against the terminal background, as VS Code's own terminal does (`minimumContrastRatio`), and kept as
 * `--acp-ansi-<name>` custom properties (on the app element) that styles.css uses. Recomputed when the theme changes (VS Code
 * rewrites the body's class and style then). Colours given as #rrggbb by the program (256-colour and
 * truecolor SGR) are adjusted per span with `readable()`.
 */
import { ANSI_16 } from "../shared/ansi";
import { ensureContrast, over, parseColor, type Rgb, toCss } from "../shared/contrast";

const NAMES = [...ANSI_16, ...ANSI_16.map((n) => `bright-${n}`)];
let background: Rgb = [30, 30, 30];
const cache = new Map<string, string>();

/** The colour a CSS expression resolves to, as the browser computes it (`var(...)` included). */
function resolve(expr: string, property: "color" | "backgroundColor" = "color"): string {
  const probe = document.createElement("span");
  probe.style[property] = expr;
  probe.hidden = true;
  document.body.append(probe);
  const value = getComputedStyle(probe)[property];
  probe.remove();
  return value;
}

function opaque(css: string, under: Rgb): Rgb | undefined {
  const c = parseColor(css);
  return c ? over(c, under) : undefined;
}

export function updatePalette(target: HTMLElement): void {
  const page = opaque(resolve("var(--vscode-sideBar-background, var(--vscode-editor-background))", "backgroundColor"), [255, 255, 255]) ?? [255, 255, 255];
  background = opaque(resolve("var(--vscode-terminal-background, var(--vscode-editor-background))", "backgroundColor"), page) ?? page;
  cache.clear();
  const root = target.style;
  for (const name of NAMES) {
    const cssName = name.replace(/-(\w)/g, (_m, c: string) => c.toUpperCase()).replace(/^\w/, (c) => c.toUpperCase());
    const theme = opaque(resolve(`var(--vscode-terminal-ansi${cssName})`), background);
    if (theme) root.setProperty(`--acp-ansi-${name}`, toCss(ensureContrast(theme, background)));
    else root.removeProperty(`--acp-ansi-${name}`);
  }
  const fg = opaque(resolve("var(--vscode-terminal-foreground, var(--vscode-editor-foreground))"), background);
  if (fg) root.setProperty("--acp-terminal-fg", toCss(ensureContrast(fg, background)));
}

/**
 * A colour made readable on `bg` (the terminal background if not given): a program-chosen #rrggbb, or a
 * CSS expression such as `var(--acp-ansi-red)` (resolved once, cached until the theme changes).
 */
export function readable(color: string, bg?: string): string {
  const key = `${color}|${bg ?? ""}`;
  let out = cache.get(key);
  if (out === undefined) {
    const under = (bg && opaque(parseColor(bg) ? bg : resolve(bg, "backgroundColor"), background)) || background;
    const c = opaque(parseColor(color) ? color : resolve(color), under);
    out = c ? toCss(ensureContrast(c, under)) : color;
    cache.set(key, out);
  }
  return out;
}

/** Calls `onChange` when VS Code switches theme: it rewrites the root's CSS variables and the body's class. */
export function watchTheme(onChange: () => void): void {
  let pending = false;
  const signature = () => `${document.body.className}|${["--vscode-editor-background", "--vscode-foreground", "--vscode-terminal-ansiYellow"].map((v) => getComputedStyle(document.documentElement).getPropertyValue(v)).join("|")}`;
  let last = signature();
  const changed = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const now = signature();
      if (now === last) return; // the root's style changed for another reason (e.g. scroll padding)
      last = now;
      onChange();
    });
  };
  new MutationObserver(changed).observe(document.body, { attributes: true, attributeFilter: ["class"] });
  new MutationObserver(changed).observe(document.documentElement, { attributes: true, attributeFilter: ["style", "class"] });
}
