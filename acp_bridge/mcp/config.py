"""Which MCP servers a session gets: the three sources read into one list of `ServerConfig`s.

- ACP's `mcpServers` of `session/new` / `session/load` (`parse_acp`): stdio `{name, command, args,
  env: [{name, value}]}`, `{type: "http", name, url, headers: [{name, value}]}` and `{type: "sse", ...}`.
- The `--mcp-config PATH` file (`load_config_file`, `parse_config_mapping`), the format most tools share:
  `{"mcpServers": {name: {command, args, env: {K: V}} | {type, url, headers: {K: V}}}}`, where `type` is
  stdio, http (also spelled streamable-http / streamableHttp) or sse, and may be left out (a `command`
  means stdio, a `url` means http); `${VAR}` and `${VAR:-default}` in strings are read from the
  environment, and an entry with `"disabled": true` is skipped.
- The LSP face's `initializationOptions.mcpServers`: either of the two shapes (`parse_any`).

An entry that cannot be used is not a reason to refuse the session: it becomes a `ConfigProblem`, which
the session reports visibly (its name and why) like a server that failed to start. `merge` puts the
session's own servers first; a configured server of the same name is left out.

Must not: start anything, or import the MCP SDK (the command line and the session core read this).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

HttpKind = Literal["http", "sse"]


@dataclass(frozen=True, slots=True)
class StdioServer:
    """A server the bridge runs as a child process, speaking MCP on its stdin/stdout."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> Literal["stdio"]:
        return "stdio"


@dataclass(frozen=True, slots=True)
class HttpServer:
    """A server reached over streamable HTTP (`http`) or the older HTTP+SSE transport (`sse`)."""

    name: str
    url: str
    kind: HttpKind = "http"
    headers: tuple[tuple[str, str], ...] = ()


ServerConfig = StdioServer | HttpServer


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """An entry that was left out, and why (shown to the user, named by `name`)."""

    name: str
    reason: str


@dataclass(frozen=True, slots=True)
class ServerList:
    servers: tuple[ServerConfig, ...] = ()
    problems: tuple[ConfigProblem, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.servers or self.problems)


@dataclass(slots=True)
class _Collector:
    servers: list[ServerConfig] = field(default_factory=list)
    problems: list[ConfigProblem] = field(default_factory=list)

    def add(self, server: ServerConfig) -> None:
        if any(s.name == server.name for s in self.servers):
            self.problems.append(ConfigProblem(server.name, "another server has the same name"))
        else:
            self.servers.append(server)

    def problem(self, name: str, reason: str) -> None:
        self.problems.append(ConfigProblem(name, reason))

    def result(self) -> ServerList:
        return ServerList(tuple(self.servers), tuple(self.problems))


class ConfigError(ValueError):
    """The `--mcp-config` file as a whole cannot be read (a bad entry only becomes a `ConfigProblem`)."""


# --- ACP ------------------------------------------------------------------------------------------


def parse_acp(raw: object) -> ServerList:
    """ACP's `mcpServers` (a list; `None` or missing means none)."""
    found = _Collector()
    if raw is None:
        return found.result()
    if not isinstance(raw, list):
        found.problem("mcpServers", "must be a list of servers")
        return found.result()
    for index, entry in enumerate(raw):
        label = f"mcpServers[{index}]"
        if not isinstance(entry, Mapping):
            found.problem(label, "a server must be an object")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            found.problem(label, "a server needs a non-empty `name`")
            continue
        kind = entry.get("type", "stdio")
        try:
            if kind == "stdio":
                found.add(
                    StdioServer(
                        name,
                        _string(entry.get("command"), "command"),
                        _strings(entry.get("args", []), "args"),
                        _name_value_pairs(entry.get("env", []), "env"),
                    )
                )
            elif kind in ("http", "sse"):
                found.add(
                    HttpServer(
                        name,
                        _url(entry.get("url")),
                        "http" if kind == "http" else "sse",
                        _name_value_pairs(entry.get("headers", []), "headers"),
                    )
                )
            else:
                found.problem(name, f"transport {kind!r} is not supported (stdio, http and sse are)")
        except ValueError as exc:
            found.problem(name, str(exc))
    return found.result()


# --- the shared file format -----------------------------------------------------------------------

_HTTP_SPELLINGS: Mapping[str, HttpKind] = {
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}


