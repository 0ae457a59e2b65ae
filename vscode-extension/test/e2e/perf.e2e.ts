/**
 * The Agent webview under load, in headless Chromium: the built dist/webview.js under its real CSP, fed
 * 1,000 tool calls (3 updates each) and 10 MB of ANSI terminal output the way the host sends them
 * (batches of events with t0 stamps). Checks what it shows: every card rendered and completed, the
 * terminal capped, a click on a card in the middle answered. The figures (update → render latency, the
 * longest main-thread stall, the click's time) are printed here, and judged against their targets by
 * `make bench` (test/bench/webview.bench.ts): timing is no pass/fail of a test on a shared machine.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { launch, shot } from "./browser";
import { clickMiddleCard, flood, LOAD, readPerf } from "./load";
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

describe("Agent webview under load", () => {
  it("stays responsive with 1,000 tool calls and 10 MB of terminal output", async () => {
    const result = await page.evaluate(flood, LOAD);
    await page.locator("#card-bash .exit-badge.ok").waitFor({ timeout: 30000 });
    const cards = await page.locator("article.card").count();
    const completed = await page.locator("article.card.status-completed").count();
    const domNodes = await page.evaluate(() => document.getElementsByTagName("*").length);
    const termChars = await page.evaluate(() => document.querySelector("#card-bash pre.term-out")?.textContent?.length ?? 0);
    const perf = await readPerf(page);
    // Interaction after the flood: collapse a card in the middle and wait for the DOM to show it.
    const clickMs = await page.evaluate(clickMiddleCard);
    await page.locator("#card-bash").scrollIntoViewIfNeeded();
    await page.waitForTimeout(300);
    await page.screenshot({ path: shot("perf-1000-cards-10mb") });
    const report = { cards, completed, domNodes, termChars, ...result, clickMs, latency: perf };
    console.log(`perf: ${JSON.stringify(report)}`);
    assert.equal(cards, 1001);
    assert.equal(completed, 1001);
    assert.ok(result.sentBytes >= 10 * 1024 * 1024);
    assert.ok(termChars <= 110_000, `terminal rendering is capped (${termChars} chars)`);
    assert.ok(clickMs >= 0, "a click on a card in the middle folds it");
    assert.ok(perf.n >= 3000, `every update was measured (${perf.n})`);
    assert.deepEqual(view.cspErrors, []);
  });
});
