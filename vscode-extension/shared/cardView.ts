/**
 * How a tool card presents itself, as pure decisions the webview renders and the tests check: its
 * outcome badge (a command's exit status is its outcome), whether it is a plan update (shown as one
 * line, the plan itself lives in the footer), whether its body starts collapsed, and how its approval
 * options are laid out (the one-time choices first, "always" ones apart and quieter).
 */
import type { PermissionOption, ToolCallContent } from "./acp";
import type { SessionState, TerminalView, ToolCard } from "./state";
import { cardTerminalIds } from "./reducer";
import { exitBadge, type ExitTone } from "./terminalText";

export type OutcomeTone = "ok" | "bad" | "stopped" | "running" | "pending" | "attention";

export interface Outcome {
  text: string;
  tone: OutcomeTone;
}

/** Whether the card waits for the user's answer. */
export function isAwaiting(card: ToolCard): boolean {
  return !!card.permission && card.permission.outcome === undefined;
}

export function wasRejected(card: ToolCard): boolean {
  const p = card.permission;
  if (!p || p.outcome === undefined || p.outcome === "cancelled") return false;
  const kind = p.kind ?? p.options.find((o) => o.optionId === p.outcome)?.kind;
  return kind === "reject_once" || kind === "reject_always";
}

/**
 * The badge: awaiting approval, running, the exit status of a finished command when it is not 0 (a
 * command that exits 1 did not succeed, whatever the call's status; the bridge ends such a card
 * `failed`, its `rawOutput` saying the command ran: no error of the tool), rejected, undone, else the
 * status.
 */
export function cardOutcome(card: ToolCard, terminals: Record<string, TerminalView>): Outcome {
  if (isAwaiting(card)) return { text: "awaiting approval", tone: "attention" };
  if (card.undo?.state === "undone") return { text: "undone", tone: "stopped" };
  if (card.status === "pending") return { text: "pending", tone: "pending" };
  if (card.status === "in_progress") return { text: "running", tone: "running" };
  if (card.status === "cancelled") return { text: "cancelled", tone: "stopped" };
  const exit = commandExit(card, terminals);
  const exitedBadly = !!exit && (!!exit.signal || (exit.exitCode !== null && exit.exitCode !== 0));
  if (card.status === "failed") {
    if (wasRejected(card)) return { text: "rejected", tone: "bad" };
    // A command that ran to a non-zero exit (not stopped, not refused): its exit is the outcome.
    if (exitedBadly && ranToItsEnd(card)) return { text: exitBadge(exit).text, tone: "bad" };
    return { text: "failed", tone: "bad" };
  }
  if (exitedBadly) return { text: exitBadge(exit).text, tone: "bad" };
  return { text: "completed", tone: "ok" };
}

/** The agent's `rawOutput` says the call itself succeeded (`isError: false`): what failed is the command. */
function ranToItsEnd(card: ToolCard): boolean {
  const raw = card.rawOutput;
  return typeof raw === "object" && raw !== null && (raw as { isError?: unknown }).isError === false;
}

/**
 * A terminal's badge on its card: its exit once it has one; before that "running" only while the card
 * runs. A card that waits for approval (or is pending) has run nothing yet: "not started". A finished
 * card whose terminal never reported an exit says "stopped".
 */
export function terminalBadge(exit: TerminalView["exit"], card: ToolCard | undefined): { text: string; tone: ExitTone } {
  if (exit) return exitBadge(exit);
  if (card && (isAwaiting(card) || card.status === "pending")) return { text: "not started", tone: "pending" };
  if (card && card.status !== "in_progress") return { text: "stopped", tone: "stopped" };
  return exitBadge(undefined);
}

