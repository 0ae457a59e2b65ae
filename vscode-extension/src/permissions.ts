/**
 * PermissionBroker: answers `session/request_permission`. Each question appears inside its tool card
 * (through the store) and as a notification with the same options; whichever is answered first wins and
 * later answers are ignored. A cancelled turn (or an agent-side `$/cancel_request`) answers `cancelled`.
 */
import type { RequestPermissionRequest, RequestPermissionResponse } from "../shared/acp";
import type { SessionStore } from "./store";

/** Shows a question with one button per option name; resolves with the clicked name, if any. */
export type AskUser = (message: string, optionNames: string[]) => PromiseLike<string | undefined>;

interface Pending {
  options: RequestPermissionRequest["options"];
  resolve: (r: RequestPermissionResponse) => void;
}

export class PermissionBroker {
  private readonly pending = new Map<string, Pending>();
  private next = 1;

  constructor(
    private readonly store: SessionStore,
    private readonly ask: AskUser | undefined,
  ) {}

  request(params: RequestPermissionRequest, signal?: AbortSignal, t0 = Date.now()): Promise<RequestPermissionResponse> {
    const requestId = `perm-${this.next++}`;
    const result = new Promise<RequestPermissionResponse>((resolve) => {
      this.pending.set(requestId, { options: params.options, resolve });
    });
    this.store.dispatch({ type: "permissionRequested", requestId, toolCall: params.toolCall, options: params.options }, t0);
    signal?.addEventListener("abort", () => this.settle(requestId, "cancelled"), { once: true });
    if (this.ask) {
      const title = params.toolCall.title ?? this.store.state.cards[params.toolCall.toolCallId]?.title ?? "a tool call";
      const names = params.options.map((o) => o.name);
      void Promise.resolve(this.ask(`Agent wants to run: ${title}`, names)).then((name) => {
        const option = params.options.find((o) => o.name === name);
        if (option) this.answer(requestId, option.optionId);
      });
    }
    return result;
  }

  /** Answer with an option id. Returns false if the question was already answered or is unknown. */
  answer(requestId: string, optionId: string): boolean {
    const p = this.pending.get(requestId);
    if (!p || !p.options.some((o) => o.optionId === optionId)) return false;
    return this.settle(requestId, optionId);
  }

  /** Answer every open question `cancelled` (the turn was cancelled). */
  cancelAll(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, "cancelled");
  }

  get openCount(): number {
    return this.pending.size;
  }

  private settle(requestId: string, outcome: string): boolean {
    const p = this.pending.get(requestId);
    if (!p) return false;
    this.pending.delete(requestId);
    this.store.dispatch({ type: "permissionResolved", requestId, outcome });
    p.resolve(outcome === "cancelled" ? { outcome: { outcome: "cancelled" } } : { outcome: { outcome: "selected", optionId: outcome } });
    return true;
  }
}
