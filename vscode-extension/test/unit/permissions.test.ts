import { describe, expect, it } from "vitest";
import type { RequestPermissionRequest } from "../../shared/acp";
import { type ApprovalPrompt, PermissionBroker, questionText } from "../../src/review/permissions";
import { SessionStore } from "../../src/session/store";

const request: RequestPermissionRequest = {
  sessionId: "s1",
  toolCall: { toolCallId: "c1", title: "Edit notes.txt", kind: "edit" },
  options: [
    { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
    { optionId: "allow_always", name: "Always allow", kind: "allow_always" },
    { optionId: "reject_once", name: "Reject", kind: "reject_once" },
  ],
};

function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe("permission flow", () => {
  it("shows every option in the card; the notification's choices say what a lasting one covers", async () => {
    const store = new SessionStore();
    const asked: ApprovalPrompt[] = [];
    const broker = new PermissionBroker(store, (prompt) => {
      asked.push(prompt);
      return new Promise(() => {});
    });
    const options = [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" as const },
      { optionId: "allow_always", name: "Always allow `edit` on notes.txt (this session)", kind: "allow_always" as const, _meta: { acpBridge: { scope: "`edit` on notes.txt" } } },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" as const },
      { optionId: "rj", name: "Always reject `edit` on notes.txt (this session)", kind: "reject_always" as const },
    ];
    void broker.request({ ...request, options });
    expect(store.state.cards.c1!.permission!.options.map((o) => o.optionId)).toEqual(["allow_once", "allow_always", "reject_once", "rj"]);
    expect(asked.map((a) => ({ message: a.message, choices: a.choices }))).toEqual([
      {
        message: "Agent wants to edit notes.txt",
        choices: [
          { label: "Allow once", optionId: "allow_once" },
          { label: "Reject", optionId: "reject_once" },
          { label: "Always allow `edit` on notes.txt (this session)", optionId: "allow_always", lasting: true },
        ],
      },
    ]);
  });

  it("labels a bare \"Always allow\" choice with the scope it carries as data", async () => {
    const store = new SessionStore();
    const asked: ApprovalPrompt[] = [];
    const broker = new PermissionBroker(store, (prompt) => {
      asked.push(prompt);
      return new Promise(() => {});
    });
    const bare = { optionId: "aa", name: "Always Allow", kind: "allow_always" as const, _meta: { acpBridge: { scope: "`ls` commands" } } };
    void broker.request({ ...request, options: [request.options[0]!, bare] });
    expect(asked[0]!.choices.map((c) => c.label)).toEqual(["Allow once", "Always allow `ls` commands"]);
  });

  it("tells the notification when the question is settled anywhere, so it can close", async () => {
    const store = new SessionStore();
    let settled: Promise<string> | undefined;
    const broker = new PermissionBroker(store, (prompt) => {
      settled = prompt.settled;
      return new Promise(() => {});
    });
    void broker.request(request);
    broker.answer(store.state.cards.c1!.permission!.requestId, "allow_once");
    await expect(settled).resolves.toBe("allow_once");
  });

  it("sends a rejection's reason as _meta.feedback and keeps it on the card", async () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, undefined);
    const pending = broker.request(request);
    broker.answer(store.state.cards.c1!.permission!.requestId, "reject_once", "  keep the old name  ");
    await expect(pending).resolves.toEqual({ outcome: { outcome: "selected", optionId: "reject_once", _meta: { feedback: "keep the old name" } } });
    expect(store.state.cards.c1!.permission).toMatchObject({ outcome: "reject_once", feedback: "keep the old name" });
  });

  it("words the question after the tool's kind", () => {
    expect(questionText("edit", "Edit src/app.py")).toBe("Agent wants to edit src/app.py");
    expect(questionText("execute", "npm test")).toBe("Agent wants to run: npm test");
    expect(questionText("fetch", "https://example.com")).toBe("Agent wants to fetch https://example.com");
    expect(questionText(undefined, "Do a thing")).toBe("Agent wants to run: Do a thing");
  });

  it("an answer from the card resolves the request with the selected option", async () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, undefined);
    const pending = broker.request(request);
    const requestId = store.state.cards.c1!.permission!.requestId;
    expect(broker.answer(requestId, "reject_once")).toBe(true);
    await expect(pending).resolves.toEqual({ outcome: { outcome: "selected", optionId: "reject_once" } });
    expect(store.state.cards.c1!.permission!.outcome).toBe("reject_once");
  });

  it("the first answer wins: a later notification click is ignored", async () => {
    const store = new SessionStore();
    const toast = deferred<string | undefined>();
    const broker = new PermissionBroker(store, () => toast.promise);
    const pending = broker.request(request);
    broker.answer(store.state.cards.c1!.permission!.requestId, "allow_once");
    toast.resolve("reject_once");
    await expect(pending).resolves.toEqual({ outcome: { outcome: "selected", optionId: "allow_once" } });
    await new Promise((r) => setTimeout(r, 0));
    expect(store.state.cards.c1!.permission!.outcome).toBe("allow_once");
  });

  it("a notification answer wins when it comes first", async () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, async () => "allow_once");
    await expect(broker.request(request)).resolves.toEqual({ outcome: { outcome: "selected", optionId: "allow_once" } });
    expect(broker.answer(store.state.cards.c1!.permission!.requestId, "reject_once")).toBe(false);
  });

  it("cancelling the turn answers every open question `cancelled`", async () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, undefined);
    const a = broker.request(request);
    const b = broker.request({ ...request, toolCall: { toolCallId: "c2", title: "Run ls" } });
    broker.cancelAll();
    await expect(a).resolves.toEqual({ outcome: { outcome: "cancelled" } });
    await expect(b).resolves.toEqual({ outcome: { outcome: "cancelled" } });
    expect(broker.openCount).toBe(0);
    expect(store.state.cards.c2!.permission!.outcome).toBe("cancelled");
  });

  it("an agent-side cancel of the request (abort signal) answers `cancelled`", async () => {
    const broker = new PermissionBroker(new SessionStore(), undefined);
    const ctl = new AbortController();
    const pending = broker.request(request, ctl.signal);
    ctl.abort();
    await expect(pending).resolves.toEqual({ outcome: { outcome: "cancelled" } });
  });

  it("rejects an option id the agent did not offer", () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, undefined);
    void broker.request(request);
    expect(broker.answer(store.state.cards.c1!.permission!.requestId, "bogus")).toBe(false);
    expect(broker.openCount).toBe(1);
  });
});
