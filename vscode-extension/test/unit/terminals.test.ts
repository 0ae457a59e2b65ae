import { describe, expect, it } from "vitest";
import { TerminalManager, type TerminalListener } from "../../src/acp/terminals";

function recorder() {
  const events: string[] = [];
  let output = "";
  const listener: TerminalListener = {
    started: (id, cmd) => events.push(`start ${id} ${cmd}`),
    output: (_id, data) => (output += data),
    exited: (id, code, signal) => events.push(`exit ${id} ${code} ${signal}`),
  };
  return { events, listener, output: () => output };
}

describe("ACP terminal/* handlers", () => {
  it("runs a command as a real process and reports output and exit status", async () => {
    const r = recorder();
    const tm = new TerminalManager(r.listener);
    const { terminalId } = tm.create({ sessionId: "s", command: "sh", args: ["-c", "echo hello; echo oops >&2; exit 3"] });
    await expect(tm.waitForExit({ terminalId })).resolves.toEqual({ exitCode: 3, signal: null });
    await new Promise((res) => setTimeout(res, 20));
    const out = tm.output({ terminalId });
    expect(out.output).toContain("hello\n");
    expect(out.output).toContain("oops\n");
    expect(out).toMatchObject({ truncated: false, exitStatus: { exitCode: 3 } });
    expect(r.events[0]).toBe(`start ${terminalId} sh -c echo hello; echo oops >&2; exit 3`);
    expect(r.output()).toContain("hello");
    tm.release({ terminalId });
  });

  it("runs a bare command line through the shell", async () => {
    const tm = new TerminalManager();
    const { terminalId } = tm.create({ sessionId: "s", command: "echo a && echo b" });
    await tm.waitForExit({ terminalId });
    await new Promise((res) => setTimeout(res, 20));
    expect(tm.output({ terminalId }).output).toBe("a\nb\n");
  });

  it("keeps at most outputByteLimit bytes, truncating from the start at a character boundary", async () => {
    const tm = new TerminalManager();
    const { terminalId } = tm.create({ sessionId: "s", command: "node", args: ["-e", "process.stdout.write('é'.repeat(1000) + 'END')"], outputByteLimit: 100 });
    await tm.waitForExit({ terminalId });
    await new Promise((res) => setTimeout(res, 20));
    const out = tm.output({ terminalId });
    expect(out.truncated).toBe(true);
    expect(Buffer.byteLength(out.output)).toBeLessThanOrEqual(100);
    expect(out.output.endsWith("END")).toBe(true);
    expect(out.output).not.toContain("\uFFFD");
  });

  it("kill stops the command but keeps output and exit status readable until release", async () => {
    const tm = new TerminalManager();
    const { terminalId } = tm.create({ sessionId: "s", command: "sh", args: ["-c", "echo started; sleep 30"] });
    await new Promise((res) => setTimeout(res, 200));
    tm.kill({ terminalId });
    const exit = await tm.waitForExit({ terminalId });
    expect(exit.signal).toBe("SIGTERM");
    expect(tm.output({ terminalId }).output).toContain("started");
    tm.release({ terminalId });
    expect(() => tm.output({ terminalId })).toThrow();
  });

  it("release kills a running command and forgets the terminal", async () => {
    const tm = new TerminalManager();
    const { terminalId } = tm.create({ sessionId: "s", command: "sleep", args: ["30"] });
    const exited = tm.waitForExit({ terminalId });
    tm.release({ terminalId });
    await expect(exited).resolves.toMatchObject({ signal: "SIGTERM" });
  });

  it("passes env and cwd", async () => {
    const tm = new TerminalManager();
    const { terminalId } = tm.create({ sessionId: "s", command: "sh", args: ["-c", "echo $FOO; pwd"], env: [{ name: "FOO", value: "bar" }], cwd: "/tmp" });
    await tm.waitForExit({ terminalId });
    await new Promise((res) => setTimeout(res, 20));
    expect(tm.output({ terminalId }).output).toBe("bar\n/tmp\n");
  });
});
