import { describe, expect, it } from "vitest";
import { TERMINAL_KEEP_CHARS } from "../../shared/state";
import { SessionStore } from "../../src/session/store";

describe("host store under load", () => {
  it("takes 1,000 tool calls and 10 MB of terminal output quickly, with bounded memory", () => {
    const store = new SessionStore("load");
    store.dispatch({ type: "sessionStarted", sessionId: "s", cwd: "/ws" });
    const t = performance.now();
    for (let i = 0; i < 1000; i++) {
      const id = `call_${i}`;
      store.dispatch({ type: "update", update: { sessionUpdate: "tool_call", toolCallId: id, title: `Read f${i}.txt`, kind: "read", status: "in_progress", locations: [{ path: `/ws/f${i}.txt`, line: 1 }] } });
      store.dispatch({ type: "update", update: { sessionUpdate: "tool_call_update", toolCallId: id, status: "completed", content: [{ type: "content", content: { type: "text", text: `line ${i}` } }] } });
    }
    store.dispatch({ type: "update", update: { sessionUpdate: "tool_call", toolCallId: "bash", title: "yes", kind: "execute", _meta: { terminal_info: { terminal_id: "bash" } } } });
    const chunk = "\x1b[32m" + "y".repeat(4090) + "\x1b[0m\n";
    for (let sent = 0; sent < 10 * 1024 * 1024; sent += chunk.length) {
      store.dispatch({ type: "update", update: { sessionUpdate: "tool_call_update", toolCallId: "bash", _meta: { terminal_output: { terminal_id: "bash", data: chunk } } } });
    }
    const ms = performance.now() - t;
    expect(Object.keys(store.state.cards)).toHaveLength(1001);
    expect(store.state.terminals.bash!.totalChars).toBeGreaterThanOrEqual(10 * 1024 * 1024);
    expect(store.state.terminals.bash!.output.length).toBeLessThanOrEqual(TERMINAL_KEEP_CHARS);
    expect(JSON.stringify(store.state).length).toBeLessThan(2_000_000); // the snapshot the webview gets stays small
    expect(ms).toBeLessThan(3000);
  });
});
