import { describe, expect, it } from "vitest";
import { applyEvent, cardTerminalIds } from "../../shared/reducer";
import { TERMINAL_KEEP_CHARS } from "../../shared/state";
import { exitBadge } from "../../shared/terminalText";
import { stateAfter, toolCall, toolUpdate, update } from "./helpers";

const text = (t: string) => ({ type: "text" as const, text: t });

describe("session reducer: messages", () => {
  it("appends agent message chunks into one message", () => {
    const s = stateAfter(
      update({ sessionUpdate: "agent_message_chunk", content: text("Hel") }),
      update({ sessionUpdate: "agent_message_chunk", content: text("lo") }),
    );
    expect(s.timeline).toHaveLength(1);
    expect(s.timeline[0]).toMatchObject({ type: "agent", text: "Hello" });
  });

  it("starts a new message when the messageId changes", () => {
    const s = stateAfter(
      update({ sessionUpdate: "agent_message_chunk", content: text("a"), messageId: "m1" }),
      update({ sessionUpdate: "agent_message_chunk", content: text("b"), messageId: "m2" }),
    );
    expect(s.timeline.map((i) => (i.type === "agent" ? i.text : ""))).toEqual(["a", "b"]);
  });

  it("keeps thoughts, user chunks and agent text as separate items in order", () => {
    const s = stateAfter(
      update({ sessionUpdate: "user_message_chunk", content: text("do it") }),
      update({ sessionUpdate: "agent_thought_chunk", content: text("thinking") }),
      update({ sessionUpdate: "agent_message_chunk", content: text("done") }),
    );
    expect(s.timeline.map((i) => i.type)).toEqual(["user", "thought", "agent"]);
  });

  it("keeps non-text blocks of a message", () => {
    const s = stateAfter(update({ sessionUpdate: "agent_message_chunk", content: { type: "resource_link", uri: "file:///ws/a.txt", name: "a.txt" } }));
    const item = s.timeline[0]!;
    expect(item.type === "agent" && item.blocks).toHaveLength(1);
  });

  it("records a user prompt and marks the turn running until it ends", () => {
    const s = stateAfter({ type: "userPrompt", text: "hi" });
    expect(s.running).toBe(true);
    applyEvent(s, { type: "turnEnded", stopReason: "end_turn" });
    expect(s).toMatchObject({ running: false, stopReason: "end_turn" });
  });
});

describe("session reducer: tool calls", () => {
  it("creates a card on tool_call with defaults", () => {
    const s = stateAfter(toolCall("c1", { kind: "read" }));
    expect(s.cards.c1).toMatchObject({ title: "call c1", kind: "read", status: "pending", content: [], locations: [] });
    expect(s.timeline).toEqual([{ type: "tool", id: "c1" }]);
  });

  it("patches only the fields a tool_call_update carries; null leaves a field unchanged", () => {
    const s = stateAfter(toolCall("c1", { kind: "edit", status: "pending" }), toolUpdate("c1", { status: "in_progress", title: null, kind: null }));
    expect(s.cards.c1).toMatchObject({ title: "call c1", kind: "edit", status: "in_progress" });
  });

  it("replaces content and locations as whole collections", () => {
    const s = stateAfter(
      toolCall("c1", { content: [{ type: "content", content: text("one") }, { type: "content", content: text("two") }], locations: [{ path: "/ws/a", line: 1 }, { path: "/ws/b" }] }),
      toolUpdate("c1", { content: [{ type: "content", content: text("three") }], locations: [{ path: "/ws/c", line: 9 }] }),
    );
    expect(s.cards.c1!.content).toEqual([{ type: "content", content: text("three") }]);
    expect(s.cards.c1!.locations).toEqual([{ path: "/ws/c", line: 9 }]);
  });

  it("keeps content when an update omits it", () => {
    const s = stateAfter(toolCall("c1", { content: [{ type: "content", content: text("x") }] }), toolUpdate("c1", { status: "completed" }));
    expect(s.cards.c1!.content).toHaveLength(1);
  });

  it("upserts a card for an update that arrives before its tool_call", () => {
    const s = stateAfter(toolUpdate("late", { status: "in_progress", title: "Late" }));
    expect(s.cards.late).toMatchObject({ title: "Late", status: "in_progress" });
    expect(s.timeline).toHaveLength(1);
  });

  it("stores diff content blocks as given", () => {
    const diff = { type: "diff", path: "/ws/a.txt", oldText: "a\n", newText: "b\n" };
    const s = stateAfter(toolCall("c1", { kind: "edit", content: [diff] }));
    expect(s.cards.c1!.content[0]).toEqual(diff);
  });

  it("reports the changed card so views re-render only it", () => {
    const s = stateAfter(toolCall("c1"), toolCall("c2"));
    expect(applyEvent(s, toolUpdate("c2", { status: "completed" }))).toEqual({ cards: ["c2"] });
  });
});

