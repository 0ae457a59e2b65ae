/**
 * Update → card latency: the host stamps each event with t0 (when the ACP message arrived); after the
 * frame that shows it has been rendered, the webview records Date.now() - t0. The summary sits in a
 * hidden #acp-perf element (read by the end-to-end test) and is kept to the last 5,000 samples.
 */
const samples: number[] = [];
const transport: number[] = [];
let el: HTMLElement | undefined;

export function mountPerf(root: HTMLElement): void {
  el = document.createElement("div");
  el.id = "acp-perf";
  el.hidden = true;
  root.append(el);
}

/** Host arrival → webview message receipt (the transport share of the latency). */
export function recordTransport(latency: number): void {
  transport.push(latency);
  if (transport.length > 5000) transport.splice(0, transport.length - 5000);
}

export function record(latencies: number[]): void {
  if (latencies.length === 0) return;
  samples.push(...latencies);
  if (samples.length > 5000) samples.splice(0, samples.length - 5000);
  if (el) el.textContent = JSON.stringify(summary());
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
}

export function summary(): { n: number; p50: number; p95: number; max: number; transportP50: number; recent: number[] } {
  return {
    n: samples.length,
    p50: quantile(samples, 0.5),
    p95: quantile(samples, 0.95),
    max: Math.max(0, ...samples),
    transportP50: quantile(transport, 0.5),
    recent: samples.slice(-60),
  };
}
