/**
 * The session reducer: applies one SessionEvent to a SessionState and reports what changed.
 * It mutates the state it is given (the state can hold 1,000 cards and megabytes of output, so copying
 * per update would cost more than it buys) and does no I/O. Host and webview run this same code.
 *
 * ACP v1 rules it implements: tool_call creates (or upserts) a card; tool_call_update patches it, where
 * omitted or null fields stay, and `content` and `locations` REPLACE the whole collection; message chunks
 * append; `plan` replaces the whole plan. Zed's `_meta` terminal convention: terminal_info on tool_call
 * opens a terminal, terminal_output appends deltas, terminal_exit records the exit status. A card whose
 * first update names a known card in `_meta.parentToolCallId` (a Code Mode program's sub-call) is kept
 * among that card's children instead of the timeline.
 *
 * The card rules are the Python bridge's too (acp_bridge/mapping/fold.py): both are checked against the
 * same golden fixtures, <repo>/tests/fixtures/session_updates/ (test/unit/reducerGolden.test.ts), whose
 * README says where the two legitimately differ.
 *
 * Steering: a message sent while the agent works (`steerSent`) waits in `steers` until the agent echoes
 * it (`user_message_chunk` under its `messageId`), which adds it to the timeline where it landed; the view
 * never echoes it itself, so it shows once. The agent works (`running`) until the turn's prompt and every
 * such message are answered. An agent that answers one without echoing it gets it shown at the end.
 *
 * A cancelled turn marks its unfinished cards cancelled, but a background command's (shared/background.ts)
 * runs on. A user message gets its turn's number from the prompt's answer (`turnEnded.turn`) or from a
 * replayed first chunk's `_meta.acpBridge.turn` (shared/checkpoints.ts); what restoring files did is a
 * timeline entry (`restored`). The bridge's instructions notices set the header's files
 * (shared/instructions.ts) instead of adding a notice, but for a change mid-session.
 */
import type { ContentBlock, SessionUpdate, ToolCallUpdate } from "./acp";
import type { Change, SessionEvent } from "./events";
import { isBackgroundCommand } from "./background";
import { turnOf } from "./checkpoints";
import { instructionsOf, mergeInstructions } from "./instructions";
import { type CompactionView, type SessionState, type TerminalView, type ToolCard, type UsageView, TERMINAL_KEEP_CHARS } from "./state";
import { appendCapped } from "./terminalText";
import { unpricedResponses } from "./usage";
import { endsWait, modelWaitOf } from "./waiting";

/** Where a nested call (a Code Mode program's sub-call) names the call that made it. */
export const PARENT_KEY = "parentToolCallId";

export function applyEvent(state: SessionState, event: SessionEvent): Change {
  const change = applyEventOnly(state, event);
  // The model is talking again, or the turn is over: the waiting line goes.
  const over = event.type === "update" ? endsWait(event.update) : ["userPrompt", "turnEnded", "turnCancelled", "sessionStarted", "viewRestored"].includes(event.type);
  if (over && state.waiting) {
    state.waiting = undefined;
    return { ...change, waiting: true };
  }
  return change;
}