/** A finished command's exit: from its terminal, else from the agent's raw output (`exitCode`, `signal`). */
function commandExit(card: ToolCard, terminals: Record<string, TerminalView>): { exitCode: number | null; signal: string | null } | undefined {
  for (const id of cardTerminalIds(card)) {
    const exit = terminals[id]?.exit;
    if (exit) return exit;
  }
  const raw = card.rawOutput;
  if (typeof raw === "object" && raw !== null && "exitCode" in raw) {
    const r = raw as { exitCode?: unknown; signal?: unknown };
    const code = typeof r.exitCode === "number" ? r.exitCode : null;
    const signal = typeof r.signal === "string" ? r.signal : null;
    if (code !== null || signal !== null) return { exitCode: code, signal };
  }
  return undefined;
}

/** A plan update (`todo_write`): the plan shows in the footer, so its card is a single line. */
export function isPlanCard(card: ToolCard): boolean {
  return card.tool === "todo_write" || (card.kind === "think" && card.title === "Update plan");
}

/** Bodies longer than this many lines start collapsed for reads, searches and fetches. */
export const LONG_BODY_LINES = 12;

/**
 * Whether a card's body starts collapsed: a finished read, search or fetch with a long body (its
 * header and locations stay, the text is one click away). Edits, commands and anything awaiting an
 * answer stay open.
 */
export function startsCollapsed(card: ToolCard): boolean {
  if (isAwaiting(card) || card.status === "pending" || card.status === "in_progress") return false;
  if (!["read", "search", "fetch"].includes(card.kind)) return false;
  let lines = 0;
  for (const c of card.content) {
    if (c.type !== "content") continue;
    const b = c.content;
    const text = b.type === "text" ? b.text : b.type === "resource" && "text" in b.resource ? b.resource.text : "";
    lines += text.split("\n").length;
  }
  return lines > LONG_BODY_LINES;
}

export interface ApprovalLayout {
  /** Shown as buttons: allow once (the primary action) then reject once. */
  main: PermissionOption[];
  /** The "always" choices, behind a disclosure: they outlive this one call. */
  always: PermissionOption[];
  /** The option a typed reason goes with (`_meta.feedback`). */
  reject?: PermissionOption;
}

export function approvalLayout(options: readonly PermissionOption[]): ApprovalLayout {
  const order = { allow_once: 0, reject_once: 1, allow_always: 2, reject_always: 3 } as const;
  const sorted = [...options].sort((a, b) => (order[a.kind] ?? 9) - (order[b.kind] ?? 9));
  const main = sorted.filter((o) => o.kind === "allow_once" || o.kind === "reject_once");
  const always = sorted.filter((o) => o.kind === "allow_always" || o.kind === "reject_always");
  // An agent that offers only "always" options still gets buttons.
  if (main.length === 0) return { main: always, always: [], reject: always.find((o) => o.kind.startsWith("reject")) };
  return { main, always, reject: sorted.find((o) => o.kind === "reject_once") ?? sorted.find((o) => o.kind === "reject_always") };
}

/**
 * A choice's label on a button or a notification link. The one-time choices in two words; an "always"
 * choice outlives the call, so its label says what it covers: the agent's own name for it when that
 * names more than the kind ("Always allow `ls` commands (this session)"), else the kind's words with
 * the scope the option carries as data (`_meta.acpBridge.scope`), else the name as it is.
 */
export function choiceLabel(option: PermissionOption): string {
  switch (option.kind) {
    case "allow_once":
      return "Allow once";
    case "reject_once":
      return "Reject";
    case "allow_always":
    case "reject_always": {
      const words = option.kind === "allow_always" ? "Always allow" : "Always reject";
      const name = option.name.trim();
      if (name && !isBareKind(name)) return name;
      const scope = optionScope(option);
      return scope ? `${words} ${scope}` : name || words;
    }
    default:
      return option.name;
  }
}

/** A name that only repeats its kind ("Always Allow", "allow always"): it says nothing of a scope. */
function isBareKind(name: string): boolean {
  const words = name.toLowerCase().replace(/[^a-z ]/g, " ").split(/\s+/).filter(Boolean).sort().join(" ");
  return ["always", "allow always", "always reject", "always deny"].includes(words);
}

