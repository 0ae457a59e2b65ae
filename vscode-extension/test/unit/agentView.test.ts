import { describe, expect, it, vi } from "vitest";
import * as vscode from "vscode";
import type { HostToWebview, WebviewToHost } from "../../shared/protocol";
import { AgentViewProvider } from "../../src/views/agentView";
import { SessionStore } from "../../src/session/store";

vi.mock("vscode", async () => (await import("jest-mock-vscode")).createVSCodeMock(vi));

function fakeView() {
  const posted: HostToWebview[] = [];
  const emitters = { message: new vscode.EventEmitter<unknown>(), visibility: new vscode.EventEmitter<void>(), dispose: new vscode.EventEmitter<void>() };
  const view = {
    visible: true,
    webview: {
      options: {},
      html: "",
      cspSource: "vscode-webview:",
      asWebviewUri: (u: vscode.Uri) => u,
      postMessage: async (m: HostToWebview) => (posted.push(structuredClone(m)), true),
      onDidReceiveMessage: emitters.message.event,
    },
    onDidChangeVisibility: emitters.visibility.event,
    onDidDispose: emitters.dispose.event,
  };
  return { view, posted, emitters };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("Agent view provider", () => {
  it("waits for ready, sends a snapshot, then batches events with arrival stamps", async () => {
    const store = new SessionStore("a");
    const got: WebviewToHost[] = [];
    const provider = new AgentViewProvider(vscode.Uri.file("/ext"), store, (m) => got.push(m));
    const { view, posted, emitters } = fakeView();
    provider.resolveWebviewView(view as unknown as vscode.WebviewView);
    expect(view.webview.html).toContain("default-src 'none'");
    store.dispatch({ type: "userPrompt", text: "before ready" });
    await tick();
    expect(posted).toEqual([]);
    emitters.message.fire({ type: "ready" });
    expect(posted[0]!.type).toBe("snapshot");
    store.dispatch({ type: "userPrompt", text: "one" }, 111);
    store.dispatch({ type: "userPrompt", text: "two" }, 222);
    await tick();
    expect(posted).toHaveLength(2);
    const batch = posted[1]!;
    expect(batch.type === "events" && batch.items.map((i) => i.t0)).toEqual([111, 222]);
    expect(got).toEqual([{ type: "ready" }]);
  });

  it("stops posting while hidden and replays the snapshot when visible again", async () => {
    const store = new SessionStore("a");
    const provider = new AgentViewProvider(vscode.Uri.file("/ext"), store, () => undefined);
    const { view, posted, emitters } = fakeView();
    provider.resolveWebviewView(view as unknown as vscode.WebviewView);
    emitters.message.fire({ type: "ready" });
    view.visible = false;
    emitters.visibility.fire();
    store.dispatch({ type: "userPrompt", text: "while hidden" });
    await tick();
    expect(posted.map((m) => m.type)).toEqual(["snapshot"]);
    view.visible = true;
    emitters.visibility.fire();
    const last = posted.at(-1)!;
    expect(last.type === "snapshot" && last.state.timeline).toHaveLength(1);
  });

  it("ignores messages that are not protocol messages", () => {
    const got: WebviewToHost[] = [];
    const provider = new AgentViewProvider(vscode.Uri.file("/ext"), new SessionStore(), (m) => got.push(m));
    const { view, emitters } = fakeView();
    provider.resolveWebviewView(view as unknown as vscode.WebviewView);
    emitters.message.fire("junk");
    emitters.message.fire({ nope: 1 });
    expect(got).toEqual([]);
  });
});
