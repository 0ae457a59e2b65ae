/**
 * Checkpoints (the bridge's `_acpBridge/rewind` and `_acpBridge/revertFile`): the agent records the files
 * of the session's roots before each turn and each write, and can put them back. The view offers
 * "Restore to before this turn" on a user message whose turn the agent numbered, and "Revert this file"
 * on a finished card's diff, only when the agent advertises `agentCapabilities._meta.acpBridge.checkpoints`.
 * What a restore did is one timeline entry (RestoreView). Neither is offered while the agent works: the
 * host refuses then (the turn's own writes would race the restore), so the buttons need no redraw when
 * a turn starts or ends.
 *
 * The answer of both methods: `{status: "restored" | "conflict" | "nothing", restored: [{path, action}],
 * conflicts: [{path, reason}]}`; "conflict" means a file was changed since by someone other than the agent
 * and nothing was written (the client may ask again with `force: true`).
 */
import type { RestoreOutcome, RestoreView, SessionState, TimelineItem, ToolCard } from "./state";

export type RestoreResult = Pick<RestoreOutcome, "status" | "restored" | "conflicts">;

/** The agent's number for a prompt's turn (`_meta.acpBridge.turn` of its answer, or of a replayed message's first chunk). */
export function turnOf(meta: unknown): { turn?: number } {
  const turn = record(record(meta)?.acpBridge)?.turn;
  return typeof turn === "number" && Number.isInteger(turn) && turn > 0 ? { turn } : {};
}

/** Whether the agent's `initialize` answer advertises checkpoints. */
export function advertisesCheckpoints(agentCapabilities: unknown): boolean {
  const meta = record(record(agentCapabilities)?._meta);
  return record(meta?.acpBridge)?.checkpoints === true;
}

/** A rewind or revertFile answer, read leniently (entries that are not what the contract says are left out). */
export function readRestoreResult(raw: unknown): RestoreResult {
  const r = record(raw);
  const list = (v: unknown) => (Array.isArray(v) ? v.map(record).filter((e): e is Record<string, unknown> => typeof e?.path === "string") : []);
  return {
    status: typeof r?.status === "string" ? r.status : "nothing",
    restored: list(r?.restored).map((e) => ({ path: e.path as string, action: typeof e.action === "string" ? e.action : "restored" })),
    conflicts: list(r?.conflicts).map((e) => ({ path: e.path as string, reason: typeof e.reason === "string" ? e.reason : "changed since" })),
  };
}

/** "Restore to before this turn" is offered on this message: the agent numbered its turn and keeps checkpoints. */
export function canRestoreTurn(state: SessionState, item: TimelineItem): boolean {
  return !!state.checkpoints && item.type === "user" && item.turn !== undefined;
}

/** "Revert this file" is offered on a diff of this card: a finished call's change, with checkpoints. */
export function canRevertFile(state: SessionState, card: ToolCard, path: string): boolean {
  if (!state.checkpoints) return false;
  if (card.status !== "completed" && card.status !== "failed") return false;
  if (card.permission && card.permission.outcome === undefined) return false;
  return card.reverted?.[path]?.state !== "undone";
}

const ACTIONS: Record<string, string> = { removed: "removed (the turn created it)", restored: "restored", recreated: "recreated (it had been deleted)" };

/** What a restore did, in words: a headline and one line per file. */
export function restoreText(item: RestoreView): { title: string; lines: Array<{ path: string; text: string }> } {
  const what = item.turn !== undefined ? `to before turn ${item.turn}` : "this file";
  if (item.status === "failed") return { title: `Could not restore ${what}: ${item.error ?? "the agent refused"}`, lines: [] };
  if (item.status === "conflict") {
    return { title: `Not restored ${what}: changed since by someone other than the agent`, lines: item.conflicts.map((c) => ({ path: c.path, text: c.reason })) };
  }
  if (item.status === "nothing" || item.restored.length === 0) return { title: item.turn !== undefined ? `Nothing to restore: no file changed since turn ${item.turn} began` : "Nothing to revert: the file is already as it was", lines: [] };
  const n = item.restored.length;
  const title = item.turn !== undefined ? `Restored to before turn ${item.turn}: ${n} file${n === 1 ? "" : "s"}` : "File reverted";
  return { title, lines: item.restored.map((f) => ({ path: f.path, text: ACTIONS[f.action] ?? f.action })) };
}

function record(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}
