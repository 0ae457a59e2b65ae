/**
 * End to end in a real VS Code (code-server 4.139.1) with the built .vsix installed, driven by
 * Playwright in headless Chromium, against the REAL Python bridge on a scripted model
 * (test/fixtures/scenario.json): read notes.txt, edit it (approved in the card), run a command
 * (approved in the notification). Asserts card states and contents in the webview, the file on disk,
 * follow-along (editor on notes.txt at the edited line) and the diff editor; reports update → card
 * latency; then reopens that session from History (session/list + session/load on the session logs the
 * extension keeps for the built-in bridge) and checks the same cards come back. Screenshots:
 * artifacts/shots/e2e-*.png.
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { splitCommandLine } from "../../src/acp/agentSpec";
import { ARTIFACTS, EXT_DIR, launch, shot } from "./browser";
import { CodeServer } from "./codeServer";
import { activeTabLabel, agentView, cursorPosition, openWorkbench, runCommand } from "./workbench";

const REPO = resolve(EXT_DIR, "..");
const WS = join(ARTIFACTS, "e2e", "ws");
const SCRIPT = join(EXT_DIR, "test", "fixtures", "scenario.json");
const NOTES = "alpha\nbeta\ngamma\n";

/** Where the extension keeps the built-in bridge's session logs (its globalStorage), so History works. */
const HISTORY_DIR = join(ARTIFACTS, "e2e", "cs", "user", "User", "globalStorage", "acp-bridge.acp-bridge-vscode", "sessions");

/**
 * Settings that point the extension at the bridge: ACP_BRIDGE_CMD as a custom agent (which runs exactly
 * as configured, so it is given its own --state-dir), else the built-in default (no history setting:
 * the extension adds --state-dir itself).
 */
function bridgeSettings(): Record<string, unknown> {
  const model = ["--model", `scripted:${SCRIPT}`];
  const trace = { "acp.trace": true };
  const cmd = process.env.ACP_BRIDGE_CMD;
  if (cmd) {
    const [command, ...args] = splitCommandLine(cmd);
    const state = ["--state-dir", join(ARTIFACTS, "e2e", "state")];
    return { ...trace, "acp.agents": [{ name: "acp-bridge-e2e", command, args: [...args, "serve", ...model, ...state] }], "acp.agent": "acp-bridge-e2e" };
  }
  return { ...trace, "acp.pythonCommand": join(REPO, ".venv", "bin", "python"), "acp.bridgeArgs": model };
}

/** What each card in the view shows (the answered approval aside: a replay asks nothing). */
async function cardFingerprint(view: FrameLocator): Promise<string[]> {
  return view.locator("article.card").evaluateAll((cards) =>
    cards.map((card) => {
      const texts = (sel: string) => Array.from(card.querySelectorAll(sel), (e) => (e.textContent ?? "").trim()).join("|");
      return [card.id, card.className, texts(".card-title"), texts(".status-badge"), texts(".card-locations"), texts(".exit-badge"), texts(".diff-line")].join(" · ");
    }),
  );
}

const server = new CodeServer();
let browser: Browser;
let page: Page;

before(async () => {
  rmSync(WS, { recursive: true, force: true });
  mkdirSync(WS, { recursive: true });
  writeFileSync(join(WS, "notes.txt"), NOTES);
  server.prepare(bridgeSettings(), join(EXT_DIR, "dist", "acp-bridge-vscode.vsix"));
  await server.start(WS);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await openWorkbench(page, server.url, WS);
});

after(async () => {
  if (page) await page.screenshot({ path: shot("e2e-99-final") }).catch(() => undefined);
  await browser?.close();
  await server.stop();
});