describe("session reducer: terminals", () => {
  const start = toolCall("t1", { kind: "execute", title: "ls", content: [{ type: "terminal", terminalId: "t1" }], _meta: { terminal_info: { terminal_id: "t1", cwd: "/ws" } } });

  it("opens a terminal from _meta.terminal_info and appends terminal_output deltas", () => {
    const s = stateAfter(
      start,
      toolUpdate("t1", { _meta: { terminal_output: { terminal_id: "t1", data: "a\n" } } }),
      toolUpdate("t1", { _meta: { terminal_output: { terminal_id: "t1", data: "b\n" } } }),
    );
    expect(s.terminals.t1).toMatchObject({ output: "a\nb\n", command: "ls", cwd: "/ws" });
    expect(cardTerminalIds(s.cards.t1!)).toEqual(["t1"]);
  });

  it("streams output into the terminal without touching its card (no redraw of the card per chunk)", () => {
    const s = stateAfter(start);
    const output = toolUpdate("t1", { _meta: { terminal_output: { terminal_id: "t1", data: "a\n" } } });
    expect(applyEvent(s, output)).toEqual({ terminals: ["t1"] });
    expect(s.terminals.t1!.output).toBe("a\n");
    // Anything else the update carries is the card's: it is redrawn.
    expect(applyEvent(s, toolUpdate("t1", { status: "completed", _meta: { terminal_output: { terminal_id: "t1", data: "b\n" } } }))).toEqual({ cards: ["t1"], terminals: ["t1"] });
    expect(applyEvent(s, toolUpdate("t1", { _meta: { acpBridge: { note: "Allowed by your rule" }, terminal_output: { terminal_id: "t1", data: "c\n" } } }))).toEqual({ cards: ["t1"], terminals: ["t1"] });
    expect(s.cards.t1).toMatchObject({ status: "completed", note: "Allowed by your rule" });
    expect(s.terminals.t1!.output).toBe("a\nb\nc\n");
  });

  it("records terminal_exit and the final status, output applied first", () => {
    const s = stateAfter(start, toolUpdate("t1", { status: "failed", _meta: { terminal_output: { terminal_id: "t1", data: "boom" }, terminal_exit: { terminal_id: "t1", exit_code: 2, signal: null } } }));
    expect(s.terminals.t1).toMatchObject({ output: "boom", exit: { exitCode: 2, signal: null } });
    expect(s.cards.t1!.status).toBe("failed");
  });

  it("shows a _meta terminal even when content does not embed it", () => {
    const s = stateAfter(toolCall("t2", { _meta: { terminal_info: { terminal_id: "t2" } } }));
    expect(cardTerminalIds(s.cards.t2!)).toEqual(["t2"]);
  });

  it("caps terminal output, dropping the oldest text", () => {
    const s = stateAfter(start);
    const chunk = "x".repeat(1023) + "\n";
    for (let i = 0; i < 300; i++) applyEvent(s, toolUpdate("t1", { _meta: { terminal_output: { terminal_id: "t1", data: chunk } } }));
    const t = s.terminals.t1!;
    expect(t.output.length).toBeLessThanOrEqual(TERMINAL_KEEP_CHARS);
    expect(t.totalChars).toBe(300 * 1024);
    expect(t.droppedChars + t.output.length).toBe(t.totalChars);
    expect(t.output.startsWith("x")).toBe(true);
  });

  it("applies ACP terminal/* events to the same terminal store", () => {
    const s = stateAfter(
      { type: "terminalStarted", terminalId: "term-1", command: "make" },
      { type: "terminalOutput", terminalId: "term-1", data: "ok" },
      { type: "terminalExited", terminalId: "term-1", exitCode: 0, signal: null },
    );
    expect(s.terminals["term-1"]).toMatchObject({ command: "make", output: "ok", exit: { exitCode: 0 } });
  });
});

