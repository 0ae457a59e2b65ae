"""The `lsp` subcommand: the same core flags as `serve` (model, policy, logging), served over LSP.

`add_arguments` and `run` are what `acp_bridge.cli.COMMANDS["lsp"]` points at; `python -m acp_bridge.lsp`
runs the same thing directly. The editor may pick the model in `initializationOptions.model`; it replaces
the `--model` default for that connection. Sessions are logged as for `serve` (unless `--no-history`).

Must not: print to stdout (it is the protocol); import the ACP face (`connection`, `serve`) or the
command table (`cli`): what both faces share to start is `boot` and `stdio`; or import the core, pygls
or lsprotocol at module level: the command line imports this module to build the `lsp` parser.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from acp_bridge.runtime.boot import add_core_arguments, claim_and_set_up, load_model, run_until_exit

if TYPE_CHECKING:
    from acp_bridge.session.manager import SessionManager

    from .channel import LspChannel
    from .options import LspOptions

HELP = "serve the agent to LSP-only editors on stdio (Neovim, Helix, eglot)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_core_arguments(parser)


def run(args: argparse.Namespace) -> int:
    # The core and pygls are imported only when the server really runs (not to build the parser).
    from acp_bridge.session.manager import SessionManager

    from .server import serve_lsp

    stdio, setup = claim_and_set_up(args)

    def make_manager(channel: LspChannel, options: LspOptions) -> SessionManager:
        backend = setup.backend
        if options.model is not None and options.model != args.model:
            backend = load_model(options.model, args.base_url)
        return SessionManager(channel, backend, setup.tools, setup.config, recorder=setup.store)

    try:
        return run_until_exit(serve_lsp(make_manager, stdio=stdio))
    finally:
        if setup.store is not None:
            setup.store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="acp-bridge lsp", description=HELP)
    add_arguments(parser)
    return run(parser.parse_args(argv))