describe("Agent view in code-server against the real bridge", () => {
  it("reads, edits (approved in the card) and runs a command (approved in the notification)", async () => {
    await page.screenshot({ path: shot("e2e-01-workbench") });
    await runCommand(page, "ACP: Focus Agent View");
    const view = agentView(page);
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 60_000 });
    await page.screenshot({ path: shot("e2e-02-view-ready") });

    await view.locator("#prompt").fill("Capitalise beta in notes.txt and check it");
    await view.locator("#prompt").press("Enter");

    // The edit asks first: the question is inside the card, with the diff visible, and in a notification.
    const edit = view.locator("#card-call_edit");
    await edit.locator(".permission .perm-btn").first().waitFor({ timeout: 30_000 });
    assert.ok((await edit.locator(".diff-line.add").allTextContents()).includes("+BETA"), "the diff is visible while asking");
    const editToast = page.locator(".notifications-toasts .notification-list-item", { hasText: "Agent wants to run" }).first();
    await editToast.waitFor({ timeout: 10_000 });
    await page.screenshot({ path: shot("e2e-03-approval") });
    const kinds = await edit.locator(".perm-btn").evaluateAll((els) => els.map((e) => e.className));
    assert.equal(kinds.length, 4, `four options: ${kinds.join(", ")}`);
    await edit.locator(".perm-btn.perm-allow_once").click();
    await edit.locator(".status-badge", { hasText: "completed" }).waitFor({ timeout: 30_000 });

    // The command asks next: answer from the notification this time.
    const bash = view.locator("#card-call_bash");
    await bash.locator(".perm-btn.perm-allow_once").waitFor({ timeout: 30_000 });
    const allowName = ((await bash.locator(".perm-btn.perm-allow_once").textContent()) ?? "").trim();
    const bashToast = page.locator(".notifications-toasts .notification-list-item", { hasText: "printf" }).first();
    await bashToast.waitFor({ timeout: 10_000 });
    await bashToast.getByRole("button", { name: allowName, exact: true }).click();
    await bash.locator(".status-badge", { hasText: "completed" }).waitFor({ timeout: 30_000 });
    await view.locator(".msg-agent", { hasText: "All done" }).waitFor({ timeout: 30_000 });
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: shot("e2e-04-cards") });

    // Cards: states and contents.
    const read = view.locator("#card-call_read");
    assert.match((await read.getAttribute("class")) ?? "", /status-completed/);
    assert.match((await read.locator(".card-body").textContent()) ?? "", /alpha/);
    assert.match((await read.locator(".card-title").textContent()) ?? "", /notes\.txt/);
    assert.match((await edit.getAttribute("class")) ?? "", /status-completed kind-edit/);
    assert.deepEqual(await edit.locator(".diff-line.del").allTextContents(), ["-beta"]);
    assert.match((await edit.locator(".permission.answered").textContent()) ?? "", /Answered/);
    assert.match((await bash.getAttribute("class")) ?? "", /status-completed kind-execute/);
    assert.equal(((await bash.locator(".exit-badge").textContent()) ?? "").trim(), "exit 0");
    assert.equal(((await bash.locator(".term-out .ansi-fg-green").first().textContent()) ?? "").trim(), "checked");
    assert.match((await bash.locator(".term-out").textContent()) ?? "", /2:BETA/);
    assert.equal(await view.locator("#plan .plan-entry").count(), 3);
    assert.equal(await view.locator("details.thought").count(), 1);

    // The file on disk.
    assert.equal(readFileSync(join(WS, "notes.txt"), "utf8"), "alpha\nBETA\ngamma\n");

    // Follow-along: notes.txt open in the editor at the edited line.
    assert.match(await activeTabLabel(page), /notes\.txt/);
    assert.match(await cursorPosition(page), /^Ln 2, Col 1/);
    assert.equal(((await page.locator(".editor-group-container.active .view-lines").first().textContent()) ?? "").includes("BETA"), true);

    // Open diff: VS Code's diff editor, old vs new.
    await edit.locator("button.open-diff").click();
    await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 15_000 });
    await page.screenshot({ path: shot("e2e-05-diff") });

    // Update → card latency, measured inside the webview against host arrival stamps.
    const perf = JSON.parse((await view.locator("#acp-perf").textContent()) ?? "{}") as { n: number; p50: number; p95: number; max: number; transportP50: number; recent: number[] };
    console.log(`latency: session/update → card shown: p50 ${perf.p50} ms, p95 ${perf.p95} ms, max ${perf.max} ms over ${perf.n} updates (host → webview transport p50 ${perf.transportP50} ms) [${perf.recent.join(" ")}]`);
    writeFileSync(join(ARTIFACTS, "latency.json"), JSON.stringify(perf));
    assert.ok(perf.n > 10 && perf.p95 < 1000, JSON.stringify(perf));
  });

  it("keeps the session when the view is hidden and shown again (snapshot replay)", async () => {
    await runCommand(page, "View: Show Explorer");
    await page.locator(".explorer-folders-view, .explorer-viewlet").first().waitFor({ timeout: 10_000 });
    await runCommand(page, "ACP: Focus Agent View");
    const view = agentView(page);
    await view.locator("#card-call_edit.status-completed").waitFor({ timeout: 15_000 });
    assert.equal(await view.locator("article.card").count(), 4);
    assert.equal(((await view.locator("#card-call_bash .exit-badge").textContent()) ?? "").trim(), "exit 0");
    // The agent's slash commands are offered while typing "/".
    await view.locator("#prompt").pressSequentially("/mo");
    await view.locator(".suggestion", { hasText: "/mode" }).waitFor({ timeout: 5000 });
    await view.locator("#prompt").fill("");
  });

  it("cancels a running command from the view", async () => {
    const view = agentView(page);
    await view.locator("#prompt").fill("Run something slow");
    await view.locator("#send").click();
    const slow = view.locator("#card-call_slow");
    await slow.locator(".perm-btn.perm-allow_once").click({ timeout: 30_000 });
    await slow.locator(".term-out", { hasText: "started" }).waitFor({ timeout: 30_000 });
    await view.locator("#cancel").click();
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: shot("e2e-06-cancelled") });
    // The bridge's final update (failed, with _meta.terminal_exit) wins over the local `cancelled`.
    assert.match((await slow.getAttribute("class")) ?? "", /\bstatus-failed\b/);
    assert.doesNotMatch((await slow.locator(".term-out").textContent()) ?? "", /finished/);
    assert.match(((await slow.locator(".exit-badge").textContent()) ?? "").trim(), /^(killed: SIG[A-Z0-9]+|stopped)$/);
    assert.equal(await view.locator("#cancel").isHidden(), true);
  });

  it("reopens the first session from History: the same cards come back", async () => {
    const view = agentView(page);
    const live = await cardFingerprint(view);
    assert.equal(live.length, 5, live.join("\n"));
    const prompts = await view.locator(".msg-user").allTextContents();

    await view.locator("#new-session").click();
    await view.locator("article.card").first().waitFor({ state: "detached", timeout: 15_000 });
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 10_000 });
    if (!process.env.ACP_BRIDGE_CMD) {
      // The built-in bridge got --state-dir in the extension's globalStorage without any setting.
      assert.ok(existsSync(HISTORY_DIR) && readdirSync(HISTORY_DIR).length >= 1, `session logs in ${HISTORY_DIR}`);
    }

    await view.locator("#history").click();
    const item = page.locator(".quick-input-widget .quick-input-list .monaco-list-row", { hasText: "Capitalise beta in notes.txt" }).first();
    await item.waitFor({ timeout: 15_000 });
    assert.ok(((await item.textContent()) ?? "").includes(WS), "the picker shows the session's folder");
    await page.screenshot({ path: shot("e2e-07-history-picker") });
    await item.click();

    await view.locator("#card-call_slow").waitFor({ timeout: 30_000 });
    // The replay streams in: wait until every card has come back as it was.
    let loaded: string[] = [];
    const end = Date.now() + 15_000;
    while (Date.now() < end && JSON.stringify((loaded = await cardFingerprint(view))) !== JSON.stringify(live)) await page.waitForTimeout(200);
    await page.screenshot({ path: shot("e2e-08-history-loaded") });
    assert.deepEqual(loaded, live);
    assert.deepEqual(await view.locator(".msg-user").allTextContents(), prompts);
    await view.locator(".msg-agent", { hasText: "All done" }).waitFor({ timeout: 5000 });
    const bash = view.locator("#card-call_bash");
    assert.equal(((await bash.locator(".term-out .ansi-fg-green").first().textContent()) ?? "").trim(), "checked");
    assert.deepEqual(await view.locator("#card-call_edit .diff-line.add").allTextContents(), ["+BETA"]);
    assert.equal(await view.locator("#plan .plan-entry").count(), 3);
  });
});
