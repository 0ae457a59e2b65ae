/**
 * `make bench` (through `npm run bench`): the Agent webview's speed under load, in headless Chromium, the
 * built dist/webview.js under its real CSP fed what the load test feeds it (test/e2e/load.ts: 1,000 tool
 * calls of 3 updates and 10 MB of ANSI output). Prints one JSON line per figure, for benchmarks/vscode_bench.py:
 * - update → render p95 (the view's own stamps: the host's arrival time → after the frame that shows it),
 *   target ≤ 500 ms; baseline: the same view's p95 for 30 single updates on an idle page, in the same run;
 * - the longest main-thread stall while it ingests, target < 1,000 ms;
 * - a click on the card in the middle answered (folded in the DOM) afterwards, target < 250 ms.
 * Figures, not verdicts: the script exits 0 whatever they are (the Python side compares).
 */
import { launch } from "../e2e/browser";
import { clickMiddleCard, flood, LOAD, readPerf } from "../e2e/load";
import { openWebview, postEvents } from "../e2e/webviewPage";

const browser = await launch();
try {
  // The baseline: single updates on an idle view, one at a time.
  const idle = await openWebview(browser, "bench-idle");
  for (let i = 0; i < 30; i++) {
    await postEvents(idle.page, [{ type: "update", update: { sessionUpdate: "tool_call", toolCallId: `c${i}`, title: `Read f${i}.ts`, kind: "read", status: "completed" } }]);
    await idle.page.locator(`#card-c${i}`).waitFor();
  }
  await idle.page.waitForTimeout(100);
  const baseline = await readPerf(idle.page);
  await idle.close();

  const view = await openWebview(browser, "bench-load");
  const result = await view.page.evaluate(flood, LOAD);
  await view.page.locator("#card-bash .exit-badge.ok").waitFor({ timeout: 120_000 });
  const perf = await readPerf(view.page);
  const clickMs = await view.page.evaluate(clickMiddleCard);
  await view.close();
  const print = (row: Record<string, unknown>) => console.log(JSON.stringify(row));
  print({ figure: "update_render_p95", value: perf.p95, n: perf.n, baseline: baseline.p95 });
  print({ figure: "longest_stall", value: Math.round(result.maxGapMs) });
  print({ figure: "click_after_load", value: Math.round(clickMs * 10) / 10 });
} finally {
  await browser.close();
}
