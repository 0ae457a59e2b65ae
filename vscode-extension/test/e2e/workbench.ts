/** Driving the code-server workbench with Playwright: the palette, the Agent webview, the editor. */
import { readFileSync } from "node:fs";
import type { FrameLocator, Page } from "playwright-core";

export async function openWorkbench(page: Page, url: string, folder: string): Promise<void> {
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
}

/** Runs a palette command; contributed commands appear some seconds after load, so retry. */
export async function runCommand(page: Page, title: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    // Keys typed while a webview (an iframe) has focus do not reach the workbench's keybindings.
    await page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur());
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(`>${title}`);
    // The row whose label is exactly the title: "Focus Agent View" also matches VS Code's own
    // "ACP Agent: Focus on Agent View View", which may be listed first.
    const row = page.locator(".quick-input-list .monaco-list-row", { has: page.locator(".label-name", { hasText: new RegExp(`^${title.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`) }) }).first();
    try {
      await row.waitFor({ timeout: 3000 });
      await row.click();
      return;
    } catch {
      await page.keyboard.press("Escape");
      if (Date.now() > end) throw new Error(`command not found in the palette: ${title}`);
      await page.waitForTimeout(1000);
    }
  }
}

/** The Agent view's document: webviews sit in two nested iframes. */
export function agentView(page: Page): FrameLocator {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}

export async function activeTabLabel(page: Page): Promise<string> {
  return (await page.locator(".editor-group-container.active .tab.active").first().getAttribute("aria-label")) ?? "";
}

export async function cursorPosition(page: Page): Promise<string> {
  return ((await page.locator("#status\\.editor\\.selection").first().textContent()) ?? "").trim();
}

/** Drags the sash between the side bar and the editor until the side bar is `width` px wide. */
export async function setSidebarWidth(page: Page, width: number): Promise<void> {
  const sidebar = page.locator(".part.sidebar").first();
  for (let attempt = 0; attempt < 3; attempt++) {
    const box = (await sidebar.boundingBox())!;
    if (Math.abs(box.width - width) <= 2) return;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width + 1, y);
    await page.mouse.down();
    await page.mouse.move(box.x + width + 1, y, { steps: 8 });
    await page.mouse.up();
    await page.waitForTimeout(200);
  }
  const got = (await sidebar.boundingBox())!.width;
  if (Math.abs(got - width) > 2) throw new Error(`side bar is ${got} px wide, wanted ${width}`);
}

/** Text colour and the backgrounds under it (innermost first), as computed in the page, for contrast checks. */
export interface RenderedText {
  label: string;
  color: string;
  backgrounds: string[];
}

/**
 * Runs in the page: for each element, its computed colour and the background colours of it and its
 * ancestors (the first opaque one ends the stack), plus the page's own background.
 */
export function renderedColours(els: Element[]): RenderedText[] {
  return els.map((el) => {
    const backgrounds: string[] = [];
    for (let e: Element | null = el; e; e = e.parentElement) {
      const bg = getComputedStyle(e).backgroundColor;
      backgrounds.push(bg);
      if (/^rgb\(/.test(bg) || /^rgba\([^)]*,\s*1\)$/.test(bg)) break;
    }
    backgrounds.push(getComputedStyle(document.documentElement).backgroundColor, "rgb(255, 255, 255)");
    return { label: `${el.className}: ${(el.textContent ?? "").trim().slice(0, 40)}`, color: getComputedStyle(el).color, backgrounds };
  });
}

/**
 * Edits the user settings the way a user does: "Preferences: Open User Settings (JSON)", replace the
 * text, save (the file on disk must then hold `settings`), close. Writing the file behind the
 * workbench's back is not reliably noticed by code-server.
 */
export async function editUserSettings(page: Page, file: string, settings: Record<string, unknown>): Promise<void> {
  await runCommand(page, "Preferences: Open User Settings (JSON)");
  // VS Code may open it in a tab or in a modal editor over the workbench.
  const modal = page.locator(".monaco-modal-editor-block .monaco-editor .view-lines").first();
  const tab = page.locator(".editor-group-container.active .tab.active", { hasText: "settings.json" }).first();
  await modal.or(tab).waitFor({ timeout: 15_000 });
  const lines = (await modal.count()) > 0 ? modal : page.locator(".editor-group-container.active .monaco-editor .view-lines").first();
  await lines.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(JSON.stringify(settings, null, 2));
  await page.keyboard.press("Control+S");
  const want = JSON.stringify(settings);
  const end = Date.now() + 10_000;
  for (;;) {
    let got = "";
    try {
      got = JSON.stringify(JSON.parse(readFileSync(file, "utf8")));
    } catch {
      // being written
    }
    if (got === want) break;
    if (Date.now() > end) throw new Error(`settings not saved: ${readFileSync(file, "utf8").slice(0, 400)}`);
    await page.waitForTimeout(100);
  }
  await runCommand(page, "View: Close Editor");
  if ((await page.locator(".monaco-modal-editor-block").count()) > 0) await page.keyboard.press("Escape");
}
