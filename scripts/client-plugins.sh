#!/usr/bin/env bash
# The editor plugins the client tests run (CodeCompanion, plenary.nvim, agentic.nvim, agent-shell and its
# libraries), each at the commit tests/clients/plugins.txt pins, into .cache/clients/plugins/<name>.
# They are no package of PyPI, npm or Debian, so they come from their own git repositories, under the git
# host $PLUGIN_GIT_BASE names (required; nothing runs this script on its own: `make test` and CI never do,
# and a machine without the plugins skips their tests, which say so).
# Idempotent: a plugin already at its commit (its `.pinned` file) is not fetched again.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${PLUGIN_GIT_BASE:?set PLUGIN_GIT_BASE to the git host of the repositories in tests/clients/plugins.txt}
plugins=.cache/clients/plugins
mkdir -p "$plugins"
status=0
while read -r name repository commit _; do
  case "$name" in ''|'#'*) continue ;; esac
  target=$plugins/$name
  if [ "$(cat "$target/.pinned" 2>/dev/null)" = "$commit" ]; then
    continue
  fi
  work=$(mktemp -d)
  if git -C "$work" init -q \
    && timeout 120 git -C "$work" fetch -q --depth 1 "$base/$repository" "$commit" \
    && git -C "$work" checkout -q FETCH_HEAD; then
    rm -rf "$target" "$work/.git"
    mv "$work" "$target"
    echo "$commit" >"$target/.pinned"
    echo "client-plugins: $name at ${commit:0:12}" >&2
  else
    rm -rf "$work"
    echo "client-plugins: could not fetch $repository at ${commit:0:12}; its tests will be skipped" >&2
    status=1
  fi
done <tests/clients/plugins.txt
exit $status
