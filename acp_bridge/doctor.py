"""`acp-bridge doctor`: one table of what the bridge needs and what it finds on this machine.

Each row is one thing (the Python it runs on, ripgrep, Deno, the model, its API key, the state
directory, the `acp-bridge` command, each configured MCP server), with what was found and, when it is
missing, the fix. A required row that is missing makes the exit status 1; optional rows (ripgrep, the
command on PATH) only warn. It takes the options of `serve` that decide what is needed (`--model`,
`--base-url`, `--state-dir`, `--mcp-config`, `--code-mode`), so `acp-bridge doctor` followed by an
editor's arguments checks that set-up. `--json` prints the same rows as data (for an editor extension).

Nothing is contacted unless asked: `--check-key` sends the key to the endpoint's `GET /models`, as
`acp-bridge login` does; an MCP server is looked up on PATH (stdio) or only named (http, sse), never
started.

Must not: print, log or put in the JSON any part of an API key; create or change any file.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, Literal, TextIO

from acp_bridge.common.credentials import (
    API_KEY_ENV_VARS,
    api_key_from_environment,
    credentials_path,
    read_stored_key,
)
from acp_bridge.common.settings import CODE_MODES, DEFAULT_CODE_MODE
from acp_bridge.common.state_dir import state_dir

from .version import version_text

Status = Literal["ok", "missing", "warning"]

MIN_PYTHON: Final = (3, 11)
# A found tool's `--version` gets this long to answer (a cold Deno start on a slow disk included).
VERSION_TIMEOUT_S: Final = 10.0


@dataclass(frozen=True, slots=True)
class Check:
    item: str
    status: Status
    found: str
    fix: str = ""
    required: bool = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default="scripted", metavar="SPEC", help="the model spec `serve` gets (default: scripted)"
    )
    parser.add_argument(
        "--base-url", default=None, help="the endpoint of an openai: model (default: DeepSeek's)"
    )
    parser.add_argument("--state-dir", default=None, metavar="DIR", help="the state directory `serve` gets")
    parser.add_argument(
        "--mcp-config", default=None, metavar="PATH", help="the MCP servers file `serve` gets"
    )
    parser.add_argument(
        "--code-mode",
        choices=CODE_MODES,
        default=DEFAULT_CODE_MODE,
        help="`off` makes Deno optional (default: on)",
    )
    parser.add_argument(
        "--check-key",
        action="store_true",
        help="also send the API key to the endpoint's GET /models to see whether it is accepted",
    )
    parser.add_argument("--json", action="store_true", help="print the rows as JSON instead of a table")


def run(args: argparse.Namespace) -> int:
    checks = collect(args)
    if args.json:
        print(json.dumps({"ok": all_required_ok(checks), "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        render(checks, sys.stdout)
    return 0 if all_required_ok(checks) else 1


def all_required_ok(checks: Sequence[Check]) -> bool:
    return not any(c.required and c.status == "missing" for c in checks)


def collect(args: argparse.Namespace) -> list[Check]:
    return [
        check_python(),
        check_command(),
        check_ripgrep(),
        check_deno(args.code_mode),
        *check_model_and_key(args.model, args.base_url, check_key=args.check_key),
        check_state_dir(args.state_dir),
        *check_mcp_servers(args.mcp_config),
    ]


# --- the table ------------------------------------------------------------------------------------------

_LABELS: Final[dict[Status, str]] = {"ok": "ok", "missing": "MISSING", "warning": "warning"}


def render(checks: Sequence[Check], out: TextIO) -> None:
    item_width = max(len("ITEM"), *(len(c.item) for c in checks)) + 2
    status_width = max(len(label) for label in _LABELS.values()) + 2
    out.write(f"{version_text()}\n\n")
    out.write(f"{'ITEM':<{item_width}}{'STATUS':<{status_width}}FOUND\n")
    for check in checks:
        out.write(f"{check.item:<{item_width}}{_LABELS[check.status]:<{status_width}}{check.found}\n")
        if check.fix and check.status != "ok":
            out.write(f"{'':<{item_width + status_width}}fix: {check.fix}\n")
    missing = [c.item for c in checks if c.required and c.status == "missing"]
    if missing:
        out.write(f"\n{len(missing)} required item(s) missing: {', '.join(missing)}.\n")
    else:
        out.write("\nEverything the bridge needs is here.\n")


# --- the rows -------------------------------------------------------------------------------------------


def check_python() -> Check:
    found = f"Python {sys.version.split()[0]} ({sys.executable})"
    if sys.version_info >= MIN_PYTHON:
        return Check("Python", "ok", found)
    return Check(
        "Python", "missing", found, fix="install Python 3.11 or newer and reinstall acp-bridge with it"
    )


def check_command() -> Check:
    """Editors start `acp-bridge` by name unless told a full path: is that name this bridge?"""
    found = shutil.which("acp-bridge")
    if found:
        return Check("acp-bridge command", "ok", found, required=False)
    here = Path(sys.executable).parent / "acp-bridge"
    where = f" (this one is {here})" if here.exists() else ""
    return Check(
        "acp-bridge command",
        "warning",
        f"`acp-bridge` is not on PATH{where}",
        fix="give editors the full path, or `uvx acp-bridge-agent` as the command, or put its folder on PATH",
        required=False,
    )


def check_ripgrep() -> Check:
    found = shutil.which("rg")
    if found:
        return Check("ripgrep (rg)", "ok", f"{_first_line([found, '--version'])} ({found})", required=False)
    return Check(
        "ripgrep (rg)",
        "warning",
        "not on PATH: `grep` uses its slower Python search",
        fix="install ripgrep: apt, dnf or brew install ripgrep (others: github.com/BurntSushi/ripgrep)",
        required=False,
    )


def check_deno(code_mode: str) -> Check:
    needed = code_mode != "off"
    try:
        import deno  # type: ignore[import-untyped]  # the `deno` PyPI package ships the binary

        binary = str(deno.find_deno_bin())
    except (ImportError, OSError, RuntimeError) as exc:
        return Check(
            "Deno (Code Mode)",
            "missing" if needed else "warning",
            f"not usable: {exc}",
            fix="reinstall acp-bridge (its `deno` dependency ships the binary), or run with --code-mode off",
            required=needed,
        )
    version = _first_line([binary, "--version"])
    return Check("Deno (Code Mode)", "ok", f"{version} ({binary})", required=needed)


def check_model_and_key(spec: str, base_url: str | None, *, check_key: bool) -> Iterator[Check]:
    kind, _, name = spec.partition(":")
    if kind == "scripted":
        if name and not Path(name).is_file():
            yield Check(
                "model", "missing", f"{spec}: no such script file", fix="give an existing script's path"
            )
        else:
            yield Check("model", "ok", f"{spec} (offline, needs no key)")
        yield _key_check(None, needed=False, check_key=False)
        return
    if kind != "openai" or not name:
        yield Check(
            "model",
            "missing",
            f"{spec!r} is not a model spec",
            fix="use scripted, scripted:PATH or openai:MODEL",
        )
        return
    from .models.openai import DEFAULT_BASE_URL

    endpoint = (base_url or DEFAULT_BASE_URL).rstrip("/")
    yield Check("model", "ok", f"{name} at {endpoint}")
    yield _key_check(endpoint, needed=True, check_key=check_key)


def _key_check(endpoint: str | None, *, needed: bool, check_key: bool) -> Check:
    key, variable = api_key_from_environment()
    source = f"from ${variable}" if variable else ""
    if key is None and endpoint is not None:
        key = read_stored_key(endpoint)
        source = f"stored by `acp-bridge login` in {credentials_path()}" if key else ""
    if key is None:
        names = ", ".join(API_KEY_ENV_VARS)
        login = f"acp-bridge login --base-url {endpoint}" if endpoint else "acp-bridge login"
        return Check(
            "API key",
            "missing" if needed else "ok",
            "none found" if needed else "not needed by this model",
            fix=f"run `{login}` once, or set one of {names} in the editor's environment",
            required=needed,
        )
    if not needed:
        return Check("API key", "ok", f"{source} (not needed by this model)", required=False)
    if not check_key or endpoint is None:
        return Check("API key", "ok", f"{source} (not checked: --check-key asks the endpoint)")
    from acp_bridge.auth.login import check_key as ask_endpoint

    accepted, verdict = ask_endpoint(endpoint, key)
    return Check(
        "API key",
        "ok" if accepted else "missing",
        f"{source}: {verdict}",
        fix="" if accepted else f"run `acp-bridge login --base-url {endpoint}` with a valid key",
    )


def check_state_dir(option: str | None) -> Check:
    path = state_dir(option)
    fix = "make it writable, or pass --state-dir DIR (history and per-project rules live there)"
    if path.exists():
        if path.is_dir() and os.access(path, os.W_OK | os.X_OK):
            return Check("state directory", "ok", f"{path} (writable)")
        return Check("state directory", "missing", f"{path} is not a writable directory", fix=fix)
    # Created on first write: the nearest existing ancestor must be a writable directory.
    ancestor = next((p for p in path.parents if p.exists()), None)
    if ancestor is not None and ancestor.is_dir() and os.access(ancestor, os.W_OK | os.X_OK):
        return Check("state directory", "ok", f"{path} (created on first use)")
    return Check("state directory", "missing", f"{path} cannot be created (in {ancestor})", fix=fix)


def check_mcp_servers(config: str | None) -> Iterator[Check]:
    if config is None:
        yield Check(
            "MCP servers",
            "ok",
            "none configured (--mcp-config PATH; editors may pass their own)",
            required=False,
        )
        return
    from .mcp.config import ConfigError, StdioServer, load_config_file

    try:
        servers = load_config_file(config)
    except ConfigError as exc:
        yield Check("MCP servers", "missing", str(exc), fix="fix the --mcp-config file (see docs/mcp.md)")
        return
    if not servers:
        yield Check("MCP servers", "ok", f"{config} configures none", required=False)
    for server in servers.servers:
        item = f"MCP server {server.name}"
        if not isinstance(server, StdioServer):
            yield Check(item, "ok", f"{server.kind} {server.url} (not contacted)")
            continue
        command = " ".join((server.command, *server.args))
        found = _find_program(server.command, dict(server.env).get("PATH"))
        if found:
            yield Check(item, "ok", f"stdio `{command}` ({found})")
        else:
            yield Check(
                item,
                "missing",
                f"stdio `{command}`: {server.command} is not on PATH",
                fix=f"install {server.command}, or give its absolute path in {config}",
            )
    for problem in servers.problems:
        yield Check(f"MCP server {problem.name}", "missing", problem.reason, fix=f"fix its entry in {config}")


def _find_program(command: str, path: str | None) -> str | None:
    if os.sep in command:
        return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
    return shutil.which(command, path=path)


def _first_line(argv: list[str]) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"found, but `{' '.join(argv)}` failed ({type(exc).__name__})"
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if lines else f"found (`{' '.join(argv)}` printed nothing)"
