/**
 * Card rendering in the built webview (headless Chromium, real CSP): a bash card cancelled while its
 * command runs, as the bridge reports it (`status: failed` with `_meta.terminal_exit`), whether the exit
 * carries a signal, only a code, or neither. Screenshot: artifacts/shots/webview-exit-badges.png. A long
 * output: its newest lines, the rest on demand (webview-long-terminal.png).
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

describe("a long terminal output in the webview", () => {
  it("draws the newest lines, in the colour set before them, following the end; the earlier ones on demand", async () => {
    // A page of its own: the other tests here count the cards of theirs.
    const own = await openWebview(browser, "long-output");
    const { page } = own;
    const output = (data: string) => update({ sessionUpdate: "tool_call_update", toolCallId: "long", _meta: { terminal_output: { terminal_id: "long", data } } });
    const lines = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join("");
    await postEvents(page, [
      update({ sessionUpdate: "tool_call", toolCallId: "long", title: "seq 2000", kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: "long" }], _meta: { terminal_info: { terminal_id: "long" } } }),
      output(`\x1b[36m${lines(0, 700)}`),
      output(lines(700, 1400)),
      output(`${lines(1400, 2000)}progress 10%`),
      output("\rprogress 99%"),
    ]);
    const out = page.locator("#card-long .term-out");
    await out.getByText("progress 99%").waitFor({ timeout: 10_000 });
    const text = (await out.textContent()) ?? "";
    const shown = text.match(/line \d+/g) ?? [];
    assert.ok(shown.length >= 500 && shown.length < 600, `the newest lines only (${shown.length})`);
    assert.equal(shown.at(-1), "line 1999");
    assert.doesNotMatch(text, /progress 10%/, "the progress line shows as it stands");
    assert.match(text, /1,\d{3} earlier lines not shown/);
    // The colour set in the first piece of output still holds for the last line.
    assert.equal(((await out.locator(".ansi-fg-cyan").last().textContent()) ?? "").includes("progress 99%"), true);
    const atBottom = () => out.evaluate((el) => el.scrollTop + el.clientHeight >= el.scrollHeight - 4);
    assert.equal(await atBottom(), true, "follows the newest output");
    await out.getByRole("button", { name: "Show more" }).click();
    await out.getByText("line 0", { exact: false }).first().waitFor({ timeout: 10_000 });
    assert.equal(((await out.textContent()) ?? "").match(/line \d+/g)?.length, 2000, "every line, on demand");
    // Scrolled up by the user, it stays where it was while output goes on.
    await out.evaluate((el) => (el.scrollTop = 0));
    await page.waitForTimeout(100);
    await postEvents(page, [output("\nmore\n")]);
    await out.getByText("more", { exact: false }).first().waitFor({ timeout: 10_000 });
    await page.waitForTimeout(100);
    assert.equal(await out.evaluate((el) => el.scrollTop), 0);
    await page.locator("#card-long").screenshot({ path: shot("webview-long-terminal") });
    assert.deepEqual(own.cspErrors, []);
    await own.close();
  });
});

describe("Code Mode programs in the webview", () => {
  it("nests each sub-call's card under its program's card, with its own diff and approval", async () => {
    const { page } = view;
    const sub = (n: number, extra: Record<string, unknown>) => ({ toolCallId: `prog:code:${n}`, _meta: { acpBridge: { tool: "x" }, parentToolCallId: "prog" }, ...extra });
    const list = "2 tool calls:\n1. ✓ Read notes.txt\n2. … Edit notes.txt (waiting)";
    await postEvents(page, [
      { type: "userPrompt", text: "tidy up" },
      update({ sessionUpdate: "tool_call", toolCallId: "prog", title: "Read then edit", kind: "execute", status: "in_progress", content: [{ type: "content", content: { type: "text", text: "```typescript\nawait read({})\n```" } }] }),
      update({ sessionUpdate: "tool_call", ...sub(1, { title: "Read notes.txt", kind: "read", status: "in_progress" }) }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "prog:code:1", status: "completed" }),
      update({ sessionUpdate: "tool_call", ...sub(2, { title: "Edit notes.txt", kind: "edit", status: "pending", content: [{ type: "diff", path: "/ws/notes.txt", oldText: "beta\n", newText: "BETA\n" }] }) }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "prog", content: [{ type: "content", content: { type: "text", text: "```typescript\nawait read({})\n```" } }, { type: "content", content: { type: "text", text: list } }] }),
      {
        type: "permissionRequested",
        requestId: "perm-nested",
        toolCall: sub(2, { title: "Edit notes.txt", kind: "edit", content: [{ type: "content", content: { type: "text", text: "Asked by the program of `Read then edit` (call prog)." } }, { type: "diff", path: "/ws/notes.txt", oldText: "beta\n", newText: "BETA\n" }] }),
        options: [
          { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
          { optionId: "reject_once", name: "Reject", kind: "reject_once" },
        ],
      },
    ]);
    const program = page.locator('[id="card-prog"]');
    const nested = program.locator(":scope > .card-children > .nested-list > article.card");
    await nested.nth(1).locator(".perm-btn").first().waitFor({ timeout: 10_000 });
    assert.deepEqual(await nested.evaluateAll((els) => els.map((e) => e.id)), ["card-prog:code:1", "card-prog:code:2"]);
    assert.equal(await page.locator("#timeline > article.card").count(), 5, "the sub-calls are not top-level cards");
    assert.equal(((await program.locator(".nested-toggle").textContent()) ?? "").trim(), "▾ 2 calls · 1 running", "a program's calls start open");
    const edit = page.locator('[id="card-prog:code:2"]');
    const classes = (await edit.getAttribute("class")) ?? "";
    assert.match(classes, /\bnested\b/);
    assert.match(classes, /\bawaiting\b/);
    assert.equal(await edit.locator(".diff").count(), 1, "the nested edit shows its diff");
    assert.doesNotMatch((await program.locator(":scope > .card-body").textContent()) ?? "", /tool calls:/, "the text list gives way to the nested cards");
    assert.doesNotMatch((await edit.textContent()) ?? "", /Asked by the program/, "nested under the program already");
    await page.screenshot({ path: shot("webview-code-mode"), fullPage: true });

    // The program's card redrawn (its list updated) while the nested question has focus: focus stays.
    await edit.locator(".perm-btn").first().focus();
    await postEvents(page, [update({ sessionUpdate: "tool_call_update", toolCallId: "prog", title: "Read then edit (running)" })]);
    await program.locator(".card-title", { hasText: "(running)" }).waitFor({ timeout: 5000 });
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.optionId), "allow_once");

    await edit.locator(".perm-btn", { hasText: "Allow once" }).click();
    const sent = await page.evaluate(() => (window as unknown as { __sent: Array<Record<string, unknown>> }).__sent.filter((m) => m.type === "permission"));
    assert.deepEqual(sent.at(-1), { type: "permission", requestId: "perm-nested", optionId: "allow_once" });
    assert.deepEqual(view.cspErrors, []);
  });
});

describe("subagents, background commands and checkpoints in the webview", () => {
  it("folds a task's calls, opens them for a nested question; Stop, Restore and Revert send their requests; nothing to restore without checkpoints", async () => {
    const own = await openWebview(browser, "features");
    try {
      const { page } = own;
      const sent = () => page.evaluate(() => (window as unknown as { __sent: Array<Record<string, unknown>> }).__sent);
      const child = (id: string, extra: Record<string, unknown>) => update({ sessionUpdate: "tool_call", toolCallId: id, _meta: { parentToolCallId: "task" }, ...extra });
      await postEvents(page, [
        { type: "sessionStarted", sessionId: "s", cwd: "/ws", checkpoints: true },
        { type: "userPrompt", text: "look around" },
        { type: "turnEnded", stopReason: "end_turn", turn: 1 },
        { type: "userPrompt", text: "delegate" },
        update({ sessionUpdate: "tool_call", toolCallId: "task", title: "Look at notes.txt", kind: "think", status: "in_progress", name: "task", _meta: { acpBridge: { tool: "task" } } }),
        child("t:1", { title: "Read notes.txt", kind: "read", status: "completed" }),
        child("t:2", { title: "Find *.txt", kind: "search", status: "completed" }),
        update({ sessionUpdate: "tool_call", toolCallId: "dev", title: "npm run dev", kind: "execute", status: "in_progress", rawInput: { command: "npm run dev", run_in_background: true } }),
        update({ sessionUpdate: "tool_call", toolCallId: "edit", title: "Edit a.txt", kind: "edit", status: "completed", content: [{ type: "diff", path: "/ws/a.txt", oldText: "a\n", newText: "b\n" }] }),
        { type: "turnCancelled" },
        { type: "turnEnded", stopReason: "cancelled" },
      ]);
      const task = page.locator("#card-task");
      const toggle = task.locator(".nested-toggle");
      await toggle.waitFor({ timeout: 10_000 });
      assert.equal(((await toggle.textContent()) ?? "").trim(), "▸ 2 calls", "a task's calls start folded, counted");
      assert.equal(await task.locator(".nested-list").isVisible(), false);
      await toggle.click();
      await page.locator('[id="card-t:1"]').waitFor({ state: "visible" });
      assert.equal(await toggle.getAttribute("aria-expanded"), "true");
      await toggle.click();
      await page.locator('[id="card-t:1"]').waitFor({ state: "hidden" });
      // A call of the subagent that asks: the fold opens, whatever the user chose.
      await postEvents(page, [
        child("t:3", { title: "Edit notes.txt", kind: "edit", status: "pending" }),
        { type: "permissionRequested", requestId: "p3", toolCall: { toolCallId: "t:3" }, options: [{ optionId: "allow_once", name: "Allow once", kind: "allow_once" }] },
      ]);
      await page.locator('[id="card-t:3"] .perm-btn').first().waitFor({ state: "visible", timeout: 10_000 });
      assert.equal(((await toggle.textContent()) ?? "").trim(), "▾ 3 calls · 1 running");
      await page.screenshot({ path: shot("webview-task-fold"), fullPage: true });

      // The background command outlived the cancelled turn: live, with Stop.
      const dev = page.locator("#card-dev");
      assert.equal(((await dev.locator(".status-badge").textContent()) ?? "").trim(), "running");
      await dev.locator(".bg-stop", { hasText: "Stop" }).click();
      assert.deepEqual((await sent()).at(-1), { type: "stopBackground", toolCallId: "dev" });
      await postEvents(page, [{ type: "stopRequested", toolCallId: "dev" }]);
      await dev.locator(".bg-stop", { hasText: "Stopping…" }).waitFor({ timeout: 5000 });
      assert.equal(await dev.locator(".bg-stop").isDisabled(), true);

      // Checkpoints: the numbered message restores, the finished edit's diff reverts.
      assert.equal(await page.locator(".msg-user .restore-turn").count(), 1, "only the numbered turn");
      await page.locator('.msg-user[data-turn="1"] .restore-turn').click();
      assert.deepEqual((await sent()).at(-1), { type: "rewind", turn: 1 });
      await page.locator("#card-edit .revert-file").click();
      assert.deepEqual((await sent()).at(-1), { type: "revertFile", toolCallId: "edit", path: "/ws/a.txt" });
      await postEvents(page, [{ type: "restored", toolCallId: "edit", path: "/ws/a.txt", status: "restored", restored: [{ path: "/ws/a.txt", action: "restored" }], conflicts: [] }]);
      await page.locator("#card-edit .reverted-note").waitFor({ timeout: 5000 });
      const restore = page.locator(".restore").last();
      assert.equal(await restore.locator(".restore-title").textContent(), "File reverted");
      assert.deepEqual(await restore.locator("li").allTextContents(), ["a.txt restored"]);

      // An agent without checkpoints: no restore, no revert.
      await postEvents(page, [
        { type: "sessionStarted", sessionId: "s2", cwd: "/ws" },
        { type: "userPrompt", text: "again" },
        { type: "turnEnded", stopReason: "end_turn", turn: 1 },
        update({ sessionUpdate: "tool_call", toolCallId: "edit2", title: "Edit a.txt", kind: "edit", status: "completed", content: [{ type: "diff", path: "/ws/a.txt", oldText: "a\n", newText: "b\n" }] }),
      ]);
      await page.locator("#card-edit2 .diff").waitFor({ timeout: 5000 });
      assert.equal(await page.locator(".restore-turn, .revert-file").count(), 0);
      assert.deepEqual(own.cspErrors, []);
    } finally {
      await own.close();
    }
  });
});
