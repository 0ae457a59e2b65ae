/** Shared e2e helpers: headless Debian chromium through playwright-core, artifacts, result lines. */
import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium } from "playwright-core";

export const EXT_DIR = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const ARTIFACTS = process.env.ARTIFACTS_DIR ?? join(EXT_DIR, "artifacts");
export const SHOTS = join(ARTIFACTS, "shots");
mkdirSync(SHOTS, { recursive: true });

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"],
  });
}

export function shot(name: string): string {
  return join(SHOTS, `${name}.png`);
}
