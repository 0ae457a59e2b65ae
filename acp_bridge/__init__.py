"""acp_bridge: the agent core (sessions, the turn loop, permissions) and its editor faces.

Entry points: `acp-bridge serve` (ACP over stdio, `connection.py`), `acp-bridge demo` (`demo.py`). A face
drives the core through `sessions.SessionManager` and implements `channel.ClientChannel`; see
docs/architecture.md.

Must not: import anything heavy here; `python -m acp_bridge` imports this first.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