function applyEventOnly(state: SessionState, event: SessionEvent): Change {
  switch (event.type) {
    case "connection":
      state.connection = { status: event.status, agentName: event.agentName, error: event.error, failure: event.failure };
      if (event.status !== "ready") state.running = false;
      return { header: true };
    case "agentInfo":
      state.agent = event.agent;
      return { header: true };
    case "sessionStarted":
      Object.assign(state, {
        sessionId: event.sessionId,
        cwd: event.cwd,
        title: undefined,
        titleFromAgent: false,
        running: false,
        prompting: false,
        steers: [],
        stopReason: undefined,
        timeline: [],
        cards: {},
        terminals: {},
        plan: [],
        modes: event.modes ?? null,
        configOptions: event.configOptions ?? [],
        commands: [],
        usage: undefined,
        canLoadSessions: event.canLoadSessions ?? state.canLoadSessions,
        checkpoints: event.checkpoints ?? false,
        instructions: undefined,
        promptItemId: undefined,
      });
      return { reset: true, header: true, plan: true, timeline: true };
    case "update":
      return applyUpdate(state, event.update);
    case "userPrompt": {
      const id = newItemId(state);
      const plan = retireFinishedPlan(state);
      state.timeline.push({ type: "user", id, text: event.text, blocks: event.blocks ?? [] });
      state.promptItemId = id;
      titleFromPrompt(state, event.text);
      state.running = true;
      state.prompting = true;
      state.stopReason = undefined;
      return { timeline: true, header: true, plan };
    }
    case "turnEnded": {
      state.prompting = false;
      const change = endIfAnswered(state, event.stopReason);
      // The prompt's answer numbers its turn: its message can now restore the files to before it.
      const item = state.timeline.find((i) => i.id === state.promptItemId);
      state.promptItemId = undefined;
      if (item?.type === "user" && event.turn !== undefined) {
        item.turn = event.turn;
        merge(change, { items: [item.id] });
      }
      return change;
    }
    case "steerSent":
      state.steers.push({ messageId: event.messageId, text: event.text, blocks: event.blocks ?? [], landed: false });
      state.running = true;
      return { steers: true, header: true };
    case "steerAnswered": {
      const at = state.steers.findIndex((m) => m.messageId === event.messageId);
      if (at < 0) return {};
      const [steer] = state.steers.splice(at, 1);
      const change: Change = { steers: true };
      if (!steer!.landed) {
        // Never echoed: refused (said so), or taken by an agent that does not say where (shown last).
        if (event.error !== undefined) merge(change, pushNotice(state, "error", `Not sent: “${oneLine(steer!.text)}”: ${event.error}`));
        else {
          state.timeline.push({ type: "user", id: newItemId(state), messageId: steer!.messageId, text: steer!.text, blocks: steer!.blocks, steered: true });
          change.timeline = true;
        }
      }
      return merge(change, endIfAnswered(state, event.stopReason ?? "error"));
    }
    case "turnCancelled":
      return { cards: cancelUnfinished(state) };
    case "permissionRequested": {
      const change = upsertCard(state, event.toolCall, false);
      const card = state.cards[event.toolCall.toolCallId];
      if (card) card.permission = { requestId: event.requestId, options: event.options };
      return change;
    }
    case "permissionResolved": {
      for (const card of Object.values(state.cards)) {
        if (card.permission?.requestId === event.requestId) {
          card.permission.outcome = event.outcome;
          if (event.feedback) card.permission.feedback = event.feedback;
          return { cards: [card.toolCallId] };
        }
      }
      return {};
    }
    case "questionAsked":
      state.timeline.push({ type: "question", id: event.requestId, message: event.message, schema: event.schema, toolCallId: event.toolCallId });
      return { timeline: true };
    case "questionAnswered": {
      const item = state.timeline.find((i) => i.type === "question" && i.id === event.requestId);
      if (!item || item.type !== "question" || item.answer) return {};
      item.answer = { action: event.action, ...(event.content ? { content: event.content } : {}) };
      return { items: [item.id] };
    }
    case "answerRestored": {
      const card = state.cards[event.toolCallId];
      if (!card || card.permission) return {};
      card.permission = { requestId: `restored:${event.toolCallId}`, options: [], outcome: "restored", label: event.label, kind: event.kind, feedback: event.feedback };
      return { cards: [card.toolCallId] };
    }
    case "viewRestored": {
      const v = event.view;
      Object.assign(state, {
        title: v.title,
        titleFromAgent: v.titleFromAgent,
        timeline: v.timeline,
        cards: v.cards,
        terminals: v.terminals,
        plan: v.plan,
        usage: v.usage,
        instructions: v.instructions,
        promptItemId: undefined,
        nextItemId: Math.max(state.nextItemId, v.nextItemId),
        running: false,
        prompting: false,
        steers: [],
      });
      // Questions that were open when the view was kept died with that connection.
      for (const card of Object.values(state.cards)) if (card.permission && card.permission.outcome === undefined) card.permission.outcome = "cancelled";
      for (const item of state.timeline) if (item.type === "question" && !item.answer) item.answer = { action: "cancel" };
      return { reset: true, header: true, plan: true, timeline: true };
    }
    case "stopRequested":
    case "stopAnswered": {
      const card = state.cards[event.toolCallId];
      if (!card) return {};
      // Stopped (or ended meanwhile): the card says "Stopping…" until the agent's own update ends it.
      if (event.type === "stopRequested") card.stop = { state: "stopping" };
      else if (event.reason !== undefined) card.stop = { state: "failed", reason: event.reason };
      return { cards: [card.toolCallId] };
    }
    case "restored": {
      const { type: _, ...result } = event;
      state.timeline.push({ type: "restore", id: newItemId(state), ...result });
      const change: Change = { timeline: true };
      const card = event.toolCallId === undefined ? undefined : state.cards[event.toolCallId];
      if (card && event.path !== undefined) {
        const done = event.status === "restored" || event.status === "nothing";
        const reason = event.error ?? (event.conflicts.length > 0 ? "The file was changed since: it was left as it is." : "Not reverted.");
        (card.reverted ??= {})[event.path] = done ? { state: "undone" } : { state: "failed", reason };
        change.cards = [card.toolCallId];
      }
      return change;
    }
    case "editUndone":
    case "undoFailed": {
      const card = state.cards[event.toolCallId];
      if (!card) return {};
      card.undo = event.type === "editUndone" ? { state: "undone" } : { state: "failed", reason: event.reason };
      return { cards: [card.toolCallId] };
    }
    case "terminalStarted":
      ensureTerminal(state, event.terminalId, event.command, event.cwd);
      return { terminals: [event.terminalId] };
    case "terminalOutput":
      appendCapped(ensureTerminal(state, event.terminalId), event.data, TERMINAL_KEEP_CHARS);
      return { terminals: [event.terminalId] };
    case "terminalExited":
      ensureTerminal(state, event.terminalId).exit = { exitCode: event.exitCode, signal: event.signal };
      return { terminals: [event.terminalId] };
    case "configOptions":
      state.configOptions = event.configOptions;
      return { header: true };
    case "modeChanged":
      if (state.modes) state.modes.currentModeId = event.modeId;
      return { header: true };
    case "modes":
      state.modes = event.modes;
      return { header: true };
    case "follow":
      state.follow = event.enabled;
      return { header: true };
    case "auth":
      state.auth = event.auth;
      return { header: true };
    case "error":
      return pushNotice(state, "error", event.message);
    case "notice":
      return pushNotice(state, event.severity, event.text);
  }
}

