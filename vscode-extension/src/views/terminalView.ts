/**
 * Mirrors ACP `terminal/*` terminals (run by TerminalManager) into the session store, for the card, and
 * into a VS Code terminal (a read-only Pseudoterminal) named after the command.
 */
import * as vscode from "vscode";
import type { TerminalListener } from "../acp/terminals";
import type { SessionStore } from "../session/store";

class MirrorPty implements vscode.Pseudoterminal {
  private readonly writer = new vscode.EventEmitter<string>();
  readonly onDidWrite = this.writer.event;
  private buffered: string[] | undefined = [];

  open(): void {
    for (const s of this.buffered ?? []) this.writer.fire(s);
    this.buffered = undefined;
  }
  close(): void {}
  write(text: string): void {
    const s = text.replace(/\r?\n/g, "\r\n");
    if (this.buffered) this.buffered.push(s);
    else this.writer.fire(s);
  }
}

export class TerminalMirror implements TerminalListener, vscode.Disposable {
  private readonly ptys = new Map<string, { pty: MirrorPty; terminal: vscode.Terminal }>();

  constructor(private readonly store: SessionStore) {}

  started(terminalId: string, commandLine: string, cwd: string | undefined): void {
    this.store.dispatch({ type: "terminalStarted", terminalId, command: commandLine, cwd });
    const pty = new MirrorPty();
    const terminal = vscode.window.createTerminal({ name: `Agent: ${commandLine.slice(0, 40)}`, pty });
    terminal.show(true);
    pty.write(`$ ${commandLine}\n`);
    this.ptys.set(terminalId, { pty, terminal });
  }

  output(terminalId: string, data: string): void {
    this.store.dispatch({ type: "terminalOutput", terminalId, data });
    this.ptys.get(terminalId)?.pty.write(data);
  }

  exited(terminalId: string, exitCode: number | null, signal: string | null): void {
    this.store.dispatch({ type: "terminalExited", terminalId, exitCode, signal });
    this.ptys.get(terminalId)?.pty.write(`\n[exited: ${signal ?? exitCode}]\n`);
  }

  dispose(): void {
    for (const { terminal } of this.ptys.values()) terminal.dispose();
    this.ptys.clear();
  }
}
