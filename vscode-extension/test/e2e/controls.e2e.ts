/**
 * The Agent view's session controls in the built webview (headless Chromium, real CSP), driven by the
 * host messages the extension sends: config option pickers placed by category (choosing one asks the
 * host to set it), a boolean option as a switch (a click asks for the other value), the context gauge with the cost (and "incomplete"), a compaction's timeline entry
 * (streamed chunks, then the summary), the login banner, a question form (form elicitation), and the
 * composer's attachments and @-mentions, and the line saying the model keeps the prompt waiting (with
 * Cancel).
 * Screenshots: artifacts/shots/webview-controls.png, webview-question.png, webview-attachments.png.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { launch, shot } from "./browser";
import { openWebview, postEvents, type WebviewPage } from "./webviewPage";

let browser: Browser;
let view: WebviewPage;

before(async () => {
  browser = await launch();
  view = await openWebview(browser, "controls");
});

after(async () => {
  await view?.close();
  await browser?.close();
});

const update = (u: Record<string, unknown>) => ({ type: "update", update: u });
const sent = (page: Page, type: string) => page.evaluate((t) => (window as unknown as { __sent: Array<Record<string, unknown>> }).__sent.filter((m) => m.type === t), type);
const option = (id: string, name: string, category: string, current: string, values: string[]) => ({ id, name, category, type: "select", currentValue: current, options: values.map((v) => ({ value: v, name: v.toUpperCase() })) });

describe("session controls in the webview", () => {
  it("shows a picker per config option by category, the gauge and cost, a compaction entry and the login banner", async () => {
    const { page } = view;
    await postEvents(page, [
      { type: "modes", modes: { currentModeId: "default", availableModes: [{ id: "default", name: "Default" }] } },
      update({
        sessionUpdate: "config_option_update",
        configOptions: [
          option("effort", "Effort", "thought_level", "low", ["low", "high"]),
          { id: "auto_compact", name: "Auto-compact", description: "Compact by itself", type: "boolean", currentValue: false },
          option("model", "Model", "model", "m1", ["m1", "m2"]),
          option("mode", "Mode", "mode", "default", ["default", "plan"]),
        ],
      }),
      update({ sessionUpdate: "usage_update", used: 12_345, size: 128_000, cost: { amount: 0.0123, currency: "USD" }, _meta: { acpBridge: { unpricedResponses: 1 } } }),
      { type: "userPrompt", text: "/compact" },
      update({ sessionUpdate: "compaction_update", compactionId: "cmp_1", status: "in_progress", _meta: { acpBridge: { trigger: "command" } } }),
      update({ sessionUpdate: "compaction_summary_chunk", compactionId: "cmp_1", content: { type: "text", text: "Half a sum" } }),
    ]);
    const header = page.locator("#header");
    await header.locator("#config-effort").waitFor({ timeout: 10_000 });
    const categories = await header.locator(".pickers .picker").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.category ?? "legacy"));
    assert.deepEqual(categories, ["mode", "model", "thought_level"], "by category; the legacy mode picker gives way to the mode option");
    assert.equal(await header.locator("#mode-picker").count(), 0);
    await header.locator("#config-model").selectOption("m2");
    assert.deepEqual((await sent(page, "setConfigOption")).at(-1), { type: "setConfigOption", configId: "model", value: "m2" });
    const toggle = header.locator('.pickers #config-auto_compact[role="switch"]');
    assert.equal(await toggle.getAttribute("aria-checked"), "false");
    assert.match((await toggle.textContent()) ?? "", /Auto-compact/);
    await toggle.click();
    assert.deepEqual((await sent(page, "setConfigOption")).at(-1), { type: "setConfigOption", configId: "auto_compact", value: true });

    assert.match((await header.locator(".usage").textContent()) ?? "", /12\.3k of 128k tokens · 10%.*\$0\.0123.*incomplete/);
    assert.equal(await header.locator('.gauge-bar[role="meter"]').getAttribute("aria-valuenow"), "10");

    const entry = page.locator("details.compaction");
    assert.match((await entry.locator("summary").textContent()) ?? "", /Compacting the conversation \(\/compact\)…/);
    assert.match((await entry.textContent()) ?? "", /Half a sum/);
    await postEvents(page, [
      update({ sessionUpdate: "compaction_summary_chunk", compactionId: "cmp_1", content: { type: "text", text: "mary" } }),
      update({ sessionUpdate: "compaction_update", compactionId: "cmp_1", status: "completed", summary: [{ type: "text", text: "The final summary." }], _meta: { acpBridge: { trigger: "command", summarizedMessages: 6, keptMessages: 2 } } }),
      { type: "auth", auth: { message: "No API key for the model API: log in.", methods: [{ id: "login", name: "Log in with an API key" }] } },
    ]);
    await entry.locator("summary", { hasText: "6 earlier messages summarized, 2 kept" }).waitFor({ timeout: 5000 });
    assert.equal(await page.locator("details.compaction").count(), 1, "one entry per compaction");
    assert.doesNotMatch((await entry.textContent()) ?? "", /Half a sum/, "the summary replaced the chunks");
    assert.match((await entry.textContent()) ?? "", /The final summary\./);

    const login = page.locator(".auth-banner button.login");
    await login.waitFor({ timeout: 5000 });
    assert.equal((await login.textContent())?.trim(), "Log in");
    await page.screenshot({ path: shot("webview-controls"), fullPage: true });
    await login.click();
    assert.deepEqual((await sent(page, "login")).at(-1), { type: "login", methodId: "login" });
    assert.deepEqual(view.cspErrors, []);
  });

  it("asks the agent's question as a form: a choice and free text, checked, answered, then shown in words", async () => {
    const { page } = view;
    const schema = {
      type: "object",
      properties: {
        answer: { type: "string", title: "Answer", oneOf: [{ const: "Blue", title: "Blue" }, { const: "Green", title: "Green" }] },
        count: { type: "integer", title: "How many", minimum: 1 },
        other: { type: "string", title: "Or your own answer" },
      },
      required: ["answer", "count"],
    };
    await postEvents(page, [{ type: "questionAsked", requestId: "question-1", message: "Which colour should the button be?", schema, toolCallId: "call_ask" }]);
    const form = page.locator('[id="question-question-1"]');
    await form.locator(".question-submit").waitFor({ timeout: 10_000 });
    assert.match((await form.textContent()) ?? "", /Which colour should the button be\?/);
    await form.locator(".question-submit").click();
    assert.match((await form.locator(".question-error").textContent()) ?? "", /Answer: an answer is needed/);
    await form.getByLabel("Green").check();
    await form.getByLabel("How many *").fill("3");
    await form.getByLabel("Or your own answer").fill("teal, please");
    await page.screenshot({ path: shot("webview-question"), fullPage: true });
    await form.locator(".question-submit").click();
    assert.deepEqual((await sent(page, "question")).at(-1), { type: "question", requestId: "question-1", action: "accept", content: { answer: "Green", count: 3, other: "teal, please" } });
    await postEvents(page, [{ type: "questionAnswered", requestId: "question-1", action: "accept", content: { answer: "Green", count: 3, other: "teal, please" } }]);
    await form.locator(".question-answer").waitFor({ timeout: 5000 });
    assert.equal((await form.locator(".question-answer").textContent())?.trim(), "Answered: Answer: Green; How many: 3; Or your own answer: teal, please");
    assert.equal(await form.locator("form").count(), 0);

    await postEvents(page, [{ type: "questionAsked", requestId: "question-2", message: "Proceed?", schema: { type: "object", properties: { ok: { type: "boolean", title: "Yes" } } } }]);
    await page.locator('[id="question-question-2"] .question-decline').click();
    assert.deepEqual((await sent(page, "question")).at(-1), { type: "question", requestId: "question-2", action: "decline" });
    assert.deepEqual(view.cspErrors, []);
  });

  it("attaches a selection and an image as chips, @-mentions a workspace file, and sends them with the prompt", async () => {
    const { page } = view;
    const selection = { label: "app.py:3-7", block: { type: "resource", resource: { uri: "file:///ws/app.py#L3-7", mimeType: "text/x-python", text: "x = 1" } } };
    const image = { label: "dot.png", block: { type: "image", mimeType: "image/png", data: "iVBORw==" } };
    await postEvents(page, [{ type: "turnEnded", stopReason: "end_turn" }]);
    await page.locator("#attach").click();
    assert.deepEqual((await sent(page, "attach")).length, 1, "Attach asks the host what to attach");
    await page.evaluate((items) => window.postMessage({ type: "attached", items }, "*"), [selection, image]);
    const chips = page.locator(".attachments .chip");
    await chips.nth(1).waitFor({ timeout: 5000 });
    assert.deepEqual(await chips.evaluateAll((els) => els.map((e) => e.firstChild?.textContent)), ["app.py:3-7", "dot.png"]);
    await page.getByRole("button", { name: "Remove dot.png" }).click();
    assert.equal(await chips.count(), 1);

    const prompt = page.locator("#prompt");
    await prompt.click();
    await prompt.pressSequentially("explain @no");
    await page.waitForFunction(() => (window as unknown as { __sent: Array<{ type: string; query?: string }> }).__sent.some((m) => m.type === "findFiles" && m.query === "no"));
    await page.evaluate(() => window.postMessage({ type: "fileMatches", query: "no", files: [{ label: "docs/notes.md", path: "/ws/docs/notes.md" }] }, "*"));
    await page.locator(".file-suggestion", { hasText: "@docs/notes.md" }).click();
    assert.equal(await prompt.inputValue(), "explain @docs/notes.md ");
    await page.screenshot({ path: shot("webview-attachments"), fullPage: true });
    await prompt.pressSequentially("please");
    await prompt.press("Enter");
    assert.deepEqual((await sent(page, "prompt")).at(-1), {
      type: "prompt",
      text: "explain @docs/notes.md please",
      attachments: [selection],
      mentions: [{ label: "docs/notes.md", path: "/ws/docs/notes.md" }],
    });
    assert.equal(await chips.count(), 0, "sent: the chips go");
    assert.deepEqual(view.cspErrors, []);
  });

  it("says the model keeps the prompt waiting in one line with Cancel, gone once the model talks", async () => {
    const { page } = view;
    const wait = (title: string, reason: string, seconds: number) =>
      update({ sessionUpdate: "notice", severity: "info", title, _meta: { acpBridge: { wait: { reason, seconds, attempt: 0, of: 0 } } } });
    await postEvents(page, [{ type: "userPrompt", text: "think hard" }, wait("Waiting for the model for 20 s", "silent", 20)]);
    const line = page.locator("#waiting");
    await line.locator(".waiting-text", { hasText: "Waiting for the model for 20 s" }).waitFor({ timeout: 10_000 });
    await postEvents(page, [wait("Waiting for the model for 40 s", "silent", 40)]);
    await line.locator(".waiting-text", { hasText: "Waiting for the model for 40 s" }).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator(".msg-notice", { hasText: "Waiting for the model" }).count(), 0, "a state, not a timeline entry");
    await page.screenshot({ path: shot("webview-waiting"), fullPage: true });
    const before = (await sent(page, "cancel")).length;
    await line.locator("button.waiting-cancel").click();
    assert.equal((await sent(page, "cancel")).length, before + 1);
    await postEvents(page, [update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done thinking." } })]);
    await line.waitFor({ state: "hidden", timeout: 10_000 });
    await postEvents(page, [{ type: "turnEnded", stopReason: "end_turn" }]);
    assert.deepEqual(view.cspErrors, []);
  });
});
