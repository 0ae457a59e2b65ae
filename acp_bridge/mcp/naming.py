"""The names an MCP server's tools and prompts get in the bridge.

A tool is `mcp__<server>__<tool>`: characters outside `[A-Za-z0-9_-]` become `_` (what OpenAI-compatible
APIs accept in a function name), and the whole name stays within 64 characters; a name that had to be
shortened, or that two tools would share, ends in a short hash of the server and tool it stands for, so
it stays unique and stable from one start to the next. A prompt is the slash command `server:prompt`,
with the same character rule.

`split_tool_name` reads a name back for display when the tool itself is not known (a replayed session
whose server is gone): it is exact for names without `__` inside the server's name.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Container
from typing import Final

PREFIX: Final = "mcp__"
MAX_TOOL_NAME: Final = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def safe(text: str) -> str:
    return _UNSAFE.sub("_", text) or "_"


def _digest(server: str, tool: str) -> str:
    return hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]


def tool_name(server: str, tool: str, taken: Container[str] = ()) -> str:
    """The registered name of `tool` of `server`; `taken` holds the names already given in the session."""
    name = f"{PREFIX}{safe(server)}__{safe(tool)}"
    if len(name) <= MAX_TOOL_NAME and name not in taken:
        return name
    suffix = "_" + _digest(server, tool)
    return name[: MAX_TOOL_NAME - len(suffix)] + suffix


def split_tool_name(name: str) -> tuple[str, str] | None:
    """(server, tool) as the name shows them, or None when `name` is not an MCP tool's."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition("__")
    if not sep or not server or not tool:
        return None
    return server, tool


def command_name(server: str, prompt: str) -> str:
    """The slash command (without the slash) of a server's prompt."""
    return f"{safe(server)}:{safe(prompt)}"
