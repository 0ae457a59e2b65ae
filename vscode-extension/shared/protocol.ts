/**
 * Messages between the extension host (src/) and the Agent webview (webview/).
 * The webview sends `ready` first; the host answers with a `snapshot` and then streams `events`.
 * A snapshot is also replayed whenever the view becomes visible again.
 */
import type { SessionEvent } from "./events";
import type { SessionState } from "./state";

// ---- host → webview ----
export interface SnapshotMessage {
  type: "snapshot";
  state: SessionState;
}
export interface EventsMessage {
  type: "events";
  /** Each event with `t0`: Date.now() when the host received the ACP message behind it. */
  items: Array<{ event: SessionEvent; t0: number }>;
}
export interface FocusPromptMessage {
  type: "focusPrompt";
}
/** Scroll a card into view and focus its first control (the notification's "Show"). */
export interface RevealCardMessage {
  type: "revealCard";
  toolCallId: string;
}
/** Scroll a timeline item (a question) into view and focus its first control. */
export interface RevealItemMessage {
  type: "revealItem";
  id: string;
}
export type HostToWebview = SnapshotMessage | EventsMessage | FocusPromptMessage | RevealCardMessage | RevealItemMessage;

// ---- webview → host ----
export type WebviewToHost =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "permission"; requestId: string; optionId: string; feedback?: string }
  /** The answer to a question form (`elicitation/create`). */
  | { type: "question"; requestId: string; action: "accept" | "decline" | "cancel"; content?: Record<string, string | number | boolean | string[]> }
  | { type: "openLocation"; path: string; line?: number | null }
  /** `proposed`: the index is into the diffs a failed card kept (`ToolCard.proposed`). */
  | { type: "openDiff"; toolCallId: string; index: number; proposed?: boolean }
  | { type: "review"; toolCallId: string }
  | { type: "undo"; toolCallId: string }
  | { type: "openSetting"; id: string }
  | { type: "copy"; text: string }
  | { type: "newSession" }
  | { type: "history" }
  | { type: "renameSession" }
  | { type: "restart" }
  | { type: "setMode"; modeId: string }
  | { type: "setConfigOption"; configId: string; value: string }
  | { type: "toggleFollow" }
  /** Run the agent's terminal auth method `methodId` (the agent answered `auth_required`). */
  | { type: "login"; methodId: string };

export function isWebviewToHost(m: unknown): m is WebviewToHost {
  return typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string";
}
