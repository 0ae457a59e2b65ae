/**
 * ACP `terminal/*` on the client side: each terminal is a real process (its own process group), with
 * output kept up to `outputByteLimit` bytes (truncated from the start at a character boundary), exit
 * status, kill and release. Listeners mirror terminals into the UI. Plain Node: no `vscode` import.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { StringDecoder } from "node:string_decoder";
import type {
  CreateTerminalRequest,
  CreateTerminalResponse,
  TerminalOutputResponse,
  WaitForTerminalExitResponse,
} from "@agentclientprotocol/sdk";
import { RequestError } from "@agentclientprotocol/sdk";
import type { TerminalHandlers } from "./handlers";

export interface TerminalListener {
  started(terminalId: string, commandLine: string, cwd: string | undefined): void;
  output(terminalId: string, data: string): void;
  exited(terminalId: string, exitCode: number | null, signal: string | null): void;
}

/** Used when the agent gives no outputByteLimit, so a runaway command cannot exhaust memory. */
export const DEFAULT_OUTPUT_LIMIT = 16 * 1024 * 1024;

interface Term {
  child: ChildProcess;
  output: string;
  bytes: number;
  limit: number;
  truncated: boolean;
  exit?: WaitForTerminalExitResponse;
  exitedPromise: Promise<WaitForTerminalExitResponse>;
}

export class TerminalManager implements TerminalHandlers {
  private readonly terms = new Map<string, Term>();
  private next = 1;

  constructor(private readonly listener?: TerminalListener) {}

  create(p: CreateTerminalRequest): CreateTerminalResponse {
    const terminalId = `term-${this.next++}`;
    const args = p.args ?? [];
    const env = { ...process.env, ...Object.fromEntries((p.env ?? []).map((e) => [e.name, e.value])) };
    const useShell = args.length === 0; // a bare command line: let the shell parse it
    const child = spawn(p.command, args, { cwd: p.cwd ?? undefined, env, shell: useShell, detached: true, stdio: ["ignore", "pipe", "pipe"] });
    const limit = p.outputByteLimit ?? DEFAULT_OUTPUT_LIMIT;
    const exitedPromise = new Promise<WaitForTerminalExitResponse>((resolve) => {
      child.once("close", (code, signal) => resolve({ exitCode: code, signal }));
      child.once("error", (err) => {
        this.append(terminalId, `${err.message}\n`);
        resolve({ exitCode: 127, signal: null });
      });
    });
    const term: Term = { child, output: "", bytes: 0, limit, truncated: false, exitedPromise };
    this.terms.set(terminalId, term);
    const commandLine = [p.command, ...args].join(" ");
    this.listener?.started(terminalId, commandLine, p.cwd ?? undefined);
    for (const stream of [child.stdout!, child.stderr!]) {
      const decoder = new StringDecoder("utf8");
      stream.on("data", (chunk: Buffer) => this.append(terminalId, decoder.write(chunk)));
      stream.on("end", () => this.append(terminalId, decoder.end()));
    }
    void exitedPromise.then((exit) => {
      term.exit = exit;
      this.listener?.exited(terminalId, exit.exitCode ?? null, exit.signal ?? null);
    });
    return { terminalId };
  }

  output(p: { terminalId: string }): TerminalOutputResponse {
    const t = this.get(p.terminalId);
    return { output: t.output, truncated: t.truncated, exitStatus: t.exit ?? null };
  }

  waitForExit(p: { terminalId: string }): Promise<WaitForTerminalExitResponse> {
    return this.get(p.terminalId).exitedPromise;
  }

  kill(p: { terminalId: string }): void {
    killGroup(this.get(p.terminalId));
  }

  release(p: { terminalId: string }): void {
    const t = this.get(p.terminalId);
    killGroup(t);
    this.terms.delete(p.terminalId);
  }

  disposeAll(): void {
    for (const id of [...this.terms.keys()]) this.release({ terminalId: id });
  }

  private get(id: string): Term {
    const t = this.terms.get(id);
    if (!t) throw RequestError.resourceNotFound(id);
    return t;
  }

  private append(terminalId: string, data: string): void {
    const t = this.terms.get(terminalId);
    if (!t || data === "") return;
    t.output += data;
    t.bytes += Buffer.byteLength(data);
    if (t.bytes > t.limit) {
      const buf = Buffer.from(t.output, "utf8");
      let start = buf.length - t.limit;
      while (start < buf.length && (buf[start]! & 0xc0) === 0x80) start++; // never start inside a character
      t.output = buf.subarray(start).toString("utf8");
      t.bytes = buf.length - start;
      t.truncated = true;
    }
    this.listener?.output(terminalId, data);
  }
}

function killGroup(t: Term): void {
  if (t.exit || t.child.pid === undefined) return;
  try {
    process.kill(-t.child.pid, "SIGTERM");
  } catch {
    // already exited
  }
  const pid = t.child.pid;
  setTimeout(() => {
    if (!t.exit) {
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // exited in the meantime
      }
    }
  }, 2000).unref();
}
