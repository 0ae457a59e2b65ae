"""Where the bridge keeps what outlives a process: session logs (history) and per-project "always" rules.

The default is the platform's per-user state directory, so history works without configuration:
- Linux and other Unixes: `$XDG_STATE_HOME/acp-bridge`, else `~/.local/state/acp-bridge` (the XDG Base
  Directory Specification: state data "that should persist between (application) restarts", such as
  history; a relative `XDG_STATE_HOME` is invalid there and ignored);
- macOS: `~/Library/Application Support/acp-bridge`;
- Windows: `%LOCALAPPDATA%\\acp-bridge` (else `~\\AppData\\Local\\acp-bridge`).
`--state-dir DIR` replaces it; `--no-history` keeps no session logs (the rules of `--remember project`
still live in the state directory: they are settings, not history).

Stdlib only, and nothing is created here: the stores create their directories on first write.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

APP_DIR = "acp-bridge"


def default_state_dir(
    env: Mapping[str, str] | None = None, platform: str | None = None, home: Path | None = None
) -> Path:
    """The per-user state directory of this platform (see the module docstring)."""
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    home = Path.home() if home is None else home
    if platform == "darwin":
        return home / "Library" / "Application Support" / APP_DIR
    if platform.startswith(("win32", "cygwin")):
        local = env.get("LOCALAPPDATA")
        return (Path(local) if local else home / "AppData" / "Local") / APP_DIR
    xdg = env.get("XDG_STATE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_DIR
    return home / ".local" / "state" / APP_DIR


def state_dir(option: str | None) -> Path:
    """`--state-dir` when given (`~` expanded), else the platform default."""
    return Path(option).expanduser() if option else default_state_dir()