/** The scope an "always" option is remembered for, as the bridge sends it (`_meta.acpBridge.scope`). */
export function optionScope(option: PermissionOption): string | undefined {
  const meta = option._meta as Record<string, unknown> | null | undefined;
  const bridge = meta?.acpBridge;
  const scope = typeof bridge === "object" && bridge !== null ? (bridge as { scope?: unknown }).scope : undefined;
  return typeof scope === "string" && scope.trim() ? scope.trim() : undefined;
}

/** The words of an answer on a card: "Allowed once", "Rejected: too risky", "Cancelled". */
export function answerText(card: ToolCard): string | undefined {
  const p = card.permission;
  if (!p || p.outcome === undefined) return undefined;
  const reason = p.feedback ? `: ${p.feedback}` : "";
  if (p.label) return `${p.label}${reason}`;
  if (p.outcome === "cancelled") return "Cancelled";
  const option = p.options.find((o) => o.optionId === p.outcome);
  return `${option?.name ?? p.outcome}${reason}`;
}

/** Cards waiting for an answer, oldest first. */
export function pendingApprovals(state: SessionState): ToolCard[] {
  return cardsInOrder(state).filter(isAwaiting);
}

/** Every card in the order the view shows them: each timeline card followed by its nested calls. */
export function cardsInOrder(state: SessionState): ToolCard[] {
  const out: ToolCard[] = [];
  const visit = (id: string) => {
    const card = state.cards[id];
    if (!card) return;
    out.push(card);
    for (const child of card.children ?? []) visit(child);
  };
  for (const item of state.timeline) if (item.type === "tool") visit(item.id);
  return out;
}

/** The text block a program's card lists its nested calls in ("2 tool calls:\n1. ✓ Read a.txt…"). */
export function isNestedCallList(c: ToolCallContent): boolean {
  return c.type === "content" && c.content.type === "text" && /^\d+ tool calls?:\n/.test(c.content.text);
}

/** A subagent's card (the `task` tool): its calls are many and its own, so they start folded. */
export function isTaskCard(card: ToolCard): boolean {
  return card.tool === "task" || card.name === "task";
}

export interface NestedFold {
  /** How many calls the card made. */
  count: number;
  /** How many of them still run or wait. */
  running: number;
  /** How many failed. */
  failed: number;
  /** Folded unless the user opened it: a task's calls start folded, a Code Mode program's open. */
  startsCollapsed: boolean;
  /** A call inside waits for the user's answer: the fold stays open whatever the user chose. */
  forcedOpen: boolean;
}

/**
 * The fold of a card's nested calls (any card that made calls: `_meta.parentToolCallId` names it): a
 * summary line ("12 calls · 1 running") that opens to the calls' own cards. Counts are of the direct
 * calls; a waiting approval anywhere below keeps it open.
 */
export function nestedFold(state: SessionState, card: ToolCard): NestedFold | undefined {
  const ids = card.children ?? [];
  if (ids.length === 0) return undefined;
  const children = ids.map((id) => state.cards[id]).filter((c): c is ToolCard => c !== undefined);
  return {
    count: ids.length,
    running: children.filter((c) => c.status === "pending" || c.status === "in_progress").length,
    failed: children.filter((c) => c.status === "failed").length,
    startsCollapsed: isTaskCard(card),
    forcedOpen: hasAwaitingBelow(state, card),
  };
}

/** "3 calls · 1 running · 1 failed". */
export function nestedFoldText(fold: NestedFold): string {
  const parts = [`${fold.count} call${fold.count === 1 ? "" : "s"}`];
  if (fold.running) parts.push(`${fold.running} running`);
  if (fold.failed) parts.push(`${fold.failed} failed`);
  return parts.join(" · ");
}

function hasAwaitingBelow(state: SessionState, card: ToolCard): boolean {
  return (card.children ?? []).some((id) => {
    const child = state.cards[id];
    return !!child && (isAwaiting(child) || hasAwaitingBelow(state, child));
  });
}
