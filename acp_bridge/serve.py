"""`acp-bridge serve`: the ACP face on this process's stdio, what an editor spawns.

`run` claims stdio and sets the core up (`boot.claim_and_set_up`), then serves under
`boot.run_until_exit`. `serve_stdio` wires the stdio frames (`stdio`) to the JSON-RPC peer (`jsonrpc`)
and the ACP agent (`connection`), and serves until stdin EOF, SIGTERM, SIGHUP or the client closing our
stdout (EPIPE); then it cancels everything (every process the tools started included), waits for it to
stop and returns 0. SIGINT only cancels the running prompts (each answers `cancelled`) and serving goes
on.

Must not: be imported by the LSP face, or by the command line before `serve` is chosen (it loads the
core: its options live in `boot`).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from .boot import cancel_running_prompts, claim_and_set_up, handling_signals, run_until_exit
from .connection import AcpAgent, AcpChannel
from .jsonrpc import JsonRpcPeer
from .sessions import SessionManager
from .stdio import FrameWriter, LineReader, Stdio, claim_stdio

if TYPE_CHECKING:
    from .store import SessionStore

log = logging.getLogger(__name__)


def run(args: argparse.Namespace) -> int:
    stdio, setup = claim_and_set_up(args)
    store = setup.store
    return run_until_exit(
        serve_stdio(
            lambda channel: SessionManager(channel, setup.backend, setup.tools, setup.config, recorder=store),
            store=store,
            stdio=stdio,
        )
    )


async def serve_stdio(
    make_manager: Callable[[AcpChannel], SessionManager],
    *,
    store: SessionStore | None = None,
    max_line: int | None = None,
    stdio: Stdio | None = None,
) -> int:
    """Serve ACP on this process's stdio until stdin closes, SIGTERM, SIGHUP or the client stops reading
    our output. Returns the exit status: 0 in every case, since a signal is how editors and supervisors
    ask us to stop, and the shutdown (cancel everything, stop every process the tools started) is the
    same clean one as on EOF. SIGINT cancels the running prompts and serving goes on. `stdio`: the
    (input, output) descriptors `claim_stdio` returned, when the caller claimed them first."""
    in_fd, out_fd = stdio if stdio is not None else claim_stdio()
    channel = AcpChannel()
    manager = make_manager(channel)
    reader = LineReader(in_fd, max_line) if max_line else LineReader(in_fd)
    writer = FrameWriter(out_fd)
    await reader.start()
    await writer.start()
    agent = AcpAgent(channel, manager, store)
    peer = JsonRpcPeer(reader, writer, agent.requests, agent.notifications)
    channel.bind(peer)
    try:
        with handling_signals(stop=reader.stop, interrupt=lambda: cancel_running_prompts(manager)):
            await peer.run()
            log.info("input ended; shutting down")
    finally:
        await manager.shutdown()
        # Bounded at every stage: an editor closing our stdin must see us gone within 2 s.
        await peer.wait_handlers(0.2)
        await writer.aclose(within=0.4)
        if store is not None:
            store.close()
        try:
            os.set_blocking(in_fd, True)
        except OSError:
            pass
    return 0
