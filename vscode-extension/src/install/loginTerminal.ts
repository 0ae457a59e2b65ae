/**
 * Runs an agent's terminal login in a VS Code terminal (the user types the key there, hidden) and
 * resolves with the process's exit status once it ends (undefined when the user closed the terminal
 * first). A terminal whose process exits is closed by VS Code, which is when its exit status is known.
 */
import * as vscode from "vscode";
import type { LoginInvocation } from "../acp/auth";

export type RunInTerminal = (inv: LoginInvocation, title: string) => Promise<number | undefined>;

export const runInTerminal: RunInTerminal = (inv, title) =>
  new Promise((resolve) => {
    const terminal = vscode.window.createTerminal({ name: title, shellPath: inv.command, shellArgs: inv.args, cwd: inv.cwd, env: inv.env });
    const sub = vscode.window.onDidCloseTerminal((t) => {
      if (t !== terminal) return;
      sub.dispose();
      resolve(t.exitStatus?.code);
    });
    terminal.show();
  });