function applyUpdate(state: SessionState, update: SessionUpdate): Change {
  switch (update.sessionUpdate) {
    case "user_message_chunk": {
      const steer = update.messageId == null ? undefined : state.steers.find((m) => m.messageId === update.messageId && !m.landed);
      if (!steer) return numberTurn(state, update._meta, appendChunk(state, "user", update.content, update.messageId));
      // A message sent while the agent worked, echoed where it landed: it leaves the footer for there.
      steer.landed = true;
      const change = appendChunk(state, "user", update.content, update.messageId);
      const item = state.timeline[state.timeline.length - 1];
      if (item?.type === "user") item.steered = true;
      return { ...change, steers: true };
    }
    case "agent_message_chunk":
      return appendChunk(state, "agent", update.content, update.messageId);
    case "agent_thought_chunk":
      return appendChunk(state, "thought", update.content, update.messageId);
    case "tool_call":
      return upsertCard(state, update, true);
    case "tool_call_update":
      return upsertCard(state, update, false);
    case "plan":
      state.plan = update.entries;
      return { plan: true };
    case "available_commands_update":
      state.commands = update.availableCommands;
      return { header: true };
    case "current_mode_update":
      if (state.modes) state.modes.currentModeId = update.currentModeId;
      return { header: true };
    case "config_option_update":
      state.configOptions = update.configOptions;
      return { header: true };
    case "session_info_update":
      if (update.title !== undefined) {
        state.title = update.title ?? undefined;
        state.titleFromAgent = true;
      }
      return { header: true };
    case "usage_update": {
      const usage: UsageView = { used: update.used, size: update.size };
      if (update.cost) usage.cost = { amount: update.cost.amount, currency: update.cost.currency };
      const unpriced = unpricedResponses(update._meta);
      if (unpriced) usage.unpriced = unpriced;
      state.usage = usage;
      return { header: true };
    }
    case "notice": {
      const instructions = instructionsOf(update);
      if (instructions) {
        // The files the agent follows are a line in the header; only a change mid-session is history too.
        state.instructions = mergeInstructions(state.instructions, instructions);
        const change: Change = { header: true };
        return instructions.event === "loaded" ? change : merge(change, pushNotice(state, update.severity, update.description ? `${update.title}: ${update.description}` : update.title));
      }
      const wait = modelWaitOf(update);
      if (wait) {
        // A wait is a state, not history: one line while it lasts (with Cancel), never a timeline entry.
        state.waiting = { text: update.title, reason: wait.reason };
        return { waiting: true };
      }
      return pushNotice(state, update.severity, update.description ? `${update.title}: ${update.description}` : update.title);
    }
    case "compaction_update": {
      const { item, change } = compactionItem(state, update.compactionId);
      item.status = update.status;
      // Patch semantics: a field left out stays, null (or an empty summary) clears it.
      if (update.summary !== undefined) item.summary = update.summary ?? [];
      if (update.error !== undefined) item.error = update.error ?? undefined;
      if (update._meta !== undefined) item.meta = update._meta ?? undefined;
      return change;
    }
    case "compaction_summary_chunk": {
      const { item, change } = compactionItem(state, update.compactionId);
      item.summary.push(update.content);
      return change;
    }
    default:
      return {};
  }
}

