"""How the policy classes the tools: what a tool does decides what of its arguments the policy examines
(a file tool's paths, a command's argv and directory, a fetch's host) and what the modes do with it.

Must not: name a tool the bridge does not build in; a tool missing here (an MCP tool, a tool from
`--extra-tools`) has no class and asks, unless the policy allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

ToolClass = Literal["read", "edit", "execute", "fetch", "safe"]

# How the built-in tools are treated. A tool missing here asks (fail safe) unless the policy allows it.
DEFAULT_CLASSES: Mapping[str, ToolClass] = {
    "read": "read",
    "grep": "read",
    "glob": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "execute",  # `run_in_background` included: the same command, the same scope and rules
    # They act only on the session's own background commands (read its output, stop one).
    "bash_output": "safe",
    "kill_bash": "safe",
    "web_fetch": "fetch",
    "todo_write": "safe",
    "ask_user": "safe",  # it only asks the user a question: nothing to approve first
    "run_code": "safe",  # Code Mode: the program acts only through its calls, each decided on its own
    "task": "safe",  # a subagent acts only through its calls, each decided on its own
}

# The tool classes whose calls cannot change what a later decision sees on disk (a symlink's target).
NO_DISK_EFFECTS: frozenset[ToolClass | None] = frozenset({"read", "safe", "fetch"})
