/**
 * The one-click install of the built-in bridge (src/install/bridgeInstall.ts) in VS Code: a progress
 * notification (cancellable) with each step, the full log in the "ACP Agent" output, a clear message
 * when no Python 3.11+ is found or a step fails, and the agent restarted on the new environment.
 */
import { join } from "node:path";
import * as vscode from "vscode";
import { bundledWheel, findPython, installBridge, installedPython, InstallError, noPythonMessage, PYTHON_NAMES } from "./bridgeInstall";
import { SECTION } from "../session/config";

export class BridgeInstaller {
  private running: Promise<boolean> | undefined;

  constructor(
    private readonly extensionDir: string,
    private readonly storageDir: string,
    private readonly output: vscode.OutputChannel,
    /** Called once the bridge is installed (the agent restarts on it). */
    private readonly onInstalled: () => Promise<void>,
  ) {}

  get venvDir(): string {
    return join(this.storageDir, "bridge-venv");
  }

  /** The Python of a completed install, if there is one. */
  managedPython(): string | undefined {
    return installedPython(this.venvDir);
  }

  /** Install (once at a time); true when the bridge is installed. */
  install(): Promise<boolean> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<boolean> {
    const wheel = await bundledWheel(this.extensionDir);
    if (!wheel) {
      void vscode.window.showErrorMessage("This build of the extension carries no acp-bridge wheel. Install acp-bridge into a Python 3.11+ yourself (`pip install acp-bridge-agent`) and set acp.pythonCommand to that Python.", "Open Setting").then((p) => p && vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.pythonCommand`));
      return false;
    }
    const configured = vscode.workspace.getConfiguration(SECTION).get<string>("pythonCommand");
    const search = await findPython([...(configured ? [configured] : []), ...PYTHON_NAMES]);
    if (!search.found) {
      this.output.appendLine(`[acp] install: ${noPythonMessage(search)}`);
      void vscode.window.showErrorMessage(noPythonMessage(search), "Open Setting").then((p) => p && vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.pythonCommand`));
      return false;
    }
    const python = search.found;
    this.output.appendLine(`[acp] installing ${wheel} with ${python.executable} (Python ${python.version.join(".")}) into ${this.venvDir}`);
    this.output.show(true);
    try {
      await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: "Installing acp-bridge", cancellable: true }, async (progress, token) => {
        const abort = new AbortController();
        token.onCancellationRequested(() => abort.abort());
        await installBridge({ python, venvDir: this.venvDir, wheel, log: (t) => this.output.append(t), step: (message) => progress.report({ message }), signal: abort.signal });
      });
    } catch (err) {
      const fix = err instanceof InstallError ? ` ${err.fix}` : "";
      this.output.appendLine(`[acp] install failed: ${(err as Error).message}`);
      void vscode.window.showErrorMessage(`Could not install acp-bridge: ${(err as Error).message}.${fix}`, "Show Output").then((p) => p && this.output.show(true));
      return false;
    }
    this.output.appendLine(`[acp] acp-bridge is installed in ${this.venvDir}`);
    void vscode.window.showInformationMessage("acp-bridge is installed. Starting the agent.");
    // A Python the user chose by hand gives way to the one that has the bridge now; the changed
    // setting restarts the stopped agent by itself.
    if (configured && configured !== "python3") await vscode.workspace.getConfiguration(SECTION).update("pythonCommand", installedPython(this.venvDir), vscode.ConfigurationTarget.Global);
    else await this.onInstalled();
    return true;
  }
}