/** The timeline entry of compaction `compactionId`, created (in progress) where it is first heard of. */
function compactionItem(state: SessionState, compactionId: string): { item: CompactionView; change: Change } {
  const found = state.timeline.find((i): i is CompactionView => i.type === "compaction" && i.compactionId === compactionId);
  if (found) return { item: found, change: { items: [found.id] } };
  const item: CompactionView = { type: "compaction", id: newItemId(state), compactionId, status: "in_progress", summary: [] };
  state.timeline.push(item);
  return { item, change: { timeline: true } };
}

/** The turn is over once its prompt and every message sent meanwhile are answered. */
function endIfAnswered(state: SessionState, stopReason: string): Change {
  if (state.prompting || state.steers.length > 0) return {};
  state.running = false;
  state.stopReason = stopReason;
  const cards = stopReason === "cancelled" ? cancelUnfinished(state) : [];
  return { header: true, cards };
}

/**
 * The turn a replayed user message started (`_meta.acpBridge.turn` on its first chunk, as `session/load`
 * sends it), put on the message the chunk went into.
 */
function numberTurn(state: SessionState, meta: Record<string, unknown> | null | undefined, change: Change): Change {
  const { turn } = turnOf(meta);
  const item = state.timeline[state.timeline.length - 1];
  if (turn !== undefined && item?.type === "user") item.turn = turn;
  return change;
}

function merge(into: Change, more: Change): Change {
  for (const key of ["header", "timeline", "reset", "plan", "steers"] as const) if (more[key]) into[key] = true;
  for (const key of ["items", "cards", "terminals"] as const) if (more[key]?.length) into[key] = [...(into[key] ?? []), ...more[key]!];
  return into;
}

function oneLine(text: string): string {
  const line = text.split(/\s+/).filter(Boolean).join(" ");
  return line.length <= 60 ? line : `${line.slice(0, 59)}…`;
}

function newItemId(state: SessionState): string {
  return `i${state.nextItemId++}`;
}

function pushNotice(state: SessionState, severity: string, text: string): Change {
  state.timeline.push({ type: "notice", id: newItemId(state), severity, text });
  return { timeline: true };
}

