/**
 * Background commands (`bash` with `run_in_background: true`): the call returns at once and its card stays
 * live, streaming the command's output, until the command ends, after the turn if need be. A cancelled
 * turn leaves such a command running, so its card stays live too; the card's **Stop** asks the agent to
 * end it (`_acpBridge/killBackground`, the command's id being the id of the call that started it).
 */
import type { ToolCard } from "./state";

/** The call started a command that runs in the background (`rawInput.run_in_background`). */
export function isBackgroundCommand(card: ToolCard): boolean {
  const raw = card.rawInput;
  return typeof raw === "object" && raw !== null && (raw as { run_in_background?: unknown }).run_in_background === true;
}

/** What the card's Stop control shows: nothing (the command is not running), the button, or "stopping". */
export function stopControl(card: ToolCard): "none" | "stop" | "stopping" {
  const awaiting = card.permission !== undefined && card.permission.outcome === undefined;
  if (!isBackgroundCommand(card) || card.status !== "in_progress" || awaiting) return "none";
  return card.stop?.state === "stopping" ? "stopping" : "stop";
}
