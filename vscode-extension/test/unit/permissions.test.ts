import { describe, expect, it } from "vitest";
import type { RequestPermissionRequest } from "../../shared/acp";
import { PermissionBroker } from "../../src/permissions";
import { SessionStore } from "../../src/store";

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
  it("shows the question in the card and as a notification with the same options", async () => {
    const store = new SessionStore();
    const asked: Array<{ message: string; names: string[] }> = [];
    const broker = new PermissionBroker(store, (message, names) => {
      asked.push({ message, names });
      return new Promise(() => {});
    });
    void broker.request(request);
    expect(store.state.cards.c1!.permission!.options.map((o) => o.optionId)).toEqual(["allow_once", "allow_always", "reject_once"]);
    expect(asked).toEqual([{ message: "Agent wants to run: Edit notes.txt", names: ["Allow once", "Always allow", "Reject"] }]);
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
    toast.resolve("Reject");
    await expect(pending).resolves.toEqual({ outcome: { outcome: "selected", optionId: "allow_once" } });
    await new Promise((r) => setTimeout(r, 0));
    expect(store.state.cards.c1!.permission!.outcome).toBe("allow_once");
  });

  it("a notification answer wins when it comes first", async () => {
    const store = new SessionStore();
    const broker = new PermissionBroker(store, async () => "Always allow");
    await expect(broker.request(request)).resolves.toEqual({ outcome: { outcome: "selected", optionId: "allow_always" } });
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
