"""An `--extra-tools` module that raises when imported: the core cannot be set up, and the bridge, which
answered `initialize` before loading it, must say why to every request (test_bridge_cold_start.py)."""

from __future__ import annotations

raise RuntimeError("broken_tools: this module refuses to load")
