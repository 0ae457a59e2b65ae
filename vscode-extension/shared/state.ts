/**
 * The view model of one agent session: what the Agent view shows, held by the host and mirrored in the
 * webview. Plain JSON data (it crosses postMessage and is replayed as a snapshot).
 * Rule: no behaviour here beyond constructors; the reducer (reducer.ts) is the only writer.
 */
import type {
  AvailableCommand,
  ContentBlock,
  PermissionOption,
  PlanEntry,
  SessionConfigOption,
  SessionModeState,
  ToolCallContent,
  ToolCallLocation,
  ToolKind,
} from "./acp";

/** ACP's four statuses plus the client-side `cancelled` (ACP v1 has none; the client marks it locally). */
export type CardStatus = "pending" | "in_progress" | "completed" | "failed" | "cancelled";

export type ConnectionStatus = "idle" | "starting" | "ready" | "crashed" | "stopped";

export interface PermissionView {
  requestId: string;
  options: PermissionOption[];
  /** The chosen optionId, or "cancelled"; absent while the question is open. */
  outcome?: string;
}

export interface TerminalView {
  terminalId: string;
  /** The most recent output, capped at TERMINAL_KEEP_CHARS (older text dropped from the start). */
  output: string;
  droppedChars: number;
  totalChars: number;
  command?: string;
  cwd?: string;
  exit?: { exitCode: number | null; signal: string | null };
}

export interface ToolCard {
  toolCallId: string;
  title: string;
  kind: ToolKind;
  status: CardStatus;
  name?: string;
  content: ToolCallContent[];
  locations: ToolCallLocation[];
  rawInput?: unknown;
  rawOutput?: unknown;
  /** Terminal announced through Zed's `_meta.terminal_info` convention. */
  metaTerminalId?: string;
  permission?: PermissionView;
}

export type TimelineItem =
  | { type: "user" | "agent" | "thought"; id: string; messageId?: string; text: string; blocks: ContentBlock[] }
  | { type: "tool"; id: string }
  | { type: "notice"; id: string; severity: string; text: string };

export interface SessionState {
  connection: { status: ConnectionStatus; agentName: string; error?: string };
  sessionId: string | null;
  cwd?: string;
  title?: string;
  running: boolean;
  stopReason?: string;
  timeline: TimelineItem[];
  cards: Record<string, ToolCard>;
  terminals: Record<string, TerminalView>;
  plan: PlanEntry[];
  modes: SessionModeState | null;
  configOptions: SessionConfigOption[];
  commands: AvailableCommand[];
  usage?: { used: number; size: number };
  follow: boolean;
  canLoadSessions: boolean;
  nextItemId: number;
}

/** How much terminal text each terminal keeps (host and webview): 10 MB of output stays cheap to show. */
export const TERMINAL_KEEP_CHARS = 100_000;

export function emptyState(agentName = "", follow = true): SessionState {
  return {
    connection: { status: "idle", agentName },
    sessionId: null,
    running: false,
    timeline: [],
    cards: {},
    terminals: {},
    plan: [],
    modes: null,
    configOptions: [],
    commands: [],
    follow,
    canLoadSessions: false,
    nextItemId: 1,
  };
}
