/** Driving the code-server workbench with Playwright: the palette, the Agent webview, the editor. */
import type { FrameLocator, Page } from "playwright-core";

export async function openWorkbench(page: Page, url: string, folder: string): Promise<void> {
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
}

/** Runs a palette command; contributed commands appear some seconds after load, so retry. */
export async function runCommand(page: Page, title: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    await page.keyboard.press("F1");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(`>${title}`);
    const row = page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first();
    try {
      await row.waitFor({ timeout: 3000 });
      await page.keyboard.press("Enter");
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
