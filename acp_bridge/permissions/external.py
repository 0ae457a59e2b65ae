"""External tools (a session's MCP servers' tools) as the policy sees them.

`acp_bridge.mcp` registers a session's MCP tools in `SessionPermissions.external_tools` as they come and
go. They ask by default (no class), whatever their annotations say: annotations are the server's claims.
`readOnlyHint: true` only lets a tool run in plan mode (still asking). An "always" answer covers the one
tool of the one server (scope kind "tool", its value the server), or every tool of the server when the user
picks that option (scope kind "server").

Must not: decide anything, or trust a server's annotation beyond plan mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp_bridge.permissions.scope import Scope


@dataclass(frozen=True, slots=True)
class ExternalTool:
    """An MCP tool as the policy sees it: its server, and whether it says it only reads."""

    server: str
    tool: str
    read_only: bool = False

    def tool_scope(self, name: str) -> Scope:
        return Scope(name, "tool", self.server, f"{self.server}: {self.tool}")

    def server_scope(self, name: str) -> Scope:
        return Scope(f"mcp server {self.server}", "server", self.server, self.server)
