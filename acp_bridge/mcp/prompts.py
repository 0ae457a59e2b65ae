"""MCP prompts as slash commands: `/server:prompt args` runs the prompt the server returns.

Arguments may be given by name (`/github:review pr=42 focus="error handling"`) or in the order the
prompt declares them (`/github:review 42 "error handling"`); a prompt with a single argument takes the
whole rest of the line. `render_messages` turns the `prompts/get` result into the text of the user's
turn: the messages' text (embedded text resources included, anything else named), each labelled with
its role when the prompt speaks as more than the user.

Must not: import the MCP SDK (it works on the JSON of `prompts/list` and `prompts/get`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class PromptArgument:
    name: str
    description: str | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptCommand:
    """One prompt of one server, as the slash command `command` (no slash)."""

    command: str
    server: str
    prompt: str
    description: str
    arguments: tuple[PromptArgument, ...] = ()

    @property
    def hint(self) -> str | None:
        """The input hint the client shows after the command (ACP `available_commands`)."""
        if not self.arguments:
            return None
        return " ".join(a.name if a.required else f"[{a.name}]" for a in self.arguments)


class PromptArgsError(ValueError):
    """The command line does not give the prompt what it needs (the message says what is missing)."""


def prompt_command(command: str, server: str, raw: Mapping[str, Any]) -> PromptCommand:
    """A `prompts/list` entry (JSON) as a command."""
    arguments = []
    for arg in raw.get("arguments") or ():
        if isinstance(arg, Mapping) and isinstance(arg.get("name"), str):
            described = arg.get("description")
            arguments.append(
                PromptArgument(
                    arg["name"],
                    described if isinstance(described, str) else None,
                    arg.get("required") is True,
                )
            )
    described = raw.get("description") or raw.get("title")
    return PromptCommand(
        command,
        server,
        str(raw.get("name", "")),
        str(described) if described else f"Prompt from MCP server {server}",
        tuple(arguments),
    )


def parse_arguments(command: PromptCommand, text: str) -> dict[str, str]:
    """The prompt's arguments from what follows the command. Raises PromptArgsError."""
    declared = command.arguments
    text = text.strip()
    values: dict[str, str] = {}
    if len(declared) == 1 and text and not text.startswith(f"{declared[0].name}="):
        values[declared[0].name] = text
    elif text:
        try:
            words = shlex.split(text)
        except ValueError:
            words = text.split()
        names = {a.name for a in declared}
        positional: list[str] = []
        for word in words:
            key, sep, value = word.partition("=")
            if sep and key in names:
                values[key] = value
            else:
                positional.append(word)
        free = [a.name for a in declared if a.name not in values]
        if len(positional) > len(free):
            if not free:
                raise PromptArgsError(f"`/{command.command}` takes no more arguments than {_usage(command)}")
            # More words than arguments: the last argument takes the rest of them.
            positional[len(free) - 1 :] = [" ".join(positional[len(free) - 1 :])]
        values.update(zip(free, positional, strict=False))
    missing = [a for a in declared if a.required and a.name not in values]
    if missing:
        listed = ", ".join(f"`{a.name}`" + (f" ({a.description})" if a.description else "") for a in missing)
        raise PromptArgsError(f"`/{command.command}` needs {listed}. Usage: {_usage(command)}")
    return values


def _usage(command: PromptCommand) -> str:
    hint = command.hint
    return f"`/{command.command}{' ' + hint if hint else ''}`"


def _content_text(content: Any) -> str:
    if not isinstance(content, Mapping):
        return ""
    kind = content.get("type")
    if kind == "text":
        return str(content.get("text", ""))
    if kind == "resource":
        resource = content.get("resource")
        if isinstance(resource, Mapping) and isinstance(resource.get("text"), str):
            return f"[Resource {resource.get('uri', '')}]\n{resource['text']}"
        uri = resource.get("uri", "") if isinstance(resource, Mapping) else ""
        return f"[Resource {uri}: binary, not included]"
    if kind == "resource_link":
        return f"[Resource: {content.get('name') or content.get('uri')}]({content.get('uri', '')})"
    return f"[{kind} content, not included]"


def render_messages(messages: Sequence[Any]) -> str:
    """The text of a `prompts/get` result's messages (see the module docstring)."""
    parts: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, Mapping):
            text = _content_text(message.get("content"))
            if text.strip():
                parts.append((str(message.get("role", "user")), text))
    if all(role == "user" for role, _ in parts):
        return "\n\n".join(text for _, text in parts)
    return "\n\n".join(f"**{role.capitalize()}:** {text}" for role, text in parts)
