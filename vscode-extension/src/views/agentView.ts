/**
 * The Agent view (a WebviewView). It waits for the webview's `ready`, answers with a snapshot of the
 * session, then streams SessionEvents in batches; it replays the snapshot whenever the view becomes
 * visible again. Messages from the webview go to `onMessage`.
 */
import * as vscode from "vscode";
import type { Attachment, HostToWebview, WebviewToHost } from "../../shared/protocol";
import { isWebviewToHost } from "../../shared/protocol";
import type { SessionEvent } from "../../shared/events";
import { VIEW_ID } from "../ids";
import type { SessionStore } from "../session/store";
import { webviewHtml } from "./webviewHtml";

export class AgentViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  static readonly viewType = VIEW_ID;
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** Hidden: events are not posted; the snapshot sent on becoming visible catches up. */
  private paused = false;
  private queue: Array<{ event: SessionEvent; t0: number }> = [];
  private flushTimer: NodeJS.Immediate | undefined;
  /** A focus request made before the view could take it (closed, still loading): sent after the snapshot. */
  private pendingFocus: HostToWebview | undefined;
  /** Attachments chosen while the view could not take them (closed, still loading). */
  private pendingAttachments: Attachment[] = [];
  private readonly subscriptions: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: SessionStore,
    private readonly onMessage: (m: WebviewToHost) => void,
  ) {
    this.subscriptions.push(store.listen((event, _change, t0) => this.enqueue(event, t0)));
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist] };
    view.webview.html = webviewHtml({
      cspSource: view.webview.cspSource,
      scriptUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.js")).toString(),
      styleUri: view.webview.asWebviewUri(vscode.Uri.joinPath(dist, "webview.css")).toString(),
    });
    const subs: vscode.Disposable[] = [];
    subs.push(
      view.webview.onDidReceiveMessage((m: unknown) => {
        if (!isWebviewToHost(m)) return;
        if (m.type === "ready") {
          this.ready = true;
          this.paused = false;
          this.sendSnapshot();
        }
        this.onMessage(m);
      }),
      view.onDidChangeVisibility(() => {
        this.paused = !view.visible;
        if (view.visible && this.ready) this.sendSnapshot();
      }),
      view.onDidDispose(() => {
        if (this.view === view) this.view = undefined;
        this.ready = false;
        for (const d of subs) d.dispose();
      }),
    );
  }

  get isVisible(): boolean {
    return this.view?.visible ?? false;
  }

  post(message: HostToWebview): void {
    if (this.view && this.ready && !this.paused) void this.view.webview.postMessage(message);
    else if (message.type === "focusPrompt" || message.type === "revealCard" || message.type === "revealItem") this.pendingFocus = message;
    else if (message.type === "attached") this.pendingAttachments.push(...message.items);
  }

  private sendSnapshot(): void {
    this.queue = []; // the snapshot already contains every queued event
    this.post({ type: "snapshot", state: this.store.state });
    const items = this.pendingAttachments;
    this.pendingAttachments = [];
    if (items.length) this.post({ type: "attached", items });
    const focus = this.pendingFocus;
    this.pendingFocus = undefined;
    if (focus) this.post(focus);
  }

  private enqueue(event: SessionEvent, t0: number): void {
    if (!this.view || !this.ready || this.paused) return;
    this.queue.push({ event, t0 });
    this.flushTimer ??= setImmediate(() => {
      this.flushTimer = undefined;
      const items = this.queue;
      this.queue = [];
      if (items.length > 0) this.post({ type: "events", items });
    });
  }

  dispose(): void {
    if (this.flushTimer) clearImmediate(this.flushTimer);
    for (const s of this.subscriptions) s.dispose();
  }
}
