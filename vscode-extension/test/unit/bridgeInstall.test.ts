/**
 * Installing the bridge on first use, with stand-in Pythons (shell scripts that answer as Python, venv
 * and pip do): the first Python 3.11+ is chosen and the others said; the environment is created, the
 * wheel installed and checked, and the install remembered; a failing step says what to do.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundledWheel, findPython, installBridge, installedPython, InstallError, noPythonMessage } from "../../src/install/bridgeInstall";

const bin = mkdtempSync(join(tmpdir(), "acp-pythons-"));

/** A stand-in `python` at `bin/name` answering the version question with `version` (and `-m venv`). */
function fakePython(name: string, version: string, venv: "ok" | "no-ensurepip" = "ok", pip: "ok" | "fail" = "ok"): string {
  const path = join(bin, name);
  // The environment's python: pip install and `-m acp_bridge --version`.
  const inner = `#!/bin/sh
if [ "$1 $2" = "-m pip" ]; then echo "Collecting acp-bridge"; echo "Successfully installed acp-bridge-0.1.0"; ${pip === "fail" ? 'echo "ERROR: No matching distribution found for mcp" >&2; exit 1' : "exit 0"}; fi
if [ "$1 $2" = "-m acp_bridge" ]; then echo "acp-bridge 0.1.0 (Python ${version})"; exit 0; fi
exit 2
`;
  writeFileSync(
    path,
    `#!/bin/sh
if [ "$1" = "-c" ]; then echo "${version.split(".").join(" ")} ${path}"; exit 0; fi
if [ "$1 $2" = "-m venv" ]; then
  ${venv === "no-ensurepip" ? 'echo "The virtual environment was not created successfully because ensurepip is not available." >&2; exit 1' : `mkdir -p "$3/bin" && cat > "$3/bin/python" <<'INNER'\n${inner}INNER\nchmod +x "$3/bin/python"; exit 0`}
fi
exit 2
`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe("finding a Python for the bridge", () => {
  it("takes the first Python 3.11+, saying what the others were", async () => {
    const old = fakePython("py39", "3.9.2");
    const good = fakePython("py312", "3.12.1");
    const search = await findPython([old, join(bin, "nothing-here"), good, fakePython("py313", "3.13.0")]);
    expect(search.found).toEqual({ command: good, executable: good, version: [3, 12, 1] });
    expect(search.tried).toEqual([`${old}: 3.9.2 (too old)`, `${join(bin, "nothing-here")}: not found`]);
  });

  it("none found: the message says which were tried and how to get one", async () => {
    const search = await findPython([fakePython("py310", "3.10.4")]);
    expect(search.found).toBeUndefined();
    const msg = noPythonMessage(search);
    expect(msg).toMatch(/needs Python 3\.11 or newer/);
    expect(msg).toMatch(/py310: 3\.10\.4 \(too old\)/);
    expect(msg).toMatch(/sudo apt install python3\.11 python3\.11-venv/);
  });
});

describe("installing the bridge", () => {
  const wheel = join(bin, "acp_bridge_agent-0.1.0-py3-none-any.whl");

  it("creates the environment, installs the wheel, checks it, and remembers the install", async () => {
    const python = fakePython("py311", "3.11.2");
    const venvDir = join(mkdtempSync(join(tmpdir(), "acp-storage-")), "bridge-venv");
    const log: string[] = [];
    const steps: string[] = [];
    expect(installedPython(venvDir)).toBeUndefined();
    const got = await installBridge({ python: { command: python, executable: python, version: [3, 11, 2] }, venvDir, wheel, log: (t) => log.push(t), step: (s) => steps.push(s) });
    expect(got).toBe(join(venvDir, "bin", "python"));
    expect(installedPython(venvDir)).toBe(got);
    expect(log.join("")).toContain(`-m pip install --disable-pip-version-check --no-input --progress-bar off ${wheel}`);
    expect(steps).toEqual(["Creating a Python 3.11.2 environment…", "Installing acp-bridge and its dependencies (from your package index)…", "Collecting acp-bridge", "Successfully installed acp-bridge-0.1.0", "Checking the installed bridge…"]);
  });

  it("a Python that cannot make environments: the fix names its venv package", async () => {
    const python = fakePython("py311-bare", "3.11.2", "no-ensurepip");
    const venvDir = join(mkdtempSync(join(tmpdir(), "acp-storage-")), "bridge-venv");
    const err = await installBridge({ python: { command: python, executable: python, version: [3, 11, 2] }, venvDir, wheel, log: () => undefined }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InstallError);
    expect((err as InstallError).fix).toMatch(/sudo apt install python3\.11-venv/);
    expect(installedPython(venvDir)).toBeUndefined();
  });

  it("pip fails: says so with pip's last words, and nothing is remembered", async () => {
    const python = fakePython("py311-offline", "3.11.2", "ok", "fail");
    const venvDir = join(mkdtempSync(join(tmpdir(), "acp-storage-")), "bridge-venv");
    const err = await installBridge({ python: { command: python, executable: python, version: [3, 11, 2] }, venvDir, wheel, log: () => undefined }).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/pip could not install acp-bridge: ERROR: No matching distribution found for mcp/);
    expect(installedPython(venvDir)).toBeUndefined();
  });

  it("finds the wheel the extension carries", async () => {
    const ext = mkdtempSync(join(tmpdir(), "acp-ext-"));
    expect(await bundledWheel(ext)).toBeUndefined();
    mkdirSync(join(ext, "bundled"));
    // A wheel of the name `acp-bridge` is another project's distribution, never this bridge.
    writeFileSync(join(ext, "bundled", "acp_bridge-0.1.0-py3-none-any.whl"), "");
    expect(await bundledWheel(ext)).toBeUndefined();
    writeFileSync(join(ext, "bundled", "acp_bridge_agent-0.1.0-py3-none-any.whl"), "");
    expect(await bundledWheel(ext)).toBe(join(ext, "bundled", "acp_bridge_agent-0.1.0-py3-none-any.whl"));
  });
});
