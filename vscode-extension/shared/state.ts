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
  /** What the user wrote with a rejection (sent as `_meta.feedback`). */
  feedback?: string;
  /** The answer's words when the options are gone (an answer restored after `session/load`). */
  label?: string;
  /** The chosen option's kind, when the options are gone. */
  kind?: PermissionOption["kind"];
}

/** What the agent is and which model it runs, for the header and the first-run welcome. */
export interface AgentView {
  /** The agent's own name (`agentInfo.title`/`name`), else the configured name. */
  title: string;
  version?: string;
  /** The model, when the client knows it (a `model` config option, or the built-in bridge's `--model`). */
  model?: string;
  /** The model is the bridge's offline demo script: canned answers, not a language model. */
  demo?: boolean;
  /** What the demo does, whatever the user types (shown in the welcome). */
  demoNote?: string;
  /** How to choose another model, in words (shown with the demo label). */
  modelHint?: string;
}

/** An applied edit the user undid from its card, or tried to. */
export type UndoView = { state: "undone" } | { state: "failed"; reason: string };

/** The user asked the agent to stop a background command (`_acpBridge/killBackground`). */
export type StopView = { state: "stopping" } | { state: "failed"; reason: string };

/** One file the agent's checkpoints put back (`_acpBridge/rewind`, `_acpBridge/revertFile`). */
export interface RestoredFile {
  path: string;
  /** `removed` (the turn created it), `restored` (changed), `recreated` (deleted); or the agent's own word. */
  action: string;
}

/**
 * What restoring files from the agent's checkpoints did, one timeline entry each: to before a turn
 * (`turn`), or one file of one card (`toolCallId` and `path`).
 */
export interface RestoreView extends RestoreOutcome {
  type: "restore";
  id: string;
}

/** What a restore reports: to before `turn`, or `path` of `toolCallId`; the event and the entry share it. */
export interface RestoreOutcome {
  turn?: number;
  toolCallId?: string;
  path?: string;
  /** The agent's `status` (`restored`, `nothing`, `conflict`), or `failed` when the request failed. */
  status: string;
  restored: RestoredFile[];
  /** Files changed since by someone other than the agent (left alone unless the user chose to overwrite). */
  conflicts: Array<{ path: string; reason: string }>;
  error?: string;
}

/** An instructions file the agent follows (AGENTS.md or an alternative), as it reported it. */
export interface InstructionFileView {
  path: string;
  /** Its name relative to its folder: `AGENTS.md`, `CLAUDE.md`, `.github/copilot-instructions.md`. */
  name: string;
  /** `user` (the user's own, every project), `root` (a root of the session), `folder` (below a root). */
  scope: string;
  /** Why it was found but not read, when it was not. */
  skipped?: string;
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
  /** The agent's tool name (`_meta.acpBridge.tool`), e.g. `todo_write`. */
  tool?: string;
  /** An extra line about the call (`_meta.acpBridge.note`, e.g. which remembered rule allowed it). */
  note?: string;
  /** The diffs the card showed before it failed (a rejected edit keeps what was proposed). */
  proposed?: ToolCallContent[];
  undo?: UndoView;
  /**
   * The card of the call that made this one (a Code Mode program's sub-call: `_meta.parentToolCallId`),
   * fixed when the card is created: later updates may carry no `_meta` at all.
   */
  parentId?: string;
  /** The calls this one made, in arrival order; their cards are shown inside this one. */
  children?: string[];
  /** Stopping its background command, or why that failed. */
  stop?: StopView;
  /** Files of this card put back from the agent's checkpoint ("Revert this file"), by path. */
  reverted?: Record<string, UndoView>;
}

export type TimelineItem =
  | {
      type: "user" | "agent" | "thought";
      id: string;
      messageId?: string;
      text: string;
      blocks: ContentBlock[];
      /** A user message sent while the agent worked, shown where the agent took it (see SteerView). */
      steered?: boolean;
      /** The agent's number for the turn this message started (`_meta.acpBridge.turn`), for checkpoints. */
      turn?: number;
    }
  | { type: "tool"; id: string }
  | { type: "notice"; id: string; severity: string; text: string }
  | CompactionView
  | QuestionView
  | RestoreView;

/** A question the agent put to the user as a form (ACP `elicitation/create`, form mode). */
export interface QuestionView {
  type: "question";
  /** The client's id for the open request (also the item's id). */
  id: string;
  message: string;
  /** The requested schema, as the agent sent it (see shared/elicitation.ts). */
  schema: unknown;
  toolCallId?: string;
  /** Absent while open. */
  answer?: { action: string; content?: Record<string, string | number | boolean | string[]> };
}

