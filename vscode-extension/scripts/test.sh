#!/usr/bin/env bash
# The extension's whole test gate (called by the project's `make test`): system packages, npm ci,
# typecheck, lint, unit tests (vitest), build + .vsix, integration tests against the real Python bridge
# (node:test), then the code-server end-to-end tests. Exits non-zero if any stage fails.
# Env: ACP_BRIDGE_CMD (bridge command, default <repo>/.venv/bin/acp-bridge), SKIP_E2E=1, SKIP_NPM_CI=1.
set -uo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
cd "$EXT"
export PATH="$EXT/node_modules/.bin:$PATH"
ART=$EXT/artifacts
mkdir -p "$ART"
failed=()
t_start=$SECONDS

stage() { echo; echo "=== $1"; }
fatal() { echo "vscode-extension: FAILED at $1" >&2; exit 1; }
check() { local name=$1; shift; if "$@"; then echo "--- $name: ok"; else echo "--- $name: FAILED"; failed+=("$name"); fi; }

stage "system packages"
need=()
command -v chromium >/dev/null || need+=(chromium)
[ -e /usr/include/gssapi/gssapi.h ] || need+=(libkrb5-dev)          # code-server's kerberos module
command -v g++ >/dev/null && command -v make >/dev/null || need+=(g++ make)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } || fatal "apt-get install ${need[*]}"
else
  echo "chromium, libkrb5-dev, g++ and make present"
fi

# Node 24 and code-server for the end-to-end stage install beside the stages before it (~3 min, mostly
# compiling code-server's native modules, which leaves the other core to the typecheck, lint, unit and
# integration stages); the end-to-end stage waits for it and shows its log.
tools_pid=
if [ "${SKIP_E2E:-}" != 1 ]; then
  bash scripts/e2e.sh --install-only > "$ART/e2e-install.log" 2>&1 &
  tools_pid=$!
  echo "(Node 24 and code-server install in the background: $ART/e2e-install.log)"
fi

stage "npm ci"
if [ "${SKIP_NPM_CI:-}" = 1 ] && [ -d node_modules ]; then echo "skipped (SKIP_NPM_CI=1)"
else npm ci --no-audit --no-fund --loglevel=error || fatal "npm ci"; fi

stage "typecheck (tsc --noEmit: host+shared+tests, webview, e2e)"
check typecheck sh -c 'tsc --noEmit -p tsconfig.json && tsc --noEmit -p tsconfig.webview.json && tsc --noEmit -p tsconfig.e2e.json'

stage "lint (eslint)"
check lint eslint --max-warnings=0 .

stage "unit tests (vitest)"
check unit vitest run --reporter=default --reporter=json --outputFile.json="$ART/vitest.json"
[ -f "$ART/vitest.json" ] && node -e 'const r=require(process.argv[1]);console.log(`unit: ${r.numPassedTests} passed, ${r.numFailedTests} failed`)' "$ART/vitest.json"

stage "build + package (.vsix, offline)"
node scripts/build.mjs --tests || fatal "build"
vsce package --no-dependencies -o dist/acp-bridge-vscode.vsix </dev/null || fatal "vsce package"

stage "integration tests (node:test, real bridge: ${ACP_BRIDGE_CMD:-<repo>/.venv/bin/acp-bridge})"
# Every built test file (the shell expands the pattern; build.mjs rebuilds out/ from scratch, so a removed
# test leaves nothing behind).
check integration timeout 300 node --test --test-concurrency=1 --test-reporter=spec out/integration/*.test.mjs

if [ "${SKIP_E2E:-}" = 1 ]; then
  stage "end to end: skipped (SKIP_E2E=1)"
else
  stage "end to end (code-server + Playwright + real bridge)"
  if [ -n "$tools_pid" ] && ! wait "$tools_pid"; then
    cat "$ART/e2e-install.log"; echo "--- e2e: FAILED (installing Node 24 and code-server)"; failed+=(e2e)
  else
    cat "$ART/e2e-install.log"
    check e2e bash scripts/e2e.sh
  fi
  [ -f "$ART/latency.json" ] && echo "update→card latency (e2e): $(cat "$ART/latency.json")"
fi

echo
echo "=== vscode-extension: $(( SECONDS - t_start ))s; artifacts in $ART"
if [ ${#failed[@]} -gt 0 ]; then echo "vscode-extension: FAILED: ${failed[*]}"; exit 1; fi
echo "vscode-extension: all stages passed"
