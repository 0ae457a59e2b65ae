/**
 * QuestionBroker: answers ACP `elicitation/create`. A form-mode question appears in the Agent view as a
 * form (through the store); the user's answer is `accept` with the form's content, `decline`, or
 * `cancel`. A cancelled turn, or an agent-side cancel of the request, answers `cancel`. Other modes
 * (URL elicitation, which this client does not advertise) are declined.
 */
import type { CreateElicitationRequest, CreateElicitationResponse } from "@agentclientprotocol/sdk";
import type { ContentValue } from "../../shared/elicitation";
import type { SessionStore } from "../session/store";

export class QuestionBroker {
  private readonly pending = new Map<string, (r: CreateElicitationResponse) => void>();
  private next = 1;

  constructor(private readonly store: SessionStore) {}

  request(params: CreateElicitationRequest, signal?: AbortSignal): Promise<CreateElicitationResponse> {
    if (params.mode !== "form" || !("requestedSchema" in params)) return Promise.resolve({ action: "decline" });
    const requestId = `question-${this.next++}`;
    const toolCallId = "toolCallId" in params && typeof params.toolCallId === "string" ? params.toolCallId : undefined;
    const result = new Promise<CreateElicitationResponse>((resolve) => this.pending.set(requestId, resolve));
    this.store.dispatch({ type: "questionAsked", requestId, message: params.message, schema: params.requestedSchema, toolCallId });
    signal?.addEventListener("abort", () => this.answer(requestId, "cancel"), { once: true });
    return result;
  }

  /** The user's answer; false if the question is no longer open. */
  answer(requestId: string, action: "accept" | "decline" | "cancel", content?: Record<string, ContentValue>): boolean {
    const resolve = this.pending.get(requestId);
    if (!resolve) return false;
    this.pending.delete(requestId);
    this.store.dispatch({ type: "questionAnswered", requestId, action, ...(action === "accept" && content ? { content } : {}) });
    resolve(action === "accept" ? { action, content: content ?? {} } : { action });
    return true;
  }

  /** Every open question answered `cancel` (the turn was cancelled, the agent went away). */
  cancelAll(): void {
    for (const id of [...this.pending.keys()]) this.answer(id, "cancel");
  }

  get openCount(): number {
    return this.pending.size;
  }
}
