/**
 * Card rendering in the built webview (headless Chromium, real CSP): a bash card cancelled while its
 * command runs, as the bridge reports it (`status: failed` with `_meta.terminal_exit`), whether the exit
 * carries a signal, only a code, or neither. Screenshot: artifacts/shots/webview-exit-badges.png.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser } from "playwright-core";
import { launch, shot } from "./browser";
import { openWebview, postEvents, type WebviewPage } from "./webviewPage";

let browser: Browser;
let view: WebviewPage;

before(async () => {
  browser = await launch();
  view = await openWebview(browser, "cards");
});

after(async () => {
  await view?.close();
  await browser?.close();
});

const update = (u: Record<string, unknown>) => ({ type: "update", update: u });

/** A bash card that starts, prints, is cancelled locally, then gets the agent's final update. */
function cancelledBash(id: string, exit: Record<string, unknown>, status = "failed"): unknown[] {
  return [
    update({ sessionUpdate: "tool_call", toolCallId: id, title: `sleep 30 # ${id}`, kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: id }], _meta: { terminal_info: { terminal_id: id } } }),
    update({ sessionUpdate: "tool_call_update", toolCallId: id, _meta: { terminal_output: { terminal_id: id, data: "started\n" } } }),
    { type: "turnCancelled" },
    update({ sessionUpdate: "tool_call_update", toolCallId: id, status, _meta: { terminal_exit: { terminal_id: id, ...exit } } }),
  ];
}

describe("terminal cards in the webview", () => {
  it("a cancelled command shows its signal in the exit badge and the card stays failed", async () => {
    const { page } = view;
    await postEvents(page, [
      { type: "userPrompt", text: "run things" },
      ...cancelledBash("by_signal", { exit_code: null, signal: "SIGTERM" }),
      ...cancelledBash("by_code_and_signal", { exit_code: 143, signal: "SIGKILL" }),
      ...cancelledBash("neither", { exit_code: null, signal: null }),
      ...cancelledBash("exit_code", { exit_code: 2, signal: null }),
      { type: "turnEnded", stopReason: "cancelled" },
    ]);
    const card = (id: string) => page.locator(`#card-${id}`);
    await card("exit_code").locator(".exit-badge", { hasText: "exit 2" }).waitFor({ timeout: 10_000 });
    await page.screenshot({ path: shot("webview-exit-badges"), fullPage: true });
    const expected: Array<[string, string, string]> = [
      ["by_signal", "killed: SIGTERM", "bad"],
      ["by_code_and_signal", "killed: SIGKILL", "bad"],
      ["neither", "stopped", "stopped"],
      ["exit_code", "exit 2", "bad"],
    ];
    for (const [id, text, tone] of expected) {
      assert.match((await card(id).getAttribute("class")) ?? "", /\bstatus-failed\b/, id);
      assert.equal(((await card(id).locator(".status-badge").textContent()) ?? "").trim(), "failed", id);
      const badge = card(id).locator(".exit-badge");
      assert.equal(((await badge.textContent()) ?? "").trim(), text, id);
      assert.match((await badge.getAttribute("class")) ?? "", new RegExp(`\\b${tone}\\b`), id);
      assert.match((await card(id).locator(".term-out").textContent()) ?? "", /started/, id);
    }
    assert.deepEqual(view.cspErrors, []);
  });
});
