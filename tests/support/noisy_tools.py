"""An `--extra-tools` module that writes to stdout while the bridge sets up: a `print` and a raw write to
fd 1 when imported, and another `print` when asked for its tools. None of it may reach the protocol
stream (test_bridge_protocol.py)."""

from __future__ import annotations

import os

from registry_core import ToolDefinition

print("noisy_tools: print at import", flush=True)
os.write(1, b"noisy_tools: raw write to fd 1 at import\n")


def tools() -> list[ToolDefinition]:
    print("noisy_tools: print from tools()", flush=True)
    return []