function appendChunk(
  state: SessionState,
  type: "user" | "agent" | "thought",
  content: ContentBlock,
  messageId: string | null | undefined,
): Change {
  const last = state.timeline[state.timeline.length - 1];
  const sameMessage = last && last.type === type && (messageId == null || last.messageId === messageId);
  if (sameMessage) {
    addBlock(last, content);
    return { items: [last.id] };
  }
  const plan = type === "user" ? retireFinishedPlan(state) : false;
  const item = { type, id: newItemId(state), messageId: messageId ?? undefined, text: "", blocks: [] };
  addBlock(item, content);
  state.timeline.push(item);
  if (type === "user") titleFromPrompt(state, item.text);
  return { timeline: true, plan, header: type === "user" };
}

/** Until the agent names the session (`session_info_update`), its first prompt does, as in `session/list`. */
function titleFromPrompt(state: SessionState, text: string): void {
  if (state.titleFromAgent || state.timeline.filter((i) => i.type === "user").length !== 1) return;
  const oneLine = text.split(/\s+/).filter(Boolean).join(" ");
  if (oneLine) state.title = oneLine.length <= 80 ? oneLine : `${oneLine.slice(0, 79)}…`;
}

/** A plan whose every entry is done leaves the footer when the next prompt starts: it belonged to the last turn. */
function retireFinishedPlan(state: SessionState): boolean {
  if (state.plan.length === 0 || state.plan.some((e) => e.status !== "completed")) return false;
  state.plan = [];
  return true;
}

function addBlock(item: { text: string; blocks: ContentBlock[] }, content: ContentBlock): void {
  if (content.type === "text") item.text += content.text;
  else item.blocks.push(content);
}

/** tool_call (isNew) replaces every field it carries with defaults for the rest; tool_call_update patches. */
function upsertCard(state: SessionState, u: ToolCallUpdate & { _meta?: Record<string, unknown> | null }, isNew: boolean): Change {
  let card = state.cards[u.toolCallId];
  const meta = u._meta ?? undefined;
  // A command's output streaming in (thousands of updates for a chatty one) changes its terminal only:
  // the card is not redrawn for it.
  if (card && !isNew && meta && onlyOutput(u, meta)) return { terminals: applyTerminalMeta(state, card, meta, false) };
  const change: Change = { cards: [u.toolCallId] };
  if (!card) {
    card = { toolCallId: u.toolCallId, title: u.title ?? "Tool call", kind: "other", status: "pending", content: [], locations: [] };
    state.cards[u.toolCallId] = card;
    const parent = parentCard(state, meta, u.toolCallId);
    if (parent) {
      // A sub-call lives inside its program's card, not in the timeline.
      card.parentId = parent.toolCallId;
      (parent.children ??= []).push(card.toolCallId);
      change.cards!.push(parent.toolCallId);
    } else {
      state.timeline.push({ type: "tool", id: u.toolCallId });
      change.timeline = true;
    }
  }
  patchCard(card, u, isNew);
  if (meta) {
    const bridge = asRecord(meta.acpBridge);
    if (typeof bridge?.tool === "string") card.tool = bridge.tool;
    if (typeof bridge?.note === "string" && bridge.note.trim()) card.note = bridge.note.trim();
    change.terminals = applyTerminalMeta(state, card, meta, isNew);
  }
  return change;
}

/** The known card named by `_meta.parentToolCallId` (never the card itself): unknown → top level. */
function parentCard(state: SessionState, meta: Record<string, unknown> | undefined, id: string): ToolCard | undefined {
  const parentId = meta?.[PARENT_KEY];
  if (typeof parentId !== "string" || parentId === id) return undefined;
  return state.cards[parentId];
}

/** An update that carries nothing but `_meta.terminal_output`. */
function onlyOutput(u: ToolCallUpdate, meta: Record<string, unknown>): boolean {
  for (const [key, value] of Object.entries(u)) if (key !== "sessionUpdate" && key !== "toolCallId" && key !== "_meta" && value != null) return false;
  for (const key of Object.keys(meta)) if (key !== "terminal_output") return false;
  return true;
}

