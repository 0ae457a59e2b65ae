/**
 * Installing the bridge for a user who has none: find a Python 3.11+ (the configured one, then the usual
 * names on PATH), create a virtual environment in the extension's global storage with it, and `pip
 * install` the wheel the .vsix carries (its dependencies come from the package index pip is configured
 * with, PyPI by default). The environment's Python then runs the built-in agent. Every step's output goes
 * to `log`; a failure says what to do. Plain Node, no `vscode`: tested with stand-in Pythons.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const MIN_PYTHON: readonly [number, number] = [3, 11];
/** The usual names of a Python 3 on PATH, newest first after the generic one. */
export const PYTHON_NAMES = ["python3", "python3.13", "python3.12", "python3.11", "python"];
/** Written into the environment once the install checked out: which wheel it holds. */
const MARKER = "acp-bridge-installed.json";

export interface PythonFound {
  command: string;
  executable: string;
  version: [number, number, number];
}

export interface PythonSearch {
  found?: PythonFound;
  /** Each command tried and what it was: "python3: 3.9.2 (too old)", "python3.13: not found". */
  tried: string[];
}

/** The first of `commands` that is a Python ≥ 3.11 (each asked for its version, at most once per executable). */
export async function findPython(commands: readonly string[], timeoutMs = 15_000): Promise<PythonSearch> {
  const tried: string[] = [];
  const seen = new Set<string>();
  for (const command of [...new Set(commands)]) {
    const res = await run(command, ["-c", "import sys; print(*sys.version_info[:3], sys.executable)"], { timeoutMs });
    if (res.code !== 0) {
      tried.push(`${command}: ${res.spawnError ? "not found" : `failed (${lastLine(res.output) || `exit ${res.code}`})`}`);
      continue;
    }
    const [major, minor, micro, ...exe] = res.stdout.trim().split(" ");
    const version: [number, number, number] = [Number(major), Number(minor), Number(micro)];
    const executable = exe.join(" ");
    if (seen.has(executable)) continue;
    seen.add(executable);
    if (version[0] > MIN_PYTHON[0] || (version[0] === MIN_PYTHON[0] && version[1] >= MIN_PYTHON[1])) return { found: { command, executable, version }, tried };
    tried.push(`${command}: ${version.join(".")} (too old)`);
  }
  return { tried };
}

/** What to do when no Python 3.11+ is found, in words. */
export function noPythonMessage(search: PythonSearch): string {
  return (
    `acp-bridge needs Python ${MIN_PYTHON.join(".")} or newer, and none was found (${search.tried.join("; ") || "nothing tried"}). ` +
    "Install one (python.org, or your package manager: `sudo apt install python3.11 python3.11-venv` on Debian and Ubuntu, `brew install python@3.12` on macOS), then install again, or set acp.pythonCommand to it."
  );
}

export interface InstallOptions {
  python: PythonFound;
  /** The virtual environment to create (replaced if it exists). */
  venvDir: string;
  wheel: string;
  log: (text: string) => void;
  /** A short line for a progress notification. */
  step?: (message: string) => void;
  signal?: AbortSignal;
}

export class InstallError extends Error {
  constructor(
    message: string,
    /** What to do about it. */
    readonly fix: string,
  ) {
    super(message);
  }
}

/** The Python of the environment `venvDir`. */
export function venvPython(venvDir: string): string {
  return process.platform === "win32" ? join(venvDir, "Scripts", "python.exe") : join(venvDir, "bin", "python");
}

/** The environment's Python if an install into `venvDir` completed, else undefined. */
export function installedPython(venvDir: string): string | undefined {
  const python = venvPython(venvDir);
  return existsSync(join(venvDir, MARKER)) && existsSync(python) ? python : undefined;
}

/**
 * The wheel the extension carries (bundled/acp_bridge_agent-*.whl: the distribution is acp-bridge-agent,
 * as `acp-bridge` on PyPI is another project's), if any.
 */
export async function bundledWheel(extensionDir: string): Promise<string | undefined> {
  const dir = join(extensionDir, "bundled");
  const names = existsSync(dir) ? (await readdir(dir)).filter((n) => /^acp_bridge_agent-.*\.whl$/.test(n)).sort() : [];
  return names.length ? join(dir, names[names.length - 1]!) : undefined;
}

