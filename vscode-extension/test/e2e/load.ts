/**
 * The Agent webview's load: what the load test (perf.e2e.ts) and the benchmark (test/bench/webview.bench.ts)
 * feed it and read back. `flood` and `clickMiddleCard` run in the page.
 */
import type { Page } from "playwright-core";

export const LOAD = { calls: 1000, terminalBytes: 10 * 1024 * 1024 };

/** The webview's own update → render figures (webview/perf.ts), in ms. */
export interface PerfFigures {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

export async function readPerf(page: Page): Promise<PerfFigures> {
  return JSON.parse((await page.locator("#acp-perf").textContent()) ?? "{}") as PerfFigures;
}

/** Runs in the page: streams events like the host does, while a probe measures main-thread stalls. */
export async function flood({ calls, terminalBytes }: { calls: number; terminalBytes: number }) {
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

/** Runs in the page: folds the card in the middle of the flood; the time until the DOM shows it, or -1. */
export async function clickMiddleCard(): Promise<number> {
  const btn = document.querySelector<HTMLButtonElement>("#card-call_500 .card-toggle")!;
  const t = performance.now();
  btn.click();
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const ok = document.querySelector("#card-call_500 .card-toggle")?.getAttribute("aria-expanded") === "false";
  return ok ? performance.now() - t : -1;
}
