#!/usr/bin/env bash
# Debian packages the Python test suite uses: ripgrep (grep's fast path; the pure-Python path is tested
# too) and Neovim (Debian's 0.7.2 runs the Neovim 0.7-0.9 recipe of docs/editors/neovim.md, tests/e2e).
# Idempotent and quiet when everything is present.
set -euo pipefail
need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v nvim >/dev/null || need+=(neovim)
if ((${#need[@]})); then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "system-deps: missing ${need[*]} (not root; the tests that need them will say so)" >&2
  fi
fi