/** The wheel an install put in `venvDir`, from its marker. */
export async function installedWheel(venvDir: string): Promise<string | undefined> {
  try {
    return (JSON.parse(await readFile(join(venvDir, MARKER), "utf8")) as { wheel?: string }).wheel;
  } catch {
    return undefined;
  }
}

/** Create the environment, install the wheel into it, check that the bridge imports. Returns its Python. */
export async function installBridge(o: InstallOptions): Promise<string> {
  const py = o.python;
  o.step?.(`Creating a Python ${py.version.join(".")} environment…`);
  await rm(o.venvDir, { recursive: true, force: true });
  const venv = await run(py.executable, ["-m", "venv", o.venvDir], o);
  stopIfCancelled(o.signal);
  if (venv.code !== 0) {
    const noEnsurepip = /ensurepip|python3(\.\d+)?-venv/.test(venv.output);
    throw new InstallError(
      `${py.executable} -m venv failed: ${lastLine(venv.output) || `exit ${venv.code}`}`,
      noEnsurepip
        ? `That Python cannot create virtual environments: install its venv package (\`sudo apt install python${py.version[0]}.${py.version[1]}-venv\` on Debian and Ubuntu), then install again.`
        : "See the log in the ACP Agent output; set acp.pythonCommand to another Python 3.11+ and install again.",
    );
  }
  const python = venvPython(o.venvDir);
  o.step?.("Installing acp-bridge and its dependencies (from your package index)…");
  const pip = await run(python, ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", o.wheel], {
    ...o,
    onLine: (line) => {
      if (/^(Collecting|Downloading|Installing|Successfully)/.test(line)) o.step?.(line.length > 90 ? `${line.slice(0, 89)}…` : line);
    },
  });
  stopIfCancelled(o.signal);
  if (pip.code !== 0) {
    throw new InstallError(`pip could not install acp-bridge: ${lastLine(pip.output) || `exit ${pip.code}`}`, "pip needs to reach your package index (PyPI by default) for the dependencies; check the connection or pip's proxy settings, then install again. The full log is in the ACP Agent output.");
  }
  o.step?.("Checking the installed bridge…");
  const check = await run(python, ["-m", "acp_bridge", "--version"], o);
  if (check.code !== 0) throw new InstallError(`the installed bridge does not start: ${lastLine(check.output)}`, "See the log in the ACP Agent output.");
  await writeFile(join(o.venvDir, MARKER), JSON.stringify({ wheel: o.wheel, python: py.executable, version: check.stdout.trim() }));
  return python;
}

interface RunResult {
  code: number | null;
  stdout: string;
  /** stdout and stderr, interleaved as they came. */
  output: string;
  spawnError?: string;
}

function run(command: string, args: string[], o: { log?: (t: string) => void; signal?: AbortSignal; timeoutMs?: number; onLine?: (line: string) => void }): Promise<RunResult> {
  return new Promise((resolve) => {
    let child: ChildProcess;
    let stdout = "";
    let output = "";
    let partial = "";
    const take = (text: string, isOut: boolean) => {
      if (isOut) stdout += text;
      output = (output + text).slice(-20_000);
      o.log?.(text);
      partial += text;
      const lines = partial.split(/\r?\n/);
      partial = lines.pop() ?? "";
      for (const l of lines) if (l.trim()) o.onLine?.(l.trim());
    };
    try {
      o.log?.(`$ ${command} ${args.join(" ")}\n`);
      child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], signal: o.signal, env: { ...process.env, PYTHONNOUSERSITE: "1", PIP_REQUIRE_VIRTUALENV: "" } });
    } catch (err) {
      resolve({ code: null, stdout, output, spawnError: (err as Error).message });
      return;
    }
    const timer = o.timeoutMs ? setTimeout(() => child.kill("SIGKILL"), o.timeoutMs) : undefined;
    child.stdout!.setEncoding("utf8").on("data", (t: string) => take(t, true));
    child.stderr!.setEncoding("utf8").on("data", (t: string) => take(t, false));
    child.once("error", (err) => {
      if (timer) clearTimeout(timer);
      resolve({ code: null, stdout, output, spawnError: err.message });
    });
    child.once("close", (code) => {
      if (timer) clearTimeout(timer);
      resolve({ code, stdout, output });
    });
  });
}

function stopIfCancelled(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new InstallError("cancelled", "Install again when you are ready.");
}

function lastLine(s: string): string {
  return (
    s
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .pop() ?? ""
  );
}
