/**
 * The built Agent webview (dist/webview.js + css) alone in headless Chromium, under its real CSP, with a
 * stub for VS Code's acquireVsCodeApi: tests post host messages to it and read the DOM. Served from a
 * loopback HTTP server; CSP violations are collected.
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { webviewHtml } from "../../src/views/webviewHtml";
import { emptyState } from "../../shared/state";
import { EXT_DIR } from "./browser";

export interface WebviewPage {
  page: Page;
  cspErrors: string[];
  close(): Promise<void>;
}

/** Opens the webview and gives it an empty, ready session `s` (cwd /ws) as its snapshot. */
export async function openWebview(browser: Browser, agentName: string, viewport = { width: 420, height: 900 }): Promise<WebviewPage> {
  const server = createServer((req, res) => {
    const file = req.url === "/webview.js" ? "webview.js" : req.url === "/webview.css" ? "webview.css" : undefined;
    if (!file) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": file.endsWith(".js") ? "text/javascript" : "text/css" });
    res.end(readFileSync(join(EXT_DIR, "dist", file)));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const nonce = "testNonce123";
  // The stub stands in for VS Code's acquireVsCodeApi; it gets the page's nonce like any script would.
  const stub = `<script nonce="${nonce}">window.__sent=[];window.acquireVsCodeApi=()=>({postMessage:(m)=>window.__sent.push(m),getState:()=>undefined,setState:()=>{}});</script>`;
  const html = webviewHtml({ cspSource: origin, scriptUri: `${origin}/webview.js`, styleUri: `${origin}/webview.css` }, nonce).replace("<script nonce", `${stub}<script nonce`);
  const page = await browser.newPage({ viewport });
  const cspErrors: string[] = [];
  page.on("console", (m) => {
    if (/Content Security Policy|Refused to/.test(m.text())) cspErrors.push(m.text());
  });
  await page.route(`${origin}/`, (route) => route.fulfill({ contentType: "text/html", body: html }));
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => (window as unknown as { __sent: Array<{ type: string }> }).__sent.some((m) => m.type === "ready"));
  const state = emptyState(agentName);
  Object.assign(state, { sessionId: "s", cwd: "/ws", connection: { status: "ready", agentName } });
  await page.evaluate((s) => window.postMessage({ type: "snapshot", state: s }, "*"), state);
  return {
    page,
    cspErrors,
    close: async () => {
      await page.close();
      await new Promise((r) => server.close(r));
    },
  };
}

/** Posts session events to the webview the way the host does (one batch, stamped now). */
export async function postEvents(page: Page, events: unknown[]): Promise<void> {
  await page.evaluate((evs) => window.postMessage({ type: "events", items: evs.map((event) => ({ event, t0: Date.now() })) }, "*"), events);
}
