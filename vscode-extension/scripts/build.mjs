// Bundles the extension host (CJS, `vscode` external), the webview (IIFE for the browser) and, with
// --tests, the plain-Node integration tests, the e2e drivers and the benchmarks (test/bench, `npm run bench`). Also builds the bridge's wheel into
// bundled/ (what the extension installs on first use), when it is missing or older than the sources.
// Usage: node scripts/build.mjs [--tests] [--no-wheel]
// Env: ACP_BRIDGE_SOURCE (the Python project to build; default: the repository around this extension),
// UV (a uv to build with), ACP_BRIDGE_PYTHON (a Python with pip, used when there is no uv).
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { copyFile, cp, mkdir, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const withTests = process.argv.includes("--tests");
const common = { bundle: true, sourcemap: "linked", logLevel: "warning", absWorkingDir: root, minify: !process.argv.includes("--dev") };

await mkdir(join(root, "dist"), { recursive: true });
await Promise.all([
  build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", platform: "node", format: "cjs", target: "node20", external: ["vscode"] }),
  build({ ...common, entryPoints: ["webview/main.ts"], outfile: "dist/webview.js", platform: "browser", format: "iife", target: "es2022" }),
  copyFile(join(root, "webview/styles.css"), join(root, "dist/webview.css")),
]);

if (withTests) {
  const dirs = ["test/integration", "test/e2e", "test/bench"];
  const entries = [];
  for (const d of dirs) for (const f of await readdir(join(root, d))) if (/\.(test|e2e|bench)\.ts$/.test(f) || f === "run.ts") entries.push(`${d}/${f}`);
  entries.push("test/agent/fakeAgent.ts", "test/agent/mcpEcho.ts");
  // From scratch: the test scripts run every out/integration/*.test.mjs, so a removed test must not linger.
  await rm(join(root, "out"), { recursive: true, force: true });
  await build({ ...common, minify: false, entryPoints: entries, outdir: "out", outbase: "test", platform: "node", format: "esm", target: "node20", outExtension: { ".js": ".mjs" }, external: ["playwright-core"], banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
}
console.log(`build: dist/extension.js, dist/webview.js${withTests ? ", out/ (tests)" : ""}`);

if (!process.argv.includes("--no-wheel")) await bundleWheel();

/**
 * bundled/acp_bridge_agent-<version>-py3-none-any.whl (the acp-bridge-agent distribution), built from a copy of the project's files (git's view:
 * tracked and new files, never build leftovers) with uv when there is one, else `pip wheel`. Skipped
 * when the wheel there is newer than every source file.
 */
async function bundleWheel() {
  const source = process.env.ACP_BRIDGE_SOURCE ?? join(root, "..");
  const version = /^version\s*=\s*"([^"]+)"/m.exec(readFileSync(join(source, "pyproject.toml"), "utf8"))?.[1];
  if (!version) throw new Error(`no version in ${source}/pyproject.toml`);
  const outDir = join(root, "bundled");
  const wheel = join(outDir, `acp_bridge_agent-${version}-py3-none-any.whl`);
  const files = (await projectFiles(source)).filter((f) => !f.startsWith("vscode-extension/") && existsSync(join(source, f)) && statSync(join(source, f)).isFile());
  const newest = Math.max(...files.map((f) => statSync(join(source, f)).mtimeMs));
  const stamp = join(outDir, ".source");
  const sameSource = existsSync(stamp) && readFileSync(stamp, "utf8") === source;
  if (sameSource && existsSync(wheel) && statSync(wheel).mtimeMs >= newest) {
    console.log(`build: ${wheel} is up to date`);
    return;
  }
  const copy = mkdtempSync(join(tmpdir(), "acp-wheel-src-"));
  const dist = mkdtempSync(join(tmpdir(), "acp-wheel-out-"));
  try {
    for (const f of files) await cp(join(source, f), join(copy, f));
    const uv = [process.env.UV, join(source, ".venv", "bin", "uv"), join(source, ".tools", "uv", "bin", "uv")].find((c) => c && existsSync(c)) ?? onPath("uv");
    if (uv) execFileSync(uv, ["build", "--wheel", "--out-dir", dist, copy], { stdio: "inherit", env: { ...process.env, UV_PYTHON_DOWNLOADS: "never" } });
    else {
      const python = [process.env.ACP_BRIDGE_PYTHON, join(source, ".venv", "bin", "python")].find((c) => c && existsSync(c)) ?? "python3";
      execFileSync(python, ["-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "--quiet", "--wheel-dir", dist, copy], { stdio: "inherit" });
    }
    const built = (await readdir(dist)).find((f) => f.startsWith(`acp_bridge_agent-${version}-`) && f.endsWith(".whl"));
    if (!built) throw new Error(`the wheel build left no acp_bridge_agent-${version} wheel in ${dist}`);
    await rm(outDir, { recursive: true, force: true });
    await mkdir(outDir, { recursive: true });
    await copyFile(join(dist, built), wheel);
    await writeFile(stamp, source);
    console.log(`build: ${wheel}`);
  } finally {
    await rm(copy, { recursive: true, force: true });
    await rm(dist, { recursive: true, force: true });
  }
}

/** The project's files as git sees them (tracked and new, not ignored); outside git, the packaged ones. */
async function projectFiles(source) {
  try {
    return execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: source, encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "ignore"] })
      .split("\0")
      .filter(Boolean);
  } catch {
    const out = ["pyproject.toml", "README.md", "LICENSE"];
    for (const pkg of ["acp_bridge", "registry_core", "presenters"]) {
      for (const f of await readdir(join(source, pkg), { recursive: true })) if (!f.includes("__pycache__")) out.push(join(pkg, f));
    }
    return out;
  }
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? "").split(":")) if (dir && existsSync(join(dir, name))) return join(dir, name);
  return undefined;
}
