/**
 * Runs code-server (real VS Code 1.139 in the browser) for the e2e tests: Node 24 and code-server come
 * from .tools/ (scripts/e2e.sh installs them); user data, extensions and logs live under artifacts/.
 * The server runs in its own process group and stop() ends the whole group.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { ARTIFACTS, EXT_DIR } from "./browser";

const REPO = resolve(EXT_DIR, "..");
const TOOLS = process.env.TOOLS_DIR ?? join(REPO, ".tools");
const CODE_SERVER = join(TOOLS, "cs", "node_modules", ".bin", "code-server");
const NODE24_BIN = join(TOOLS, "node24", "bin");

export interface CodeServerOptions {
  /** User data, extensions and logs (default artifacts/e2e/cs). */
  data?: string;
  /** The environment code-server and its extension host get, from this process's. */
  env?: (env: NodeJS.ProcessEnv) => NodeJS.ProcessEnv;
}

export class CodeServer {
  readonly data: string;
  readonly port = Number(process.env.CS_PORT ?? 18080);
  private child: ChildProcess | undefined;

  constructor(private readonly options: CodeServerOptions = {}) {
    this.data = options.data ?? join(ARTIFACTS, "e2e", "cs");
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  private args(): string[] {
    return ["--config", join(this.data, "config.yaml"), "--user-data-dir", join(this.data, "user"), "--extensions-dir", join(this.data, "ext")];
  }

  get logFile(): string {
    return this.options.data ? `${this.options.data}.log` : join(ARTIFACTS, "e2e", "code-server.log");
  }

  private env(): NodeJS.ProcessEnv {
    const env = this.options.env?.({ ...process.env }) ?? { ...process.env };
    return { ...env, PATH: `${NODE24_BIN}:${env.PATH}` };
  }

  /** Fresh user data with the given user settings, and the .vsix installed. */
  prepare(settings: Record<string, unknown>, vsix: string): void {
    rmSync(this.data, { recursive: true, force: true });
    mkdirSync(join(this.data, "user", "User"), { recursive: true });
    mkdirSync(join(this.data, "ext"), { recursive: true });
    writeFileSync(join(this.data, "config.yaml"), "auth: none\ncert: false\n"); // an empty config.yaml is fatal
    const base = {
      "workbench.startupEditor": "none",
      "chat.disableAIFeatures": true,
      "telemetry.telemetryLevel": "off",
      "extensions.autoUpdate": false,
      "extensions.autoCheckUpdates": false,
      "update.mode": "none",
      "workbench.tips.enabled": false,
      "workbench.secondarySideBar.defaultVisibility": "hidden",
      "git.enabled": false,
      "git.openRepositoryInParentFolders": "never",
    };
    writeFileSync(join(this.data, "user", "User", "settings.json"), JSON.stringify({ ...base, ...settings }, null, 2));
    execFileSync(CODE_SERVER, [...this.args(), "--install-extension", vsix, "--force"], { env: this.env(), stdio: "inherit" });
  }

  /** The user settings with `patch` applied (undefined removes a key), for editUserSettings. */
  get settingsFile(): string {
    return join(this.data, "user", "User", "settings.json");
  }

  settingsWith(patch: Record<string, unknown>): Record<string, unknown> {
    const current = JSON.parse(readFileSync(this.settingsFile, "utf8")) as Record<string, unknown>;
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) delete current[k];
      else current[k] = v;
    }
    return current;
  }

  async start(folder: string): Promise<void> {
    const log = openSync(this.logFile, "a");
    this.child = spawn(
      CODE_SERVER,
      [...this.args(), "--bind-addr", `127.0.0.1:${this.port}`, "--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", folder],
      { env: this.env(), detached: true, stdio: ["ignore", log, log] },
    );
    const end = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await fetch(`${this.url}/healthz`)).ok) return;
      } catch {
        // not listening yet
      }
      if (Date.now() > end || this.child.exitCode !== null) throw new Error(`code-server did not start; see ${this.logFile}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child?.pid) return;
    const exited = new Promise((r) => child.once("exit", r));
    try {
      process.kill(-child.pid, "SIGTERM"); // the group: code-server forks watchers and extension hosts
    } catch {
      return;
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
