// Bundles the extension host (CJS, `vscode` external), the webview (IIFE for the browser) and, with
// --tests, the plain-Node integration tests and the e2e drivers. Usage: node scripts/build.mjs [--tests]
import { build } from "esbuild";
import { copyFile, mkdir, readdir } from "node:fs/promises";
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
  const dirs = ["test/integration", "test/e2e"];
  const entries = [];
  for (const d of dirs) for (const f of await readdir(join(root, d))) if (/\.(test|e2e)\.ts$/.test(f) || f === "run.ts") entries.push(`${d}/${f}`);
  entries.push("test/agent/fakeAgent.ts", "test/agent/mcpEcho.ts");
  await build({ ...common, minify: false, entryPoints: entries, outdir: "out", outbase: "test", platform: "node", format: "esm", target: "node20", outExtension: { ".js": ".mjs" }, external: ["playwright-core"], banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
}
console.log(`build: dist/extension.js, dist/webview.js${withTests ? ", out/ (tests)" : ""}`);
