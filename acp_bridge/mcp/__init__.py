"""MCP servers: the user's own tool servers, shown, gated and followed like the built-in tools.

The modules, from the outside in:
- `config`: the three sources of servers (ACP `mcpServers`, `--mcp-config`, the LSP face's
  `initializationOptions.mcpServers`) read into `ServerList`s;
- `servers`: `SessionServers`, a session's servers: background start, the first prompt's wait, failure
  reports, restarts, tool and prompt registration, shutdown;
- `tools`, `present`, `content`, `prompts`, `naming`: an MCP tool as a `ToolDefinition` (raw schema, body,
  cards), its result held to the payload budget, prompts as slash commands, the names;
- `client` + `stdio`: the only modules that import the official MCP SDK, loaded (in a worker thread) when
  a session first has a server, so a bridge without MCP servers never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .config import ConfigError, ServerList, load_config_file, merge, parse_acp, parse_any

if TYPE_CHECKING:
    from .present import presentation_definition

__all__ = [
    "ConfigError",
    "ServerList",
    "load_config_file",
    "merge",
    "parse_acp",
    "parse_any",
    "presentation_definition",
]


def __getattr__(name: str) -> Any:
    # `present` loads the registry and the mapping: loaded when asked for (PEP 562), so that reading
    # `--mcp-config` (which `serve` does before answering `initialize`) does not.
    if name == "presentation_definition":
        from .present import presentation_definition

        return presentation_definition
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
