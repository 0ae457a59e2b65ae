"""A session's slash commands: the ones every session understands, answered without the model, and the
`available_commands_update` that lists them with the MCP servers' prompts.

`/permissions`, `/forget [N]`, `/mode [id]` and `/title NEW` are answered here, as an agent message;
`/compact [focus]` runs as the prompt's work (`compact_command` reads it), `/rewind [N]` as the session's
undo (`rewind.py`); any other `/name` (an MCP
prompt's command, or no command at all) goes to the model as typed.

Must not: change a permission or a title itself (the session's approvals and title do), or reach the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from acp_bridge import mapping
from acp_bridge.client.channel import Update
from acp_bridge.history.session_index import clean_title
from acp_bridge.permissions import rules_store
from acp_bridge.permissions.policy import MODES, SessionPermissions
from acp_bridge.permissions.scope import Rule
from acp_bridge.session import init_command

if TYPE_CHECKING:
    from acp_bridge.mcp.servers import SessionServers

# The slash commands every session understands (handled here, without the model).
COMMANDS: tuple[tuple[str, str, str | None], ...] = (
    ("permissions", "Show this session's permission mode and remembered rules, numbered", None),
    ("forget", "Forget the remembered 'always' answers: all of them, or number N of /permissions", "N"),
    ("mode", "Show or switch the permission mode: default, accept_edits, plan, full_access", "mode id"),
    ("compact", "Summarize the older conversation to free context", "what the summary should focus on"),
    ("title", "Rename this session (as session/list shows it)", "new title"),
    ("tasks", "List the background commands; /tasks kill ID stops one", "kill ID"),
    # Run by the session's undo (`rewind.py`), listed here with the others.
    ("rewind", "Put the files back as they were before the last turn, or turn N; /rewind list", "N | list"),
    init_command.COMMAND,  # `/init` asks the model for an AGENTS.md (init_command)
)


def compact_command(text: str) -> str | None:
    """The focus of a `/compact [focus]` prompt ("" without one), or None for any other prompt."""
    name, _, rest = text.partition(" ")
    return rest.strip() if name.strip() == "/compact" else None


class BackgroundTasks(Protocol):
    """The session's background commands as `/tasks` shows and stops them (`background.SessionBackground`)."""

    def tasks(self, argument: str) -> str: ...


class CommandsHost(Protocol):
    """What the commands act on (`session.Session` is one)."""

    @property
    def background(self) -> BackgroundTasks: ...

    @property
    def permissions(self) -> SessionPermissions: ...

    @property
    def mcp(self) -> SessionServers | None: ...

    @property
    def title(self) -> str | None: ...

    def set_title(self, title: str) -> None: ...

    def set_mode(self, mode_id: str) -> None: ...

    def forget_rules(self, number: int | None = None) -> list[Rule]: ...

    def send(self, update: Update) -> None: ...


class SlashCommands:
    """One session's slash commands (see the module docstring)."""

    def __init__(self, host: CommandsHost) -> None:
        self._host = host

    def run(self, text: str) -> bool:
        """Answer `text` when it is one of `COMMANDS` (but `/compact`); False for any other prompt."""
        host = self._host
        name, _, rest = text[1:].partition(" ")
        name, rest = name.strip(), rest.strip()
        if name == "permissions":
            host.send(mapping.agent_message_chunk(rules_store.describe(host.permissions)))
            return True
        if name == "forget":
            host.send(mapping.agent_message_chunk(self._forget(rest)))
            return True
        if name == "tasks":
            host.send(mapping.agent_message_chunk(host.background.tasks(rest)))
            return True
        if name == "title":
            try:
                host.set_title(clean_title(rest))
            except ValueError:
                host.send(mapping.agent_message_chunk("Usage: `/title NEW TITLE`."))
                return True
            host.send(mapping.agent_message_chunk(f"Session renamed: {host.title}"))
            return True
        if name == "mode":
            if not rest:
                host.send(mapping.agent_message_chunk(rules_store.describe(host.permissions)))
                return True
            if rest not in MODES:
                host.send(mapping.agent_message_chunk(f"Unknown mode `{rest}`. Modes: {', '.join(MODES)}."))
                return True
            host.set_mode(rest)
            host.send(
                mapping.agent_message_chunk(f"Mode is now **{MODES[rest].name}**: {MODES[rest].description}")
            )
            return True
        return False

    def _forget(self, which: str) -> str:
        """`/forget` (every rule) or `/forget N` (the Nth of `/permissions`): what the user is told."""
        if which and not which.isdigit():
            return "Usage: `/forget` (every rule) or `/forget N` (rule N of `/permissions`)."
        forgotten = self._host.forget_rules(int(which) if which else None)
        if not which:
            return f"Forgot {len(forgotten)} remembered rule{'s' if len(forgotten) != 1 else ''}."
        if not forgotten:
            return f"There is no rule {which}: `/permissions` lists them."
        return f"Forgot rule {which}: {forgotten[0].describe()}."

    def available_commands_update(self) -> Update:
        mcp = self._host.mcp
        commands = COMMANDS if mcp is None else (*COMMANDS, *mcp.commands())
        return mapping.available_commands(commands)
