/**
 * The messages sent while the agent works that it has not taken yet ("Send now"), in the footer above the
 * prompt, each with what it attached. Each leaves the footer for the conversation once the agent takes it
 * (shared/steering.ts).
 */
import type { SessionState } from "../shared/state";
import { WAITING_NOTE, waitingSteers } from "../shared/steering";
import { block } from "./content";
import { h } from "./dom";

export function renderSteers(el: HTMLElement, s: SessionState): void {
  const waiting = waitingSteers(s);
  el.hidden = waiting.length === 0;
  el.replaceChildren(
    ...waiting.map((m) =>
      h(
        "div",
        { class: "steer-waiting", "data-message-id": m.messageId },
        h("div", { class: "steer-note" }, `${WAITING_NOTE}…`),
        h("div", { class: "msg-text" }, m.text),
        ...m.blocks.map((b) => block(b, s.cwd)),
      ),
    ),
  );
}
