/**
 * What the Agent view says about steering: a message sent while the agent works ("Send now") waits in the
 * footer until the agent takes it at its next step, then shows in the conversation where it landed (see
 * the reducer). Pure: host and webview share it, and unit tests read it.
 */
import type { SessionState, SteerView, TimelineItem } from "./state";

/** Messages sent while the agent worked that it has not taken yet, oldest first. */
export function waitingSteers(s: SessionState): SteerView[] {
  return s.steers.filter((m) => !m.landed);
}

export interface SendControl {
  /** The send button's words. */
  label: string;
  /** The send button's tooltip. */
  title: string;
  placeholder: string;
}

/** The composer stays usable while the agent works: sending then steers the running turn. */
export function sendControl(running: boolean): SendControl {
  if (!running) return { label: "Send", title: "Send the prompt (Enter)", placeholder: "Ask the agent… (Enter to send, Shift+Enter for a new line, @ for a file)" };
  return {
    label: "Send now",
    title: "Send now: the agent reads it at its next step, without stopping (Enter)",
    placeholder: "Steer the agent… (Enter sends now: it reads it at its next step; Escape cancels)",
  };
}

/** The line a waiting message shows in the footer. */
export const WAITING_NOTE = "Waiting for the agent's next step";

/** The line a message sent while the agent worked shows where it landed, if any. */
export function landedNote(item: TimelineItem): string | undefined {
  return item.type === "user" && item.steered ? "Sent while the agent worked: it read this here" : undefined;
}
