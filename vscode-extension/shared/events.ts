/**
 * SessionEvent: every change to a SessionState, as data. The host produces events (from ACP traffic and
 * from its own actions), applies them to its state, and forwards the same events to the webview, which
 * applies them with the same reducer. A snapshot plus the events after it always rebuilds the same state.
 */
import type {
  ContentBlock,
  PermissionOption,
  SessionConfigOption,
  SessionModeState,
  SessionUpdate,
  ToolCallUpdate,
} from "./acp";
import type { AgentView, AuthView, ConnectionStatus, FailureView, RestoreOutcome, SessionState } from "./state";

export type SessionEvent =
  | { type: "connection"; status: ConnectionStatus; agentName: string; error?: string; failure?: FailureView }
  | { type: "agentInfo"; agent: AgentView }
  | {
      type: "sessionStarted";
      sessionId: string;
      cwd: string;
      modes?: SessionModeState | null;
      configOptions?: SessionConfigOption[] | null;
      canLoadSessions?: boolean;
      /** The agent keeps checkpoints (restore a turn, revert a file). */
      checkpoints?: boolean;
    }
  | { type: "update"; update: SessionUpdate }
  /** `blocks`: what the user attached (selections, files, images, mentions). */
  | { type: "userPrompt"; text: string; blocks?: ContentBlock[] }
  /** `turn`: the agent's number for the turn the prompt started (`_meta.acpBridge.turn` of its answer). */
  | { type: "turnEnded"; stopReason: string; turn?: number }
  /** A message sent while the agent works ("Send now"); it shows where it landed once the agent echoes it. */
  | { type: "steerSent"; messageId: string; text: string; blocks?: ContentBlock[] }
  /** Its request was answered (`stopReason`) or failed (`error`). */
  | { type: "steerAnswered"; messageId: string; stopReason?: string; error?: string }
  | { type: "turnCancelled" }
  | { type: "permissionRequested"; requestId: string; toolCall: ToolCallUpdate; options: PermissionOption[] }
  | { type: "permissionResolved"; requestId: string; outcome: string; feedback?: string }
  /** The agent asks the user a question (`elicitation/create`, form mode). */
  | { type: "questionAsked"; requestId: string; message: string; schema: unknown; toolCallId?: string }
  | { type: "questionAnswered"; requestId: string; action: string; content?: Record<string, string | number | boolean | string[]> }
  /** An answer given in an earlier window, put back on its card after `session/load` replayed it. */
  | { type: "answerRestored"; toolCallId: string; label: string; kind?: PermissionOption["kind"]; feedback?: string }
  /** A resumed session's conversation as the client kept it (`session/resume` replays nothing). */
  | { type: "viewRestored"; view: SessionState }
  /** The user asked the agent to stop a background command (the card's own call started it). */
  | { type: "stopRequested"; toolCallId: string }
  /** The agent answered: stopped, or ended already (`reason` absent: the agent's update ends the card), or it failed (`reason`). */
  | { type: "stopAnswered"; toolCallId: string; reason?: string }
  /**
   * Files put back from the agent's checkpoints: to before `turn`, or `path` of `toolCallId`. `status` is
   * the agent's (`restored`, `nothing`, `conflict`), or `failed` with `error`.
   */
  | ({ type: "restored" } & RestoreOutcome)
  | { type: "editUndone"; toolCallId: string }
  | { type: "undoFailed"; toolCallId: string; reason: string }
  | { type: "terminalStarted"; terminalId: string; command: string; cwd?: string }
  | { type: "terminalOutput"; terminalId: string; data: string }
  | { type: "terminalExited"; terminalId: string; exitCode: number | null; signal: string | null }
  | { type: "configOptions"; configOptions: SessionConfigOption[] }
  | { type: "modeChanged"; modeId: string }
  | { type: "modes"; modes: SessionModeState | null }
  | { type: "follow"; enabled: boolean }
  /** The agent answered `auth_required`; `auth` undefined: logged in (or no longer asked). */
  | { type: "auth"; auth?: AuthView }
  | { type: "error"; message: string }
  /** A line from the client itself (e.g. an MCP server it did not pass on, and why). */
  | { type: "notice"; severity: "info" | "warning" | "error"; text: string };

/** What an event touched, so a view re-renders only that. */
export interface Change {
  header?: boolean;
  timeline?: boolean;
  /** The timeline was rebuilt from scratch (new session): re-render everything. */
  reset?: boolean;
  plan?: boolean;
  /** The messages waiting to land (`steers`) changed. */
  steers?: boolean;
  /** The waiting line (`SessionState.waiting`) changed. */
  waiting?: boolean;
  items?: string[];
  cards?: string[];
  terminals?: string[];
}