/**
 * A context compaction (`compaction_update` / `compaction_summary_chunk`): one timeline entry per
 * `compactionId`, where it started. Summary chunks append while it runs; a final `summary` replaces them.
 */
export interface CompactionView {
  type: "compaction";
  id: string;
  compactionId: string;
  /** `in_progress`, `completed`, `failed`, `cancelled` (or a status this client does not know). */
  status: string;
  summary: ContentBlock[];
  error?: string;
  /** The agent's `_meta` for it (the bridge's `acpBridge`: trigger, summarizedMessages, keptMessages, focus). */
  meta?: Record<string, unknown>;
}

/** The context gauge (`usage_update`): tokens in context of the window, and the session's cost if known. */
export interface UsageView {
  used: number;
  size: number;
  cost?: { amount: number; currency: string };
  /** Model responses left out of the cost (no known price): the cost is a lower bound. */
  unpriced?: number;
}

/** The agent wants a login (`auth_required`, -32000): what it said and the ways it offers. */
export interface AuthView {
  message: string;
  /** The agent's `terminal` auth methods: run the agent with their args in a terminal. */
  methods: Array<{ id: string; name: string; description?: string }>;
  /** A login terminal is open. */
  running?: boolean;
}

/** Why the agent stopped, said so a user can act on it (see src/install/failure.ts). */
export interface FailureView {
  /** A sentence for the view: what happened. */
  summary: string;
  /** The same, short and without a subject, for "ACP agent "x" stopped: <reason>". */
  reason: string;
  /** The agent's own last words (stderr), kept whole. */
  cause?: string;
  /** What to do about it, e.g. the install command. */
  fix?: string;
  /** The setting that decides this, offered as a button. */
  setting?: string;
  /** The built-in bridge is not installed: offer to install it (one click). */
  install?: boolean;
}

/**
 * A message the user sent while the agent worked ("Send now": a `session/prompt` while a turn runs, which
 * the bridge takes into the running turn at its next step). It waits in the footer until the agent echoes
 * it (`user_message_chunk` under its `messageId`), which puts it in the conversation where it landed,
 * once; the entry stays until its request is answered.
 */
export interface SteerView {
  /** The client's id for it, sent as the prompt's `_meta.acpBridge.messageId`. */
  messageId: string;
  text: string;
  blocks: ContentBlock[];
  /** The agent showed where it landed (its echo arrived). */
  landed: boolean;
}

export interface WaitingView {
  /** "Waiting for the model for 40 s", "Rate limited, retrying in 2 s (attempt 1 of 3)". */
  text: string;
  reason: string;
}

export interface SessionState {
  connection: { status: ConnectionStatus; agentName: string; error?: string; failure?: FailureView };
  agent?: AgentView;
  sessionId: string | null;
  cwd?: string;
  title?: string;
  /** The title came from the agent (`session_info_update`), not from the first prompt. */
  titleFromAgent?: boolean;
  /** The agent works: the user's prompt, or a message sent while it worked, is not answered yet. */
  running: boolean;
  /** The prompt that started the running turn is not answered yet (`running` may outlast it: `steers`). */
  prompting?: boolean;
  /** Messages sent while the agent worked whose requests are not answered yet. */
  steers: SteerView[];
  stopReason?: string;
  timeline: TimelineItem[];
  cards: Record<string, ToolCard>;
  terminals: Record<string, TerminalView>;
  plan: PlanEntry[];
  modes: SessionModeState | null;
  configOptions: SessionConfigOption[];
  commands: AvailableCommand[];
  usage?: UsageView;
  /** Set while the agent refuses to work until the user logs in. */
  auth?: AuthView;
  /** The model keeps the prompt waiting (rate limited and retrying, or silent): the agent's words for it. */
  waiting?: WaitingView;
  follow: boolean;
  canLoadSessions: boolean;
  /** The agent keeps checkpoints (`agentCapabilities._meta.acpBridge.checkpoints`): restore and revert are offered. */
  checkpoints?: boolean;
  /** The instructions files the agent says it follows in this session (AGENTS.md and the like). */
  instructions?: InstructionFileView[];
  /** The user item of the prompt that runs (it gets its turn number from the prompt's answer). */
  promptItemId?: string;
  nextItemId: number;
}

/** How much terminal text each terminal keeps (host and webview): 10 MB of output stays cheap to show. */
export const TERMINAL_KEEP_CHARS = 100_000;

export function emptyState(agentName = "", follow = true): SessionState {
  return {
    connection: { status: "idle", agentName },
    sessionId: null,
    running: false,
    steers: [],
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
