/**
 * PermissionBroker: answers `session/request_permission`. Each question appears inside its tool card
 * (through the store) and, when a notifier is given, as a notification; whichever is answered first wins
 * and later answers are ignored. The notification offers the one-time choices under short labels and
 * the "always allow" one under a label that says what it covers, and is told when the question is
 * settled anywhere, so it can close. A cancelled turn (or an agent-side `$/cancel_request`) answers
 * `cancelled`.
 * A rejection may carry the user's reason, sent as `_meta.feedback` on the selected outcome.
 */
import type { PermissionOption, RequestPermissionRequest, RequestPermissionResponse } from "../../shared/acp";
import { choiceLabel } from "../../shared/cardView";
import type { SessionStore } from "../session/store";

/** A question as a notification shows it. */
export interface ApprovalPrompt {
  requestId: string;
  toolCallId: string;
  /** One line: "Agent wants to edit notes.txt". */
  message: string;
  /** Allow once, reject, then "always allow" with its scope in its label (`lasting`). */
  choices: Array<{ label: string; optionId: string; lasting?: boolean }>;
  /** Resolves when the question is answered anywhere (card, notification, review editor, cancel). */
  settled: Promise<string>;
}

/** Shows a question; resolves with the chosen optionId, or undefined if dismissed without an answer. */
export type AskUser = (prompt: ApprovalPrompt) => PromiseLike<string | undefined>;

interface Pending {
  options: RequestPermissionRequest["options"];
  toolCallId: string;
  resolve: (r: RequestPermissionResponse) => void;
  settled: (outcome: string) => void;
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
    let settled!: (outcome: string) => void;
    const settledPromise = new Promise<string>((r) => (settled = r));
    const result = new Promise<RequestPermissionResponse>((resolve) => {
      this.pending.set(requestId, { options: params.options, toolCallId: params.toolCall.toolCallId, resolve, settled });
    });
    this.store.dispatch({ type: "permissionRequested", requestId, toolCall: params.toolCall, options: params.options }, t0);
    signal?.addEventListener("abort", () => this.settle(requestId, "cancelled"), { once: true });
    if (this.ask) {
      const card = this.store.state.cards[params.toolCall.toolCallId];
      const title = params.toolCall.title ?? card?.title ?? "a tool call";
      const kind = params.toolCall.kind ?? card?.kind;
      const prompt: ApprovalPrompt = {
        requestId,
        toolCallId: params.toolCall.toolCallId,
        message: questionText(kind, title),
        choices: notificationChoices(params.options),
        settled: settledPromise,
      };
      void Promise.resolve(this.ask(prompt)).then((optionId) => {
        if (optionId !== undefined) this.answer(requestId, optionId);
      });
    }
    return result;
  }

  /** Answer with an option id (and, for a rejection, the user's reason). False if already answered or unknown. */
  answer(requestId: string, optionId: string, feedback?: string): boolean {
    const p = this.pending.get(requestId);
    if (!p || !p.options.some((o) => o.optionId === optionId)) return false;
    return this.settle(requestId, optionId, feedback?.trim() || undefined);
  }

  /** The open question of a tool call, if any. */
  openRequestFor(toolCallId: string): { requestId: string; options: PermissionOption[] } | undefined {
    for (const [requestId, p] of this.pending) if (p.toolCallId === toolCallId) return { requestId, options: p.options };
    return undefined;
  }

  isOpen(requestId: string): boolean {
    return this.pending.has(requestId);
  }

  /** Answer every open question `cancelled` (the turn was cancelled). */
  cancelAll(): void {
    for (const id of [...this.pending.keys()]) this.settle(id, "cancelled");
  }

  get openCount(): number {
    return this.pending.size;
  }

  private settle(requestId: string, outcome: string, feedback?: string): boolean {
    const p = this.pending.get(requestId);
    if (!p) return false;
    this.pending.delete(requestId);
    this.store.dispatch({ type: "permissionResolved", requestId, outcome, feedback });
    const meta = feedback ? { _meta: { feedback } } : {};
    p.resolve(outcome === "cancelled" ? { outcome: { outcome: "cancelled" } } : { outcome: { outcome: "selected", optionId: outcome, ...meta } });
    p.settled(outcome);
    return true;
  }
}

/** "Agent wants to edit notes.txt" from the card's kind and title ("Edit notes.txt"). */
export function questionText(kind: string | null | undefined, title: string): string {
  const line = title.split("\n")[0]!.trim();
  const verb: Record<string, string> = { edit: "edit", delete: "delete", move: "move", execute: "run", fetch: "fetch", read: "read", search: "search" };
  const v = kind ? verb[kind] : undefined;
  if (!v) return `Agent wants to run: ${line}`;
  // "Edit notes.txt" → "edit notes.txt"; a command title stays as it is.
  const object = line.toLowerCase().startsWith(`${v} `) ? line.slice(v.length + 1) : line;
  return kind === "execute" ? `Agent wants to run: ${object}` : `Agent wants to ${v} ${object}`;
}

/**
 * The choices a notification offers: Allow once, Reject, then the first "always allow" one, labelled
 * with what it covers ("Always allow `ls` commands (this session)"), never a bare "Always allow".
 */
export function notificationChoices(options: readonly PermissionOption[]): ApprovalPrompt["choices"] {
  const pick = (kind: PermissionOption["kind"]) => options.find((o) => o.kind === kind);
  const chosen = [pick("allow_once"), pick("reject_once"), pick("allow_always")].filter((o): o is PermissionOption => o !== undefined);
  return chosen.map((o) => ({ label: choiceLabel(o), optionId: o.optionId, ...(o.kind === "allow_always" ? { lasting: true } : {}) }));
}