def load_config_file(path: str) -> ServerList:
    """Read a `--mcp-config` file. Raises ConfigError when the file is missing, not JSON or has no
    `mcpServers` object (the command line turns it into its exit message)."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("mcpServers"), Mapping):
        raise ConfigError(f'{path} must be a JSON object with an "mcpServers" object')
    return parse_config_mapping(document["mcpServers"])


def parse_config_mapping(raw: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> ServerList:
    """The `mcpServers` object of the shared file format: server name → its settings."""
    env = os.environ if environ is None else environ
    found = _Collector()
    for name, entry in raw.items():
        if not isinstance(entry, Mapping):
            found.problem(str(name), "a server's settings must be an object")
            continue
        if entry.get("disabled") is True:
            continue
        try:
            found.add(_file_entry(str(name), entry, env))
        except ValueError as exc:
            found.problem(str(name), str(exc))
    return found.result()


def _file_entry(name: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> ServerConfig:
    kind = entry.get("type")
    if kind is None:
        kind = "stdio" if "command" in entry else "http" if "url" in entry else None
        if kind is None:
            raise ValueError("needs a `command` (stdio) or a `url` (http, sse)")
    if kind == "stdio":
        return StdioServer(
            name,
            _expand(_string(entry.get("command"), "command"), env),
            tuple(_expand(a, env) for a in _strings(entry.get("args", []), "args")),
            tuple((k, _expand(v, env)) for k, v in _string_mapping(entry.get("env", {}), "env")),
        )
    if isinstance(kind, str) and kind in _HTTP_SPELLINGS:
        return HttpServer(
            name,
            _url(_expand(_string(entry.get("url"), "url"), env)),
            _HTTP_SPELLINGS[kind],
            tuple((k, _expand(v, env)) for k, v in _string_mapping(entry.get("headers", {}), "headers")),
        )
    raise ValueError(f"transport {kind!r} is not supported (stdio, http and sse are)")


def parse_any(raw: object) -> ServerList:
    """Either shape: ACP's list, or the file format's name → settings object (LSP initializationOptions)."""
    if isinstance(raw, Mapping):
        inner = raw.get("mcpServers")
        return parse_config_mapping(inner if isinstance(inner, Mapping) else raw)
    return parse_acp(raw)


def merge(first: ServerList, then: ServerList) -> ServerList:
    """`first`'s servers, then those of `then` whose name `first` does not use (the session's own list
    wins over the configured one)."""
    names = {s.name for s in first.servers}
    extra = tuple(s for s in then.servers if s.name not in names)
    return ServerList(first.servers + extra, first.problems + then.problems)


# --- values ---------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def _expand(text: str, env: Mapping[str, str]) -> str:
    """`${VAR}` and `${VAR:-default}` from the environment; an unset variable without a default is an
    error rather than an empty string (a server started with half its settings fails less clearly)."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = env.get(name)
        if found:
            return found
        if default is not None:
            return default
        raise ValueError(f"${{{name}}} is not set in the environment")

    return _VARIABLE.sub(value, text)


def _string(value: object, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"`{key}` must be a non-empty string")
    return value


def _strings(value: object, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"`{key}` must be a list of strings")
    return tuple(value)


def _name_value_pairs(value: object, key: str) -> tuple[tuple[str, str], ...]:
    """ACP's `[{name, value}]` lists (env variables, HTTP headers)."""
    if not isinstance(value, list):
        raise ValueError(f"`{key}` must be a list of {{name, value}} objects")
    pairs: list[tuple[str, str]] = []
    for item in value:
        if (
            not isinstance(item, Mapping)
            or not isinstance(item.get("name"), str)
            or not isinstance(item.get("value"), str)
        ):
            raise ValueError(f"`{key}` must be a list of {{name, value}} objects with string values")
        pairs.append((item["name"], item["value"]))
    return tuple(pairs)


def _string_mapping(value: object, key: str) -> Iterable[tuple[str, str]]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ValueError(f"`{key}` must be an object of string values")
    return list(value.items())


def _url(value: object) -> str:
    url = _string(value, "url").strip()
    if not re.match(r"^https?://[^/\s]+", url, re.IGNORECASE):
        raise ValueError(f"`url` must be an http(s) URL, got {url!r}")
    return url
