/**
 * The waiting line: while the model keeps the prompt waiting ("Waiting for the model for 40 s", "Rate
 * limited, retrying in 2 s (attempt 1 of 3)"), one line in the footer, above the prompt, with Cancel
 * (the turn's cancel: a retry's wait ends at once). It goes as soon as the model talks again or the
 * turn ends.
 */
import type { SessionState } from "../shared/state";
import { h } from "./dom";
import { send } from "./vscodeApi";

export function renderWaiting(el: HTMLElement, state: SessionState): void {
  const waiting = state.running ? state.waiting : undefined;
  el.hidden = !waiting;
  if (!waiting) {
    el.replaceChildren();
    return;
  }
  el.dataset.reason = waiting.reason;
  el.replaceChildren(
    h("span", { class: "waiting-text" }, waiting.text),
    h("button", { type: "button", class: "secondary waiting-cancel", "data-focus-key": "waiting-cancel", title: "Cancel the turn", onclick: () => send({ type: "cancel" }) }, "Cancel"),
  );
}
