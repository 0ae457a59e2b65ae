"""`acp-bridge --version`: the bridge's version and the Python it runs on, on one line.

Must not: import anything but the standard library (the command line builds its parser with it).
"""

from __future__ import annotations

import platform

from acp_bridge import __version__


def version_text() -> str:
    """`acp-bridge 0.1.0 (Python 3.11.7)`: what a bug report needs first."""
    return f"acp-bridge {__version__} (Python {platform.python_version()})"
