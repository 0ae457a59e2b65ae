"""acp_bridge: the agent core (sessions, the turn loop, permissions) and its editor faces.

The package is in folders by job, each importing only the folders below it (docs/architecture.md lists
the layers; tests/acp_bridge/test_core_boundaries.py checks them). Entry points: `acp-bridge serve` (ACP
over stdio, `acp/serve.py`), `acp-bridge lsp` (`lsp/`), `acp-bridge demo` (`demo/`). A face drives the
core through `session.manager.SessionManager` and implements `client.channel.ClientChannel`.

Must not: import anything heavy here; `python -m acp_bridge` imports this first.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
