/**
 * Issues 22 and 23 in a real VS Code (code-server) with the .vsix installed, against the REAL Python bridge
 * on a scripted model (test/fixtures/checkpoints.json), driven from the Agent view as a user would:
 * 1. the workspace's AGENTS.md shows in the header ("Instructions: AGENTS.md", a link);
 * 2. turn 1 creates new.txt and edits notes.txt, turn 2 edits it again (approved in the cards);
 * 3. "Revert this file" on turn 2's diff puts notes.txt back as it was before that call;
 * 4. the user changes notes.txt; "Restore to before this turn" on the first message asks "Overwrite my
 *    changes?" in a modal; "Overwrite" restores both files (new.txt removed, notes.txt as at the start)
 *    and the view lists what it did;
 * 5. a background command's card stays live after its turn with Stop; Stop ends it;
 * 6. a subagent's (`task`) card folds its two calls ("▸ 2 calls"), opened with a click.
 * Screenshots: artifacts/shots/e2e-checkpoints-*.png (readme-restore.png, readme-task-fold.png).
 */
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, FrameLocator, Page } from "playwright-core";
import { ARTIFACTS, EXT_DIR, launch, shot } from "./browser";
import { CodeServer } from "./codeServer";
import { agentView, openWorkbench, runCommand } from "./workbench";

const REPO = resolve(EXT_DIR, "..");
const WS = join(ARTIFACTS, "e2e", "checkpoints-ws");
const SCRIPT = join(EXT_DIR, "test", "fixtures", "checkpoints.json");
const NOTES = "alpha\nbeta\ngamma\n";
const server = new CodeServer({ data: join(ARTIFACTS, "e2e", "cs-checkpoints") });
let browser: Browser;
let page: Page;

const file = (name: string) => join(WS, name);
const read = (name: string) => readFileSync(file(name), "utf8");

before(async () => {
  rmSync(WS, { recursive: true, force: true });
  mkdirSync(WS, { recursive: true });
  writeFileSync(file("notes.txt"), NOTES);
  writeFileSync(file("AGENTS.md"), "# Notes\nKeep notes.txt short.\n");
  const settings = {
    "acp.pythonCommand": join(REPO, ".venv", "bin", "python"),
    "acp.bridgeArgs": ["--model", `scripted:${SCRIPT}`],
    "acp.followAlong": false,
    "acp.permissionNotifications": false,
  };
  server.prepare(settings, join(EXT_DIR, "dist", "acp-bridge-vscode.vsix"));
  await server.start(WS);
  browser = await launch();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await openWorkbench(page, server.url, WS);
});

after(async () => {
  if (page) await page.screenshot({ path: shot("e2e-checkpoints-99-final") }).catch(() => undefined);
  await browser?.close();
  await server.stop();
});

async function send(view: FrameLocator, text: string): Promise<void> {
  await view.locator("#prompt").click();
  await page.keyboard.type(text);
  await page.keyboard.press("Enter");
}

/** Allows each of `ids`' calls in its card as its question appears, then waits for the turn's end. */
async function approveAndFinish(view: FrameLocator, ids: string[], last: string): Promise<void> {
  for (const id of ids) {
    const allow = view.locator(`#card-${id} .perm-btn.perm-allow_once`);
    await allow.waitFor({ timeout: 60_000 });
    await allow.click();
  }
  await view.locator(".msg-agent", { hasText: last }).last().waitFor({ timeout: 60_000 });
  await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 60_000 });
}

