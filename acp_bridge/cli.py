"""`acp-bridge` (and `python -m acp_bridge`): the command table.

`COMMANDS` maps each subcommand to the functions that add its options and run it: `serve` (the ACP agent
on stdio, `acp/serve.py`), `demo` (the built-in terminal client driving `serve` offline, `demo/`), `lsp`
(the LSP face, `lsp/command.py`), and `login` / `logout` (the API key of an endpoint, `auth/login.py`).
`serve` and `lsp` share the core's options (`runtime/boot.add_core_arguments`). `serve --login` /
`serve --logout` run `login` / `logout`: an ACP client runs a `terminal` auth method as our own command
line plus `--login`. No subcommand is the same as `serve`: what an editor configured for "the bridge" runs.

Each entry imports its subcommand's module only when called, and `main` adds the options of the chosen
subcommand only, so a run loads what that subcommand needs and nothing else (`serve` never loads pygls or
lsprotocol, about 250 ms of its spawn → initialize time; `--help` loads neither the core nor asyncio).

Must not: import at module level anything but the standard library (the command table is all it is).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

# Every function below imports its subcommand's module when called: building the parser and `--help`
# must not pay for the core, the faces or the demo.


def _add_serve(parser: argparse.ArgumentParser) -> None:
    from acp_bridge.runtime.boot import add_core_arguments

    add_core_arguments(parser)
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument("--login", action="store_true", help="ask for the --base-url endpoint's API key, check "
                      "and store it (what an editor's terminal login runs), then exit")  # fmt: skip
    auth.add_argument("--logout", action="store_true", help="remove the stored key of --base-url, then exit")


def _run_serve(args: argparse.Namespace) -> int:
    if args.login:
        return _run_login(args)
    if args.logout:
        return _run_logout(args)
    from acp_bridge.runtime.boot import collection_paused

    with collection_paused():  # the face's modules (asyncio, the handshake) are the core's first part
        from acp_bridge.acp.serve import run

    return run(args)


def _add_login(parser: argparse.ArgumentParser) -> None:
    from acp_bridge.auth.login import add_login_arguments

    add_login_arguments(parser)


def _run_login(args: argparse.Namespace) -> int:
    from acp_bridge.auth.login import run_login

    return run_login(args)


def _add_logout(parser: argparse.ArgumentParser) -> None:
    from acp_bridge.auth.login import add_arguments

    add_arguments(parser)


def _run_logout(args: argparse.Namespace) -> int:
    from acp_bridge.auth.login import run_logout

    return run_logout(args)


def _add_demo(parser: argparse.ArgumentParser) -> None:
    from acp_bridge.demo.run import add_arguments

    add_arguments(parser)


def _run_demo(args: argparse.Namespace) -> int:
    from acp_bridge.demo.run import run

    return run(args)


def _add_lsp(parser: argparse.ArgumentParser) -> None:
    from .lsp.command import add_arguments

    add_arguments(parser)


def _run_lsp(args: argparse.Namespace) -> int:
    from .lsp.command import run

    return run(args)


class Command(NamedTuple):
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _add_doctor(parser: argparse.ArgumentParser) -> None:
    from .doctor import add_arguments

    add_arguments(parser)


def _run_doctor(args: argparse.Namespace) -> int:
    from .doctor import run

    return run(args)


COMMANDS: dict[str, Command] = {
    "serve": Command("run the ACP agent on stdio (what an editor spawns)", _add_serve, _run_serve),
    "demo": Command("watch the agent work: a terminal client drives `serve` offline", _add_demo, _run_demo),
    "lsp": Command("serve the agent to LSP-only editors on stdio (Neovim, Helix, eglot)", _add_lsp, _run_lsp),
    "login": Command("store an endpoint's API key (asked for hidden, then checked)", _add_login, _run_login),
    "logout": Command("remove the stored API key of an endpoint", _add_logout, _run_logout),
    "doctor": Command(
        "check what the bridge needs here, and how to fix what is missing", _add_doctor, _run_doctor
    ),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line. With `only` (a subcommand's name, or "" for none), only that subcommand gets its
    options; every subcommand is still listed with its help, so `acp-bridge --help` is complete."""
    parser = argparse.ArgumentParser(
        prog="acp-bridge", description="Show an AI agent's tool calls live in code editors (ACP over stdio)."
    )
    from .version import version_text  # the one project import a parser needs: the version line

    parser.add_argument("--version", action="version", version=version_text())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        subparser = sub.add_parser(name, help=command.help, description=command.help)
        if only is None or only == name:
            command.add_arguments(subparser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or (words[0] not in COMMANDS and words[0] not in ("-h", "--help", "--version")):
        # No command (or only options) means `serve`: what an editor configured for "the bridge" runs.
        words = ["serve", *words]
    args: Any = build_parser(only=words[0] if words[0] in COMMANDS else "").parse_args(words)
    try:
        return COMMANDS[args.command].run(args)
    except KeyboardInterrupt:
        return 130
