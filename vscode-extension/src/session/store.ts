/**
 * SessionStore: the host's authoritative SessionState. Every change goes through dispatch(), which runs
 * the shared reducer and tells listeners (the webview bridge, follow-along, status bar) what happened.
 * No `vscode` import: unit tests use it directly.
 */
import type { Change, SessionEvent } from "../../shared/events";
import { applyEvent } from "../../shared/reducer";
import { emptyState, type SessionState } from "../../shared/state";

export type StoreListener = (event: SessionEvent, change: Change, t0: number) => void;

export class SessionStore {
  state: SessionState;
  private readonly listeners = new Set<StoreListener>();

  constructor(agentName = "", follow = true) {
    this.state = emptyState(agentName, follow);
  }

  dispatch(event: SessionEvent, t0: number = Date.now()): Change {
    const change = applyEvent(this.state, event);
    for (const l of this.listeners) l(event, change, t0);
    return change;
  }

  listen(listener: StoreListener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }
}
