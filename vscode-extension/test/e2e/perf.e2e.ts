/**
 * Responsiveness of the Agent webview under load, in headless Chromium: the built dist/webview.js under
 * its real CSP, fed 1,000 tool calls (3 updates each) and 10 MB of ANSI terminal output the way the host
 * sends them (batches of events with t0 stamps). Measures update → render latency, the longest main
 * thread stall, DOM size and how fast the view answers a click afterwards.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { launch, shot } from "./browser";
import { openWebview, type WebviewPage } from "./webviewPage";

let browser: Browser;
let view: WebviewPage;
let page: Page;

before(async () => {
  browser = await launch();
  view = await openWebview(browser, "load-test");
  page = view.page;
});

after(async () => {
  await view?.close();
  await browser?.close();
});

/** Runs in the page: streams events like the host does, while a probe measures main-thread stalls. */
async function flood({ calls, terminalBytes }: { calls: number; terminalBytes: number }) {
  const post = (items: unknown[]) => window.postMessage({ type: "events", items }, "*");
  let maxGap = 0;
  let last = performance.now();
  const probe = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 10);
  const pause = () => new Promise((r) => setTimeout(r, 0));
  const t = performance.now();
  for (let i = 0; i < calls; i++) {
    const id = `call_${i}`;
    const t0 = Date.now();
    const ev = (u: Record<string, unknown>) => ({ t0, event: { type: "update", update: u } });
    post([
      ev({ sessionUpdate: "tool_call", toolCallId: id, title: `Read src/file_${i}.ts`, kind: "read", status: "pending", locations: [{ path: `/ws/src/file_${i}.ts`, line: 1 }] }),
      ev({ sessionUpdate: "tool_call_update", toolCallId: id, status: "in_progress" }),
      ev({ sessionUpdate: "tool_call_update", toolCallId: id, status: "completed", content: [{ type: "content", content: { type: "text", text: "```ts\nexport const x = " + i + ";\n```" } }] }),
    ]);
    if (i % 10 === 9) await pause();
  }
  const t0 = Date.now();
  post([{ t0, event: { type: "update", update: { sessionUpdate: "tool_call", toolCallId: "bash", title: "yes | head", kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: "bash" }], _meta: { terminal_info: { terminal_id: "bash" } } } } }]);
  const line = "\x1b[32mok\x1b[0m " + "y".repeat(60) + "\n";
  const chunk = line.repeat(Math.ceil(4096 / line.length));
  let sent = 0;
  let n = 0;
  while (sent < terminalBytes) {
    const items = [];
    for (let k = 0; k < 16 && sent < terminalBytes; k++, sent += chunk.length) {
      items.push({ t0: Date.now(), event: { type: "update", update: { sessionUpdate: "tool_call_update", toolCallId: "bash", _meta: { terminal_output: { terminal_id: "bash", data: chunk } } } } });
    }
    post(items);
    if (++n % 4 === 0) await pause();
  }
  post([{ t0: Date.now(), event: { type: "update", update: { sessionUpdate: "tool_call_update", toolCallId: "bash", status: "completed", _meta: { terminal_exit: { terminal_id: "bash", exit_code: 0, signal: null } } } } }]);
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 50)));
  clearInterval(probe);
  return { ingestMs: performance.now() - t, maxGapMs: maxGap, sentBytes: sent };
}

describe("Agent webview under load", () => {
  it("stays responsive with 1,000 tool calls and 10 MB of terminal output", async () => {
    const result = await page.evaluate(flood, { calls: 1000, terminalBytes: 10 * 1024 * 1024 });
    await page.locator("#card-bash .exit-badge.ok").waitFor({ timeout: 30000 });
    const cards = await page.locator("article.card").count();
    const completed = await page.locator("article.card.status-completed").count();
    const domNodes = await page.evaluate(() => document.getElementsByTagName("*").length);
    const termChars = await page.evaluate(() => document.querySelector("#card-bash pre.term-out")?.textContent?.length ?? 0);
    const perf = JSON.parse((await page.locator("#acp-perf").textContent()) ?? "{}") as { n: number; p50: number; p95: number; max: number };
    // Interaction after the flood: collapse a card in the middle and wait for the DOM to show it.
    const clickMs = await page.evaluate(async () => {
      const btn = document.querySelector<HTMLButtonElement>("#card-call_500 .card-toggle")!;
      const t = performance.now();
      btn.click();
      await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
      const ok = document.querySelector("#card-call_500 .card-toggle")?.getAttribute("aria-expanded") === "false";
      return ok ? performance.now() - t : -1;
    });
    await page.locator("#card-bash").scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await page.screenshot({ path: shot("perf-1000-cards-10mb") });
    const report = { cards, completed, domNodes, termChars, ...result, clickMs, latency: perf };
    console.log(`perf: ${JSON.stringify(report)}`);
    assert.equal(cards, 1001);
    assert.equal(completed, 1001);
    assert.ok(result.sentBytes >= 10 * 1024 * 1024);
    assert.ok(termChars <= 110_000, `terminal rendering is capped (${termChars} chars)`);
    assert.ok(clickMs >= 0 && clickMs < 250, `a click answers in ${clickMs} ms`);
    assert.ok(result.maxGapMs < 1000, `longest main-thread stall ${result.maxGapMs} ms`);
    assert.ok(perf.p95 < 500, `p95 update→render ${perf.p95} ms`);
    assert.deepEqual(view.cspErrors, []);
  });
});
