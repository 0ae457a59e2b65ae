"""`acp-bridge serve`: the ACP face on this process's stdio, what an editor spawns.

`run` claims stdio first (`stdio.claim_stdio`, so nothing the set-up prints can reach the protocol),
sets up logging, checks the arguments and reads the `--mcp-config` file (a bad one stops it here, with
its message), then serves under `boot.run_until_exit`. `serve_stdio` wires the
stdio frames (`stdio`) to the JSON-RPC peer (`jsonrpc`) and, through the handshake (`handshake`), to the
ACP agent (`connection`).

Cold start: the agent core (model, tools, registry, the session core, the store) is most of the start-up
time, and `initialize` needs none of it. So this module loads none of it up front: the handshake answers
`initialize` from the arguments, and right after that answer is written `AgentLoader` loads the core in
a worker thread (`load_agent`: `boot.load_core` and the modules of `connection` and `sessions`), while
the event loop goes on reading. Every other message waits for it, in arrival order; if it cannot be set
up, each request is answered with the reason (and the exit status is 1). After the answer rather than
at spawn: a thread importing modules holds the interpreter's lock while the loop tries to answer, and
clients send `initialize` first anyway. Measured against `benchmarks/floor_agent.py` on a shared 2-core
machine: spawn → `initialize` 1.0-1.1× the floor this way, 1.2-1.3× with the thread started at spawn,
and the first `session/new` no later.

Serving ends at stdin EOF, SIGTERM, SIGHUP or the client closing our stdout (EPIPE); then, if messages
wait for a core still loading, it gets a moment (`SETTLE_AT_EOF_S`) to answer them; everything is
cancelled (every process the tools started included), and `serve_stdio` returns 0 (1 when the core
could not be set up). SIGINT only cancels the running prompts (each answers `cancelled`) and serving
goes on.

Must not: be imported by the LSP face, or by the command line before `serve` is chosen; import the core
at module level (only `load_agent` does, in its thread): the core's options live in `boot`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from acp_bridge.acp.handshake import AgentFacts, Handshake
from acp_bridge.acp.jsonrpc import JsonRpcPeer
from acp_bridge.common.client_capabilities import ClientCapabilities
from acp_bridge.runtime.boot import (
    cancel_running_prompts,
    check_core_arguments,
    collection_paused,
    configure_logging,
    handling_signals,
    keeps_checkpoints,
    load_core,
    load_mcp_config,
    model_endpoint,
    run_until_exit,
)
from acp_bridge.runtime.stdio import FrameWriter, LineReader, Stdio, claim_stdio

if TYPE_CHECKING:
    from acp_bridge.acp.connection import AcpAgent
    from acp_bridge.mcp import ServerList

log = logging.getLogger(__name__)

# How long the end of input waits for a core still loading when messages wait for it (an editor closing
# our stdin expects us gone within 2 s).
SETTLE_AT_EOF_S = 1.0

MakeAgent = Callable[[JsonRpcPeer], "AcpAgent"]


def run(args: argparse.Namespace) -> int:
    stdio = claim_stdio()
    configure_logging(args.log_level, args.log_file)
    check_core_arguments(args)
    # Read now (it is quick): a bad file stops the process with its message before it serves.
    mcp_servers = load_mcp_config(args.mcp_config)
    facts = AgentFacts(
        history=not args.no_history,
        auth_endpoint=model_endpoint(args.model, args.base_url),
        checkpoints=keeps_checkpoints(args),
    )
    return run_until_exit(serve_stdio(facts, lambda: load_agent(args, facts, mcp_servers), stdio=stdio))


def load_agent(args: argparse.Namespace, facts: AgentFacts, mcp_servers: ServerList | None) -> MakeAgent:
    """The agent core, set up from the arguments (`boot.load_core`), with the modules of the ACP agent and
    the session core. Runs in a worker thread, so every import happens off the event loop; returns what
    makes the agent on the loop. Raises SystemExit with a message for a bad `--extra-tools`."""
    with collection_paused():
        from acp_bridge.acp.connection import AcpAgent, AcpChannel
        from acp_bridge.auth.login import keyed_endpoint
        from acp_bridge.session.manager import SessionManager

        setup = load_core(args, mcp_servers)
    endpoint = keyed_endpoint(setup.backend)
    if endpoint != facts.auth_endpoint:
        # `initialize` advertised what `boot.model_endpoint` foresaw, which mirrors httpx's reading of a
        # URL by the standard library's: an exotic URL may be read otherwise.
        log.warning(
            "initialize advertised the login of %s, but the model's endpoint is %s",
            facts.auth_endpoint,
            endpoint,
        )

    def make_agent(peer: JsonRpcPeer) -> AcpAgent:
        channel = AcpChannel()
        channel.bind(peer)
        manager = SessionManager(channel, setup.backend, setup.tools, setup.config, recorder=setup.store)
        return AcpAgent(channel, manager, setup.store)

    return make_agent


class SetUpFailed(Exception):
    """The core could not be set up; the message says why (as `boot` would have exited with it)."""


class AgentLoader:
    """The agent, loaded once after the first `initialize` and handed to the handshake (`on_initialized`)."""

    def __init__(self, handshake: Handshake, peer: JsonRpcPeer, load: Callable[[], MakeAgent]) -> None:
        self.handshake = handshake
        self.peer = peer
        self._load = load
        self.agent: AcpAgent | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def initialized(self, caps: ClientCapabilities) -> None:
        if self.agent is not None:
            self.agent.initialized(caps)
        else:
            self.start()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._load_and_install())

    def _load_in_thread(self) -> MakeAgent:
        try:
            return self._load()
        except SystemExit as exc:
            # Not out of the thread as is: a SystemExit reaching the event loop would stop it.
            raise SetUpFailed(str(exc.code)) from None

    async def _load_and_install(self) -> None:
        try:
            make_agent = await asyncio.to_thread(self._load_in_thread)
            agent = make_agent(self.peer)
        except SetUpFailed as exc:
            self.handshake.failed(str(exc))
            return
        except Exception as exc:
            log.exception("setting up the agent failed")
            self.handshake.failed(f"{type(exc).__name__}: {exc}")
            return
        if self._stopping:
            return  # loaded after the shutdown began: nothing may start now
        self.agent = agent
        if self.handshake.capabilities is not None:
            agent.initialized(self.handshake.capabilities)
        self.handshake.ready(agent.requests, agent.notifications)

    async def settle(self, within: float) -> None:
        """Wait (at most `within` s) for a load in progress to be installed."""
        if self._task is not None and not self._task.done():
            await asyncio.wait({self._task}, timeout=within)

    def interrupt(self) -> None:
        if self.agent is not None:
            cancel_running_prompts(self.agent.manager)

    async def shutdown(self) -> None:
        self._stopping = True
        if self.agent is not None:
            await self.agent.manager.shutdown()

    def close(self) -> None:
        if self.agent is not None and self.agent.store is not None:
            self.agent.store.close()


async def serve_stdio(
    facts: AgentFacts,
    load: Callable[[], MakeAgent],
    *,
    max_line: int | None = None,
    stdio: Stdio | None = None,
) -> int:
    """Serve ACP on this process's stdio until stdin closes, SIGTERM, SIGHUP or the client stops reading
    our output. Returns the exit status: 0 in every case (a signal is how editors and supervisors ask us
    to stop, and the shutdown is the same clean one as on EOF) but one, 1 when the core could not be set
    up. SIGINT cancels the running prompts and serving goes on. `load` (called in a worker thread after
    the first `initialize`) sets the core up; `stdio`: the (input, output) descriptors `claim_stdio`
    returned, when the caller claimed them first."""
    in_fd, out_fd = stdio if stdio is not None else claim_stdio()
    reader = LineReader(in_fd, max_line) if max_line else LineReader(in_fd)
    writer = FrameWriter(out_fd)
    await reader.start()
    await writer.start()
    handshake = Handshake(facts)
    peer = JsonRpcPeer(reader, writer, handshake.requests, handshake.notifications)
    loader = AgentLoader(handshake, peer, load)
    handshake.on_initialized = loader.initialized
    try:
        with handling_signals(stop=reader.stop, interrupt=loader.interrupt):
            await peer.run()
            log.info("input ended; shutting down")
            if handshake.waiting:
                # Answer what waits for a core still loading, as if it had been there all along.
                await loader.settle(SETTLE_AT_EOF_S)
    finally:
        await loader.shutdown()
        # Bounded at every stage: an editor closing our stdin must see us gone within 2 s.
        await peer.wait_handlers(0.2)
        await writer.aclose(within=0.4)
        loader.close()
        try:
            os.set_blocking(in_fd, True)
        except OSError:
            pass
    return 1 if handshake.failure is not None else 0