describe("session reducer: permissions and cancel", () => {
  const options = [
    { optionId: "allow_once", name: "Allow once", kind: "allow_once" as const },
    { optionId: "reject_once", name: "Reject", kind: "reject_once" as const },
  ];

  it("attaches a permission question to its card and records the answer", () => {
    const s = stateAfter(toolCall("c1"), { type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "c1", title: "Edit a" }, options });
    expect(s.cards.c1!.permission).toEqual({ requestId: "p1", options });
    expect(s.cards.c1!.title).toBe("Edit a");
    applyEvent(s, { type: "permissionResolved", requestId: "p1", outcome: "allow_once" });
    expect(s.cards.c1!.permission!.outcome).toBe("allow_once");
  });

  it("creates the card when the permission request comes first", () => {
    const s = stateAfter({ type: "permissionRequested", requestId: "p1", toolCall: { toolCallId: "new", title: "Run x" }, options });
    expect(s.cards.new).toBeDefined();
  });

  it("marks unfinished cards cancelled and leaves finished ones", () => {
    const s = stateAfter(toolCall("a", { status: "completed" }), toolCall("b", { status: "in_progress" }), toolCall("c"), { type: "turnCancelled" });
    expect([s.cards.a!.status, s.cards.b!.status, s.cards.c!.status]).toEqual(["completed", "cancelled", "cancelled"]);
  });

  it("still accepts updates after a cancel", () => {
    const s = stateAfter(toolCall("b", { status: "in_progress" }), { type: "turnCancelled" }, toolUpdate("b", { status: "failed" }));
    expect(s.cards.b!.status).toBe("failed");
  });

  it("a turn ending cancelled marks leftovers cancelled", () => {
    const s = stateAfter(toolCall("b"), { type: "turnEnded", stopReason: "cancelled" });
    expect(s.cards.b!.status).toBe("cancelled");
  });

  describe("a cancelled bash card", () => {
    const bash = toolCall("sh", { kind: "execute", status: "in_progress", content: [{ type: "terminal", terminalId: "sh" }], _meta: { terminal_info: { terminal_id: "sh" } } });
    const killed = (exit: Record<string, unknown>) => toolUpdate("sh", { status: "failed", _meta: { terminal_exit: { terminal_id: "sh", ...exit } } });
    const ended = { type: "turnEnded", stopReason: "cancelled" } as const;

    it("records the signal of terminal_exit and stays failed, whether it comes before or after the local cancel", () => {
      for (const events of [
        [bash, { type: "turnCancelled" } as const, killed({ exit_code: null, signal: "SIGTERM" }), ended],
        [bash, killed({ exit_code: null, signal: "SIGTERM" }), { type: "turnCancelled" } as const, ended],
      ]) {
        const s = stateAfter(...events);
        expect(s.cards.sh!.status).toBe("failed");
        expect(s.terminals.sh!.exit).toEqual({ exitCode: null, signal: "SIGTERM" });
        expect(exitBadge(s.terminals.sh!.exit)).toEqual({ text: "killed: SIGTERM", tone: "bad" });
      }
    });

    it("a signal wins over an exit code in the badge", () => {
      const s = stateAfter(bash, killed({ exit_code: 143, signal: "SIGKILL" }));
      expect(s.terminals.sh!.exit).toEqual({ exitCode: 143, signal: "SIGKILL" });
      expect(exitBadge(s.terminals.sh!.exit).text).toBe("killed: SIGKILL");
    });

    it("an exit with neither code nor signal (or a missing one) shows stopped, and the card stays failed", () => {
      for (const exit of [{ exit_code: null, signal: null }, {}]) {
        const s = stateAfter(bash, { type: "turnCancelled" }, killed(exit), ended);
        expect(s.cards.sh!.status).toBe("failed");
        expect(s.terminals.sh!.exit).toEqual({ exitCode: null, signal: null });
        expect(exitBadge(s.terminals.sh!.exit)).toEqual({ text: "stopped", tone: "stopped" });
      }
    });

    it("without terminal_exit the terminal is still running and the card is marked cancelled", () => {
      const s = stateAfter(bash, { type: "turnCancelled" });
      expect(s.cards.sh!.status).toBe("cancelled");
      expect(exitBadge(s.terminals.sh!.exit)).toEqual({ text: "running", tone: "running" });
    });
  });
});

