/** The webview side of postMessage, typed with the shared protocol. */
import type { Attachment, WebviewToHost } from "../shared/protocol";

interface VsCodeApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

const api: VsCodeApi = acquireVsCodeApi();

export function send(message: WebviewToHost): void {
  api.postMessage(message);
}

export interface UiState {
  draft?: string;
  /** The composer's attachments and @-mentions, until the prompt is sent. */
  attachments?: Attachment[];
  mentions?: Array<{ label: string; path: string }>;
  /** Cards the user collapsed (true) or expanded (false) themselves; others follow their default. */
  collapsed?: Record<string, boolean>;
}

export function loadUiState(): UiState {
  const s = api.getState();
  return typeof s === "object" && s !== null ? (s as UiState) : {};
}

export function saveUiState(s: UiState): void {
  api.setState(s);
}
