/**
 * Messages between the extension host (src/) and the Agent webview (webview/).
 * The webview sends `ready` first; the host answers with a `snapshot` and then streams `events`.
 * A snapshot is also replayed whenever the view becomes visible again.
 */
import type { ContentBlock } from "./acp";
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
/** Something the user attached to the next prompt, as the composer shows it (a chip) and sends it. */
export interface Attachment {
  label: string;
  block: ContentBlock;
}
/** Attachments for the composer (the user chose a selection, a file or an image). */
export interface AttachedMessage {
  type: "attached";
  items: Attachment[];
}
/** Workspace files matching an @-mention being typed. */
export interface FileMatchesMessage {
  type: "fileMatches";
  query: string;
  files: Array<{ label: string; path: string }>;
}
export type HostToWebview = SnapshotMessage | EventsMessage | FocusPromptMessage | RevealCardMessage | RevealItemMessage | AttachedMessage | FileMatchesMessage;

// ---- webview → host ----
export type WebviewToHost =
  | { type: "ready" }
  /** `attachments`: the composer's chips; `mentions`: the @-mentioned files still named in the text. */
  | { type: "prompt"; text: string; attachments?: Attachment[]; mentions?: Array<{ label: string; path: string }> }
  /** The user wants to attach something (the host asks what: selection, file, image). */
  | { type: "attach" }
  /** An @-mention is being typed: which workspace files match. */
  | { type: "findFiles"; query: string }
  | { type: "cancel" }
  | { type: "permission"; requestId: string; optionId: string; feedback?: string }
  /** The answer to a question form (`elicitation/create`). */
  | { type: "question"; requestId: string; action: "accept" | "decline" | "cancel"; content?: Record<string, string | number | boolean | string[]> }
  | { type: "openLocation"; path: string; line?: number | null }
  /** `proposed`: the index is into the diffs a failed card kept (`ToolCard.proposed`). */
  | { type: "openDiff"; toolCallId: string; index: number; proposed?: boolean }
  | { type: "review"; toolCallId: string }
  | { type: "undo"; toolCallId: string }
  /** Stop the background command the card's call started (`_acpBridge/killBackground`). */
  | { type: "stopBackground"; toolCallId: string }
  /** Put the files back as they were before turn `turn` (`_acpBridge/rewind`). */
  | { type: "rewind"; turn: number }
  /** Put one file of a card back as it was before that call (`_acpBridge/revertFile`). */
  | { type: "revertFile"; toolCallId: string; path: string }
  | { type: "openSetting"; id: string }
  | { type: "copy"; text: string }
  | { type: "newSession" }
  | { type: "history" }
  | { type: "renameSession" }
  | { type: "restart" }
  /** Install the built-in bridge into the extension's own environment (it is missing). */
  | { type: "installBridge" }
  | { type: "setMode"; modeId: string }
  /** A select option's value id, or a boolean option's new value (a toggle). */
  | { type: "setConfigOption"; configId: string; value: string | boolean }
  | { type: "toggleFollow" }
  /** Run the agent's terminal auth method `methodId` (the agent answered `auth_required`). */
  | { type: "login"; methodId: string };

export function isWebviewToHost(m: unknown): m is WebviewToHost {
  return typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string";
}
