/**
 * A new user in a real VS Code (code-server) with the .vsix installed, a Python 3.11+ on PATH and no
 * acp-bridge anywhere: a clean profile (no setting but the scripted model), no PYTHONPATH, no virtual
 * environment of the checkout's on PATH. Opening the Agent view says the bridge is missing and offers
 * "Install acp-bridge"; one click creates an environment in the extension's global storage and installs
 * the wheel the .vsix carries (progress in a notification, the log in the output); the agent then starts
 * on it. The workspace's `.vscode/mcp.json` names a stdio MCP server: a prompt reads a file (a completed
 * card) and calls the server's tool (an MCP card, approved in the card).
 * pip reaches no package index: the bridge's dependencies come from the wheelhouse `make wheelhouse`
 * downloads (<repo>/.cache/wheelhouse), and pip's proxy is a 127.0.0.1 trap that must see no connection.
 * Screenshots: artifacts/shots/e2e-install-*.png.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";
import { delimiter, dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { ARTIFACTS, EXT_DIR, launch, shot } from "./browser";
import { CodeServer } from "./codeServer";
import { agentView, openWorkbench, runCommand } from "./workbench";

const WS = join(ARTIFACTS, "e2e", "install-ws");
const SCRIPT = join(EXT_DIR, "test", "fixtures", "install.json");
const DATA = join(ARTIFACTS, "e2e", "cs-install");
/** Where the extension puts its own environment: its global storage, under the fresh user data. */
const VENV = join(DATA, "user", "User", "globalStorage", "acp-bridge.acp-bridge-vscode", "bridge-venv");
/** The locked wheels for this machine's Pythons (scripts/wheelhouse.py writes the stamp last). */
const WHEELHOUSE = join(EXT_DIR, "..", ".cache", "wheelhouse");

/** A proxy on 127.0.0.1 that counts and drops every connection: pip's way out, were it to try one. */
let trapped = 0;
const trap = createServer((socket) => {
  trapped += 1;
  socket.destroy();
});

/** This process's environment without a way back to the checkout's Python (what a new user's is). */
function newUserEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const k of ["PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "ACP_BRIDGE_CMD"]) delete out[k];
  const checkoutBins = [join(EXT_DIR, "..", ".venv", "bin"), process.env.VIRTUAL_ENV ? join(process.env.VIRTUAL_ENV, "bin") : ""].filter(Boolean);
  out.PATH = (env.PATH ?? "")
    .split(delimiter)
    .filter((p) => p && !checkoutBins.includes(p) && !(existsSync(join(p, "python3")) && existsSync(join(dirname(p), "pyvenv.cfg"))))
    .join(delimiter);
  // The extension's pip inherits these: the wheelhouse and no index, and the trap as its proxy.
  out.PIP_NO_INDEX = "1";
  out.PIP_FIND_LINKS = WHEELHOUSE;
  out.PIP_PROXY = `http://127.0.0.1:${(trap.address() as AddressInfo).port}`;
  return out;
}

const server = new CodeServer({ data: DATA, env: newUserEnv });
let browser: Browser;
let page: Page;

before(async () => {
  if (!existsSync(join(WHEELHOUSE, ".complete.json"))) throw new Error(`no wheelhouse at ${WHEELHOUSE}: run \`make wheelhouse\` (\`make test\` does) first`);
  await new Promise<void>((resolve) => trap.listen(0, "127.0.0.1", resolve));
  rmSync(WS, { recursive: true, force: true });
  mkdirSync(join(WS, ".vscode"), { recursive: true });
  writeFileSync(join(WS, "notes.txt"), "alpha\nbeta\ngamma\n");
  writeFileSync(join(WS, ".vscode", "mcp.json"), JSON.stringify({ servers: { fixture: { type: "stdio", command: process.execPath, args: [join(EXT_DIR, "out", "agent", "mcpEcho.mjs")] } } }, null, 2));
  server.prepare({ "acp.bridgeArgs": ["--model", `scripted:${SCRIPT}`] }, join(EXT_DIR, "dist", "acp-bridge-vscode.vsix"));
  await server.start(WS);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await openWorkbench(page, server.url, WS);
});

after(async () => {
  if (page) await page.screenshot({ path: shot("e2e-install-99-final") }).catch(() => undefined);
  await browser?.close();
  await server.stop();
  await new Promise((resolve) => trap.close(resolve));
});

describe("first use without acp-bridge (code-server, clean profile)", () => {
  it("one click installs the bridge into the extension's storage, then a prompt reaches completed cards, an MCP one included", async () => {
    await runCommand(page, "ACP: Focus Agent View");
    const view = agentView(page);
    const install = view.locator("#install-bridge");
    await install.waitFor({ timeout: 60_000 });
    assert.match((await view.locator(".error-summary").textContent()) ?? "", /does not have acp-bridge installed/);
    await page.screenshot({ path: shot("e2e-install-01-missing") });
    await page.locator(".part.sidebar").first().screenshot({ path: shot("readme-install") });
    await install.click();
    // Progress in a notification while it installs; then the agent starts on the new environment.
    await page.locator(".notifications-toasts .notification-list-item", { hasText: "Installing acp-bridge" }).first().waitFor({ timeout: 60_000 });
    await page.screenshot({ path: shot("e2e-install-02-progress") });
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 600_000 });
    assert.ok(existsSync(join(VENV, "bin", "python")), `the environment is in the extension's global storage: ${VENV}`);
    assert.equal(trapped, 0, "pip tried the network: the install must come from the wheelhouse alone");
    assert.equal(await view.locator(".error-banner").count(), 0);

    await view.locator("#prompt").click();
    await page.keyboard.type("read the notes and ask the echo server");
    await page.keyboard.press("Enter");
    const read = view.locator("#card-call_read");
    await read.locator(".status-badge", { hasText: "completed" }).waitFor({ timeout: 120_000 });
    // The MCP server of .vscode/mcp.json reached the bridge: its tool's call asks first, in its card.
    const echo = view.locator("#card-call_echo");
    await echo.locator(".perm-btn.perm-allow_once").waitFor({ timeout: 120_000 });
    assert.match((await echo.locator(".card-title").textContent()) ?? "", /fixture/);
    await echo.locator(".perm-btn.perm-allow_once").click();
    await echo.locator(".status-badge", { hasText: "completed" }).waitFor({ timeout: 60_000 });
    assert.match((await echo.textContent()) ?? "", /Echo: hello from VS Code/);
    await view.locator(".msg-agent", { hasText: "All done." }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: shot("e2e-install-03-cards") });
    await page.locator(".part.sidebar").first().screenshot({ path: shot("readme-mcp-card") });
  });
});
