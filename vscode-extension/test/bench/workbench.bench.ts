/**
 * `make bench` (through `npm run bench`): `session/update` → card shown inside a real VS Code (code-server,
 * the built .vsix) against the real bridge on test/fixtures/bench.json (a turn of twenty reads in two
 * steps). The figure is the webview's own: the host's arrival stamp of each update → after the frame that
 * shows it (webview/perf.ts), p95 over the run; baseline, in the same run: the p50 of the host → webview
 * trip alone (code-server's websocket and the webview's two iframes). Target ≤ 1,000 ms (it was the
 * first vscode.e2e test's assert). Prints one JSON line; without code-server (scripts/e2e.sh installs it)
 * or the .vsix, a line that says it was skipped and why.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { join, resolve } from "node:path";
import { ARTIFACTS, EXT_DIR, launch } from "../e2e/browser";
import { agentView, openWorkbench, runCommand } from "../e2e/workbench";

const FIGURE = "workbench_update_card_p95";
const REPO = resolve(EXT_DIR, "..");
const TOOLS = process.env.TOOLS_DIR ?? join(REPO, ".tools");
const VSIX = join(EXT_DIR, "dist", "acp-bridge-vscode.vsix");
const WS = join(ARTIFACTS, "bench", "ws");

function print(row: Record<string, unknown>): void {
  console.log(JSON.stringify({ figure: FIGURE, ...row }));
}

/** A free port on 127.0.0.1 for code-server (another checkout's tests may hold the default one). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address() as AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

if (!existsSync(join(TOOLS, "cs", "node_modules", ".bin", "code-server"))) print({ skipped: `no code-server in ${TOOLS} (bash scripts/e2e.sh --install-only installs it)` });
else if (!existsSync(VSIX)) print({ skipped: `no ${VSIX} (npm run build && npm run package)` });
else {
  process.env.CS_PORT ??= String(await freePort());
  const { CodeServer } = await import("../e2e/codeServer");
  rmSync(WS, { recursive: true, force: true });
  mkdirSync(WS, { recursive: true });
  for (let i = 1; i <= 20; i++) writeFileSync(join(WS, `f${String(i).padStart(2, "0")}.txt`), `file ${i}\n`.repeat(40));
  const server = new CodeServer({ data: join(ARTIFACTS, "bench", "cs") });
  server.prepare(
    { "acp.pythonCommand": join(REPO, ".venv", "bin", "python"), "acp.bridgeArgs": ["--model", `scripted:${join(EXT_DIR, "test", "fixtures", "bench.json")}`], "acp.followAlong": false, "acp.permissionNotifications": false },
    VSIX,
  );
  await server.start(WS);
  const browser = await launch();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
    await openWorkbench(page, server.url, WS);
    await runCommand(page, "ACP: Focus Agent View");
    const view = agentView(page);
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 120_000 });
    await view.locator("#prompt").click();
    await page.keyboard.type("read them all");
    await page.keyboard.press("Enter");
    await view.locator(".msg-agent", { hasText: "DONE" }).waitFor({ timeout: 120_000 });
    await view.locator("#card-r20 .status-badge", { hasText: "completed" }).waitFor({ timeout: 60_000 });
    await page.waitForTimeout(300);
    const perf = JSON.parse((await view.locator("#acp-perf").textContent()) ?? "{}") as { n: number; p95: number; transportP50: number };
    print({ value: perf.p95, n: perf.n, baseline: perf.transportP50 });
  } finally {
    await browser.close();
    await server.stop();
  }
}
