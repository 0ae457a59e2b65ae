/**
 * The agent's plan (`plan` updates replace it whole): one row per entry with status and priority, in
 * the footer. Collapsed to its summary line while an approval is pending, so the question keeps the room.
 */
import type { PlanEntry } from "../shared/acp";
import { h } from "./dom";

const MARK: Record<PlanEntry["status"], string> = { pending: "○", in_progress: "◐", completed: "●" };

export function renderPlan(el: HTMLElement, entries: PlanEntry[], compact = false): void {
  if (entries.length === 0) {
    el.hidden = true;
    el.replaceChildren();
    return;
  }
  el.hidden = false;
  const done = entries.filter((e) => e.status === "completed").length;
  const list = h("ol", { class: "plan-list" });
  for (const e of entries) {
    list.append(
      h("li", { class: `plan-entry plan-${e.status} priority-${e.priority}` }, h("span", { class: "plan-mark", "aria-label": e.status }, MARK[e.status]), h("span", { class: "plan-text" }, e.content)),
    );
  }
  el.replaceChildren(h("details", { open: !compact }, h("summary", {}, `Plan (${done}/${entries.length})`), list));
}