describe("checkpoints, background commands, subagents and instructions in the Agent view (code-server, real bridge)", () => {
  it("reverts a file and restores a turn from the view, stops a background command, folds a task's calls", async () => {
    await runCommand(page, "ACP: Focus Agent View");
    const view = agentView(page);
    await view.locator(".conn-status", { hasText: "ready" }).waitFor({ timeout: 60_000 });

    await send(view, "first");
    // 1. The instructions the bridge loaded for the first turn: a line in the header, the file a link.
    const instructions = view.locator("#instructions .instructions-file");
    await instructions.first().waitFor({ timeout: 60_000 });
    assert.deepEqual(await instructions.allTextContents(), ["AGENTS.md"]);
    assert.equal(await instructions.first().getAttribute("data-path"), file("AGENTS.md"));
    // 2. Two turns of edits, approved in their cards.
    await approveAndFinish(view, ["call_write", "call_alpha"], "DONE");
    assert.equal(read("new.txt"), "fresh\n");
    await send(view, "second");
    await approveAndFinish(view, ["call_beta"], "DONE");
    assert.equal(read("notes.txt"), "ALPHA\nBETA\ngamma\n");

    // 3. "Revert this file" on the second turn's diff.
    const beta = view.locator("#card-call_beta");
    await beta.locator(".revert-file").click();
    await beta.locator(".reverted-note").waitFor({ timeout: 30_000 });
    assert.equal(read("notes.txt"), "ALPHA\nbeta\ngamma\n");
    assert.equal(await beta.locator(".revert-file").count(), 0);
    await view.locator(".restore.status-restored", { hasText: "File reverted" }).waitFor();

    // 4. The user's own change, then "Restore to before this turn" on the first message: asked, then done.
    writeFileSync(file("notes.txt"), "mine\n");
    const first = view.locator('.msg-user[data-turn="1"]');
    await first.locator(".restore-turn").click();
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ timeout: 30_000 });
    assert.match((await dialog.textContent()) ?? "", /Overwrite my changes\?/);
    assert.match((await dialog.textContent()) ?? "", /notes\.txt/);
    await page.screenshot({ path: shot("e2e-checkpoints-01-overwrite") });
    await dialog.getByRole("button", { name: "Overwrite" }).click();
    const restored = view.locator(".restore.status-restored", { hasText: "Restored to before turn 1" });
    await restored.waitFor({ timeout: 30_000 });
    assert.equal(read("notes.txt"), NOTES);
    assert.ok(!existsSync(file("new.txt")), "the file the turn created is removed");
    const lines = (await restored.locator("li").allTextContents()).map((t) => t.trim()).sort();
    assert.deepEqual(lines, ["new.txt removed (the turn created it)", "notes.txt restored"]);
    await restored.scrollIntoViewIfNeeded();
    await page.screenshot({ path: shot("e2e-checkpoints-02-restored") });
    await page.locator(".part.sidebar").first().screenshot({ path: shot("readme-restore") });

    // 5. A background command: live after its turn, with Stop.
    await send(view, "third");
    await approveAndFinish(view, ["call_server"], "It runs.");
    const server = view.locator("#card-call_server");
    await server.locator(".bg-stop", { hasText: "Stop" }).waitFor({ timeout: 30_000 });
    assert.equal(((await server.locator(".status-badge").textContent()) ?? "").trim(), "running");
    await server.locator(".term-out", { hasText: "serving" }).waitFor({ timeout: 30_000 });
    await server.locator(".bg-stop").click();
    await server.locator(".bg-row").waitFor({ state: "detached", timeout: 30_000 });
    assert.notEqual(((await server.locator(".status-badge").textContent()) ?? "").trim(), "running");

    // 6. A subagent's calls, folded under its card.
    await send(view, "fourth");
    await view.locator(".msg-agent", { hasText: "Done." }).last().waitFor({ timeout: 60_000 });
    const task = view.locator("#card-call_task");
    const toggle = task.locator(".nested-toggle");
    assert.equal(((await toggle.textContent()) ?? "").trim(), "▸ 2 calls");
    assert.equal(await toggle.getAttribute("aria-expanded"), "false");
    assert.equal(await task.locator(".nested-list").isVisible(), false);
    await toggle.click();
    await task.locator(".nested-list > article.card").first().waitFor({ state: "visible" });
    assert.equal(await task.locator(".nested-list > article.card").count(), 2);
    assert.equal(((await toggle.textContent()) ?? "").trim(), "▾ 2 calls");
    await task.scrollIntoViewIfNeeded();
    await page.locator(".part.sidebar").first().screenshot({ path: shot("readme-task-fold") });
  });
});