function patchCard(card: ToolCard, u: ToolCallUpdate, isNew: boolean): void {
  if (u.title != null) card.title = u.title;
  if (u.kind != null) card.kind = u.kind;
  else if (isNew) card.kind = "other";
  if (u.status != null) card.status = u.status;
  if (u.name != null) card.name = u.name;
  if (u.content != null) {
    // ACP replaces content; a failed edit's update (a rejection) drops the diff, which the card keeps to
    // show what was proposed and not applied.
    const diffs = card.content.filter((c) => c.type === "diff");
    if (diffs.length > 0 && !u.content.some((c) => c.type === "diff")) card.proposed = diffs;
    else if (u.content.some((c) => c.type === "diff")) card.proposed = undefined;
    card.content = u.content;
  }
  if (u.locations != null) card.locations = u.locations;
  if (u.rawInput != null) card.rawInput = u.rawInput;
  if (u.rawOutput != null) card.rawOutput = u.rawOutput;
}

function applyTerminalMeta(state: SessionState, card: ToolCard, meta: Record<string, unknown>, isNew: boolean): string[] {
  const touched: string[] = [];
  const info = asRecord(meta.terminal_info);
  if (isNew && info && typeof info.terminal_id === "string") {
    ensureTerminal(state, info.terminal_id, card.title, typeof info.cwd === "string" ? info.cwd : undefined);
    card.metaTerminalId = info.terminal_id;
    touched.push(info.terminal_id);
  }
  const out = asRecord(meta.terminal_output);
  if (out && typeof out.terminal_id === "string" && typeof out.data === "string") {
    appendCapped(ensureTerminal(state, out.terminal_id), withoutNote(out.data, asRecord(meta.acpBridge)?.note), TERMINAL_KEEP_CHARS);
    touched.push(out.terminal_id);
  }
  const exit = asRecord(meta.terminal_exit);
  if (exit && typeof exit.terminal_id === "string") {
    const code = typeof exit.exit_code === "number" ? exit.exit_code : null;
    const signal = typeof exit.signal === "string" ? exit.signal : null;
    ensureTerminal(state, exit.terminal_id).exit = { exitCode: code, signal };
    touched.push(exit.terminal_id);
  }
  return touched;
}

/**
 * The bridge also writes a card's note (e.g. "Allowed by your rule …") as the last line of the terminal
 * data, for clients that show only the terminal; this view shows the note on the card, so the terminal
 * keeps only what the command printed.
 */
function withoutNote(data: string, note: unknown): string {
  if (typeof note !== "string" || !note.trim()) return data;
  for (const tail of [`${note}\r\n`, `${note}\n`, note]) if (data.endsWith(tail)) return data.slice(0, data.length - tail.length);
  return data;
}

function ensureTerminal(state: SessionState, terminalId: string, command?: string, cwd?: string): TerminalView {
  let t = state.terminals[terminalId];
  if (!t) {
    t = { terminalId, output: "", droppedChars: 0, totalChars: 0 };
    state.terminals[terminalId] = t;
  }
  if (command !== undefined) t.command = command;
  if (cwd !== undefined) t.cwd = cwd;
  return t;
}

/** Cards a cancelled turn leaves unfinished; a background command runs on (the agent stops only the turn). */
function cancelUnfinished(state: SessionState): string[] {
  const ids: string[] = [];
  for (const card of Object.values(state.cards)) {
    if (card.status === "in_progress" && isBackgroundCommand(card)) continue;
    if (card.status === "pending" || card.status === "in_progress") {
      card.status = "cancelled";
      ids.push(card.toolCallId);
    }
  }
  return ids;
}

function asRecord(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** The terminals a card shows: those embedded as content blocks, then the `_meta` one if not embedded. */
export function cardTerminalIds(card: ToolCard): string[] {
  const ids = card.content.flatMap((c) => (c.type === "terminal" ? [c.terminalId] : []));
  if (card.metaTerminalId && !ids.includes(card.metaTerminalId)) ids.push(card.metaTerminalId);
  return ids;
}