describe("exit badge", () => {
  it("says exit N for a code, green only for 0", () => {
    expect(exitBadge({ exitCode: 0, signal: null })).toEqual({ text: "exit 0", tone: "ok" });
    expect(exitBadge({ exitCode: 2, signal: null })).toEqual({ text: "exit 2", tone: "bad" });
  });

  it("says killed: SIGNAL for ACP terminal/* exits by signal too", () => {
    const s = stateAfter({ type: "terminalStarted", terminalId: "term-1", command: "sleep 9" }, { type: "terminalExited", terminalId: "term-1", exitCode: null, signal: "SIGTERM" });
    expect(exitBadge(s.terminals["term-1"]!.exit)).toEqual({ text: "killed: SIGTERM", tone: "bad" });
  });
});

describe("session reducer: session-level updates", () => {
  it("replaces the whole plan", () => {
    const e = (content: string) => ({ content, priority: "high" as const, status: "pending" as const });
    const s = stateAfter(update({ sessionUpdate: "plan", entries: [e("a"), e("b")] }), update({ sessionUpdate: "plan", entries: [e("c")] }));
    expect(s.plan.map((p) => p.content)).toEqual(["c"]);
  });

  it("tracks modes, config options, commands, title, usage and notices", () => {
    const s = stateAfter();
    applyEvent(s, { type: "sessionStarted", sessionId: "s2", cwd: "/ws", modes: { currentModeId: "ask", availableModes: [{ id: "ask", name: "Ask" }, { id: "code", name: "Code" }] } });
    applyEvent(s, update({ sessionUpdate: "current_mode_update", currentModeId: "code" }));
    applyEvent(s, update({ sessionUpdate: "config_option_update", configOptions: [{ id: "model", name: "Model", category: "model", type: "select", currentValue: "a", options: [{ value: "a", name: "A" }] }] }));
    applyEvent(s, update({ sessionUpdate: "available_commands_update", availableCommands: [{ name: "web", description: "search" }] }));
    applyEvent(s, update({ sessionUpdate: "session_info_update", title: "Fix bug" }));
    applyEvent(s, update({ sessionUpdate: "usage_update", used: 10, size: 100 }));
    applyEvent(s, update({ sessionUpdate: "notice", severity: "warning", title: "Heads up" }));
    expect(s.modes!.currentModeId).toBe("code");
    expect(s.configOptions[0]!.id).toBe("model");
    expect(s.commands[0]!.name).toBe("web");
    expect(s.title).toBe("Fix bug");
    expect(s.usage).toEqual({ used: 10, size: 100 });
    expect(s.timeline.at(-1)).toMatchObject({ type: "notice", severity: "warning", text: "Heads up" });
  });

  it("a new session clears the timeline but keeps connection and follow settings", () => {
    const s = stateAfter(toolCall("c1"), { type: "follow", enabled: false }, { type: "connection", status: "ready", agentName: "bridge" });
    const change = applyEvent(s, { type: "sessionStarted", sessionId: "s9", cwd: "/ws" });
    expect(change.reset).toBe(true);
    expect(s).toMatchObject({ sessionId: "s9", timeline: [], cards: {}, follow: false, connection: { status: "ready" } });
  });

  it("a crash ends the running turn", () => {
    const s = stateAfter({ type: "userPrompt", text: "x" }, { type: "connection", status: "crashed", agentName: "a", error: "boom" });
    expect(s.running).toBe(false);
    expect(s.connection.error).toBe("boom");
  });
});

describe("session reducer: what this view adds", () => {
  it("shows the agent's note on the card and keeps it out of the terminal output", () => {
    const note = "Allowed by your rule: the command `ls` (this session).";
    const s = stateAfter(
      toolCall("b", { kind: "execute", _meta: { terminal_info: { terminal_id: "b" } } }),
      toolUpdate("b", { _meta: { terminal_output: { terminal_id: "b", data: "a.txt\n" } } }),
      toolUpdate("b", { status: "completed", _meta: { acpBridge: { tool: "bash", note }, terminal_output: { terminal_id: "b", data: `${note}\r\n` }, terminal_exit: { terminal_id: "b", exit_code: 0, signal: null } } }),
    );
    expect(s.cards.b!.note).toBe(note);
    expect(s.terminals.b!.output).toBe("a.txt\n");
  });

  it("keeps the proposed diff of an edit whose failure update replaces it", () => {
    const diff = { type: "diff", path: "/ws/a.txt", oldText: "a\n", newText: "b\n" };
    const s = stateAfter(toolCall("e", { kind: "edit", content: [diff] }), toolUpdate("e", { status: "failed", content: [{ type: "content", content: text("The user rejected this edit call.") }] }));
    expect(s.cards.e!.proposed).toEqual([diff]);
    expect(s.cards.e!.content).toHaveLength(1);
  });

  it("titles the session from its first prompt until the agent names it", () => {
    const s = stateAfter({ type: "userPrompt", text: "  Fix the\nflaky test  " }, { type: "userPrompt", text: "and more" });
    expect(s.title).toBe("Fix the flaky test");
    applyEvent(s, update({ sessionUpdate: "session_info_update", title: "Flaky test fix" }));
    applyEvent(s, { type: "userPrompt", text: "again" });
    expect(s.title).toBe("Flaky test fix");
    const replayed = stateAfter(update({ sessionUpdate: "user_message_chunk", content: text("Replayed prompt") }));
    expect(replayed.title).toBe("Replayed prompt");
  });

  it("retires a finished plan from the footer when the next prompt starts", () => {
    const done = [{ content: "x", status: "completed" as const, priority: "high" as const }];
    const s = stateAfter(update({ sessionUpdate: "plan", entries: done }));
    expect(applyEvent(s, { type: "userPrompt", text: "next" }).plan).toBe(true);
    expect(s.plan).toEqual([]);
    const open = stateAfter(update({ sessionUpdate: "plan", entries: [{ ...done[0]!, status: "in_progress" }] }), { type: "userPrompt", text: "next" });
    expect(open.plan).toHaveLength(1);
  });

  it("puts a restored answer on a replayed card that asked nothing, and never over a live answer", () => {
    const s = stateAfter(toolCall("e"), { type: "answerRestored", toolCallId: "e", label: "Allow once" });
    expect(s.cards.e!.permission).toMatchObject({ outcome: "restored", label: "Allow once" });
    applyEvent(s, { type: "answerRestored", toolCallId: "e", label: "Reject" });
    expect(s.cards.e!.permission!.label).toBe("Allow once");
    expect(applyEvent(s, { type: "answerRestored", toolCallId: "missing", label: "x" })).toEqual({});
  });

  it("restores a kept view (session/resume) with its open questions closed", () => {
    const kept = stateAfter({ type: "userPrompt", text: "hi" }, toolCall("e"), { type: "permissionRequested", requestId: "p", toolCall: { toolCallId: "e" }, options: [] });
    const s = stateAfter();
    s.connection = { status: "ready", agentName: "a" };
    expect(applyEvent(s, { type: "viewRestored", view: structuredClone(kept) }).reset).toBe(true);
    expect(s.timeline.map((i) => i.type)).toEqual(["user", "tool"]);
    expect(s.cards.e!.permission!.outcome).toBe("cancelled");
    expect(s.connection.status).toBe("ready");
    expect(s.title).toBe("hi");
  });

  it("records an undo and its failure on the card", () => {
    const s = stateAfter(toolCall("e"), { type: "undoFailed", toolCallId: "e", reason: "Cannot undo: changed" });
    expect(s.cards.e!.undo).toEqual({ state: "failed", reason: "Cannot undo: changed" });
    applyEvent(s, { type: "editUndone", toolCallId: "e" });
    expect(s.cards.e!.undo).toEqual({ state: "undone" });
  });
});
