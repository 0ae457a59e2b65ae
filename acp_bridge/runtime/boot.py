"""What every face that runs the agent core does to start and to stop, so `serve` and `lsp` start alike.

- `add_core_arguments`: the options both faces accept (model, permission policy, diagnostics, MCP servers).
- `claim_and_set_up`: claims stdio first (`stdio.claim_stdio`), so nothing printed while the tools and
  the model are set up (an `--extra-tools` module's import included) can reach the protocol; then
  `core_setup`: logging, the checks the parser cannot make (`check_core_arguments`), the
  `--mcp-config` file read (`load_mcp_config`), then `load_core`:
  the API key taken out of the environment before any tool can run (`credentials`), the process made
  the reaper of its tools' orphans (`processes`), then the model (`load_model`; one that cannot be
  configured becomes a `FailedBackend`, so the editor sees the error on the first prompt; a missing key
  is no such error, since a login may store one while we run), the tools (`load_tools`), the policy and
  the model controls (price, compaction, vision, Code Mode), and the session store in the state
  directory (`state_dir`) unless `--no-history`.
  `load_core` touches no event loop: the ACP face runs it in a worker thread after answering
  `initialize`, which it answers from the arguments alone (`model_endpoint`: whether the model needs a
  key, and for which endpoint).
- `collection_paused`: what a face wraps its loading of the core in (its imports and `load_core`): no
  cyclic garbage collection meanwhile, and what was loaded kept out of later ones (`gc.freeze`).
- `handling_signals`: while a face serves, SIGTERM and SIGHUP end its input as at EOF (the face's one
  clean shutdown runs), SIGINT cancels the running prompts (`cancel_running_prompts`) and serving goes on.
- `run_until_exit`: runs the face's main coroutine; on every way out, kills what is left of the tools'
  processes and deletes the scratch files (`processes.release_all`), and exits within a bounded time.

Must not: import a face; print to stdout; import at module level more than `settings` and the standard
library's light modules: the command line imports this module to build its parser, and `--help` must
load neither the core nor asyncio nor logging (so those are imported inside the functions using them).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from acp_bridge.common.settings import (
    CODE_MODES,
    DEFAULT_BASE_URL,
    DEFAULT_CODE_MODE,
    DEFAULT_MAX_STEPS,
    DEFAULT_STEER_LATE,
    DEFAULT_WAIT_NOTICE_S,
    MODES,
    STEER_LATE,
)

if TYPE_CHECKING:
    import logging
    from pathlib import Path

    from acp_bridge.history.store import SessionStore
    from acp_bridge.mcp import ServerList
    from acp_bridge.models import ModelBackend, ModelError, StepEvent, StepRequest
    from acp_bridge.runtime.stdio import Stdio
    from acp_bridge.session.manager import CoreConfig, SessionManager
    from registry_core import ToolDefinition

LOG_LEVELS = ("debug", "info", "warning", "error")


def _log() -> logging.Logger:
    import logging  # here, not at module level: building the parser does not need it (see above)

    return logging.getLogger("acp_bridge")


def add_core_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of every face that runs the agent core."""
    model = parser.add_argument_group("model")
    model.add_argument(
        "--model",
        default="scripted",
        metavar="SPEC",
        help="'scripted' (built-in demo script, offline), 'scripted:PATH' (a script file) or 'openai:MODEL' "
        "(an OpenAI-compatible endpoint; key from ACP_BRIDGE_API_KEY, DEEPSEEK_API_KEY or OPENAI_API_KEY). "
        "Default: scripted",
    )
    model.add_argument(
        "--base-url", default=None, help="OpenAI-compatible API base URL (default: DeepSeek's)"
    )
    model.add_argument(
        "--max-steps",
        type=int,
        default=DEFAULT_MAX_STEPS,
        metavar="N",
        help="model responses per prompt before it stops with max_turn_requests "
        f"(default {DEFAULT_MAX_STEPS})",
    )
    model.add_argument(
        "--context-window",
        type=int,
        default=None,
        metavar="N",
        help="the model's context window in tokens, when neither the endpoint nor the built-in table of "
        "well-known models knows it; each step's token usage is reported to the editor against it "
        "(default: unknown, nothing reported)",
    )
    model.add_argument(
        "--models",
        type=_model_list,
        default=None,
        metavar="A,B,C",
        help="the models the editor's model picker offers (default: the endpoint's GET /models list); "
        "--model is always offered",
    )
    model.add_argument("--price-in", type=float, default=None, metavar="USD",
                       help="the model's price per million input tokens, for the cost")  # fmt: skip
    model.add_argument("--price-out", type=float, default=None, metavar="USD",
                       help="the model's price per million output tokens, for the cost")  # fmt: skip
    model.add_argument(
        "--compact-at",
        type=_compact_at,
        default=80.0,
        metavar="PERCENT",
        help="compact the conversation (the model summarizes the older part) once the context is this "
        "full; 'off' never does it by itself (/compact still does). Default: 80",
    )
    model.add_argument(
        "--steer-late",
        choices=STEER_LATE,
        default=DEFAULT_STEER_LATE,
        help="a prompt sent while a turn runs joins it before its next model request; one sent while the "
        "model gives its final answer makes the turn take one more step ('step', as Codex does) or runs as "
        "the next prompt, right after ('turn', as Claude Code does). Default: step",
    )
    model.add_argument(
        "--wait-notice",
        type=_wait_notice,
        default=DEFAULT_WAIT_NOTICE_S,
        metavar="SECONDS",
        help="tell the user when the model has sent nothing for this long, and again every as long "
        f"(0: never; default {DEFAULT_WAIT_NOTICE_S:g}); a rate-limited request's retries are always told",
    )
    model.add_argument(
        "--vision",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the model is given images (attached to prompts, or read from files); default: "
        "known from the model's name (the scripted model and families such as gpt-4o, claude, gemini "
        "do; deepseek-chat does not). A prompt with images to a model without vision is refused",
    )
    policy = parser.add_argument_group("permission policy")
    policy.add_argument(
        "--mode",
        choices=list(MODES),
        default="default",
        help="initial permission mode of each session "
        "(default: ask before edits, writes, commands and fetches)",
    )
    policy.add_argument(
        "--allow-tool", action="append", default=[], metavar="TOOL", help="run TOOL without asking"
    )
    policy.add_argument(
        "--ask-tool", action="append", default=[], metavar="TOOL", help="always ask before TOOL"
    )
    policy.add_argument("--deny-tool", action="append", default=[], metavar="TOOL", help="never run TOOL")
    policy.add_argument(
        "--code-mode",
        choices=CODE_MODES,
        default=DEFAULT_CODE_MODE,
        help="run_code, programs calling the other tools (each call gated and shown): 'off', 'on' (beside "
        "the other tools) or 'only' (the model gets run_code alone). Default: on",
    )
    policy.add_argument(
        "--allow-private-network",
        action="store_true",
        help="let web_fetch connect to loopback, private and link-local addresses (refused by default, "
        "after DNS resolution and on every redirect; cloud metadata addresses are always refused)",
    )
    policy.add_argument(
        "--remember",
        choices=("session", "project"),
        default="session",
        help="how long an 'always' answer lasts: for the session (default), or for every session in the "
        "same project (the session's cwd), kept in the state directory",
    )
    other = parser.add_argument_group("diagnostics")
    other.add_argument(
        "--log-level", choices=LOG_LEVELS, default="warning", help="stderr log level (default warning)"
    )
    other.add_argument("--log-file", default=None, metavar="PATH", help="log to PATH instead of stderr")
    other.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="keep session logs (history: session/list, load, resume) and per-project rules in DIR "
        "(default: the platform's user state directory, e.g. ~/.local/state/acp-bridge)",
    )
    other.add_argument(
        "--no-history", action="store_true", help="keep no session logs (no session/list, load or resume)"
    )
    other.add_argument(
        "--no-checkpoints",
        action="store_true",
        help="take no checkpoints of the workspace (no /rewind, no diffs of what commands changed); "
        "--no-history takes none either",
    )
    other.add_argument(
        "--extra-tools",
        action="append",
        default=[],
        metavar="MODULE:FUNC",
        help="also register the tools FUNC() returns (a list of ToolDefinition); for tests and extensions",
    )
    other.add_argument("--mcp-config", metavar="PATH", help="start the MCP servers of PATH in every session")


def _model_list(text: str) -> tuple[str, ...]:
    models = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    if not models:
        raise argparse.ArgumentTypeError("expected model names separated by commas")
    return models


def _wait_notice(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError("the seconds must be 0 (never) or more")
    return seconds


def _compact_at(text: str) -> float | None:
    if text.strip().lower() in ("off", "never", "0"):
        return None
    try:
        percent = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage or 'off', got {text!r}") from None
    if not 0 < percent <= 100:
        raise argparse.ArgumentTypeError("the percentage must be above 0 and at most 100")
    return percent


def configure_logging(level: str, log_file: str | None) -> None:
    import logging

    handler: logging.Handler = (
        logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level.upper()))


class FailedBackend:
    """Stands in for a model that could not be configured: every prompt fails with that error, so the editor
    shows it where the user looks (the prompt's error), not only in a log."""

    def __init__(self, error: ModelError) -> None:
        self.error = error

    @property
    def name(self) -> str:
        return "unavailable"

    async def stream_step(self, request: StepRequest) -> AsyncIterator[StepEvent]:
        raise self.error
        yield  # pragma: no cover - makes this an async generator

    async def aclose(self) -> None:
        return None


def load_model(spec: str, base_url: str | None) -> ModelBackend:
    from acp_bridge.models import ModelError, load_backend

    try:
        # No key yet is no error: `acp-bridge login` (or the editor's login) may store one while we run.
        return load_backend(spec, base_url=base_url, require_key=False)
    except ModelError as exc:
        _log().error("model %r is not usable: %s", spec, exc.message)
        # A missing key is an authentication problem from the editor's point of view.
        kind = "auth" if "API key" in exc.message else exc.kind
        return FailedBackend(ModelError(exc.message, kind=kind, status=exc.status))


def model_endpoint(spec: str, base_url: str | None) -> str | None:
    """The endpoint whose API key the model of `load_model(spec, base_url)` needs (its base URL as the
    backend keeps it), or None: a model without a key (scripted) or one that cannot be configured. Told
    from the arguments alone, without importing the model's HTTP client, so the ACP face can answer
    `initialize` (its login methods) before the model is loaded. It mirrors `models.load_backend` and
    `OpenAIBackend`'s checks of the URL (httpx's parser; a test compares them on a table of URLs)."""
    kind, _, model = spec.strip().partition(":")
    if kind != "openai" or not model.strip():
        return None
    url = base_url or DEFAULT_BASE_URL
    return url.rstrip("/") if _http_url_with_host(url) else None


def _http_url_with_host(url: str) -> bool:
    # httpx refuses a control character anywhere and reads a leading blank as part of the scheme.
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in url) or url[:1].isspace():
        return False
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]
    return parts.scheme in ("http", "https") and bool(host) and (not port or port.isdigit())


def load_tools(extra: Sequence[str], *, allow_private_network: bool = False) -> list[ToolDefinition]:
    """The built-in tools, then every `MODULE:FUNC` extra. Raises SystemExit with a message for a bad spec."""
    tools: list[ToolDefinition] = []
    try:
        from presenters import build_tools
    except ImportError as exc:
        _log().warning("built-in tools unavailable (%s)", exc)
    else:
        tools.extend(build_tools(allow_private_network=allow_private_network))
    for spec in extra:
        module_name, _, func_name = spec.partition(":")
        try:
            func: Callable[[], Sequence[ToolDefinition]] = getattr(
                importlib.import_module(module_name), func_name
            )
            tools.extend(func())
        except Exception as exc:  # whatever the module raised at import or when called: a bad spec
            raise SystemExit(f"acp-bridge: --extra-tools {spec!r}: {type(exc).__name__}: {exc}") from exc
    return tools


def load_mcp_config(path: str | None) -> ServerList | None:
    """The `--mcp-config` servers (the file's format: `acp_bridge.mcp.config`). Raises SystemExit with a
    message for a file that cannot be read; a bad entry is reported in each session instead."""
    if path is None:
        return None
    from acp_bridge.mcp import ConfigError, load_config_file

    try:
        return load_config_file(path)
    except ConfigError as exc:
        raise SystemExit(f"acp-bridge: --mcp-config: {exc}") from None


# A NamedTuple, not a dataclass: cheap to define, on the way to answering `initialize` (see `settings.Mode`).
class CoreSetup(NamedTuple):
    backend: ModelBackend
    tools: list[ToolDefinition]
    config: CoreConfig
    store: SessionStore | None


def check_core_arguments(args: argparse.Namespace) -> None:
    """What the parser cannot check of the core arguments. Raises SystemExit with a message."""
    if args.max_steps < 1:
        raise SystemExit("acp-bridge: --max-steps must be at least 1")
    if args.context_window is not None and args.context_window < 1:
        raise SystemExit("acp-bridge: --context-window must be at least 1")
    prices = (args.price_in, args.price_out)
    if (prices[0] is None) != (prices[1] is None) or any(p is not None and p < 0 for p in prices):
        raise SystemExit("acp-bridge: give both --price-in and --price-out, neither negative")


def core_setup(args: argparse.Namespace) -> CoreSetup:
    """Logging, the checks of the arguments and the `--mcp-config` file, then `load_core`."""
    configure_logging(args.log_level, args.log_file)
    check_core_arguments(args)
    with collection_paused():
        return load_core(args, load_mcp_config(args.mcp_config))


@contextlib.contextmanager
def collection_paused() -> Iterator[None]:
    """Loading the core (importing its modules, building the tools) creates tens of thousands of objects
    that live as long as the process, and next to no garbage; yet every 700 allocations start a collection
    of the young ones, and the survivors are walked again by the older generations' collections: some 6%
    of the instructions from spawn to the first `session/new`, which waits for the load
    (`benchmarks/bridge_bench.py`; counted with valgrind, the machine's timings being too noisy). So no
    collection runs inside; on leaving, what exists is moved to the permanent generation (`gc.freeze`),
    so that no later collection walks it either (cyclic garbage the load made, if any, stays: a few
    objects, once), and collection resumes as it was."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def load_core(args: argparse.Namespace, mcp_servers: ServerList | None) -> CoreSetup:
    """The process's own hygiene (secrets out of the environment, orphans adopted), then model, tools and
    policy from the parsed (and checked) core arguments; `mcp_servers`: the `--mcp-config` servers, read
    before (`load_mcp_config`), so a bad file stops a face before it serves. Touches no event loop, so a
    face may run it in a worker thread while it serves (the ACP face does: `serve.py`). Raises SystemExit
    with a message for a bad `--extra-tools`."""
    from acp_bridge.common.credentials import claim_secrets
    from acp_bridge.common.state_dir import state_dir
    from acp_bridge.models.catalog import Price
    from acp_bridge.permissions.policy import PolicyConfig
    from acp_bridge.session.manager import CoreConfig
    from acp_bridge.session.processes import become_subreaper

    # Before any tool can run: the key is read once (kept for the model) and no child inherits it.
    claim_secrets()
    become_subreaper()
    price = Price(args.price_in, args.price_out) if args.price_in is not None else None
    compact_at = args.compact_at / 100 if args.compact_at is not None else None
    policy = PolicyConfig(
        mode=MODES[args.mode].id,
        allow_tools=frozenset(args.allow_tool),
        ask_tools=frozenset(args.ask_tool),
        deny_tools=frozenset(args.deny_tool),
    )
    state = state_dir(args.state_dir)
    return CoreSetup(
        backend=load_model(args.model, args.base_url),
        tools=load_tools(args.extra_tools, allow_private_network=args.allow_private_network),
        config=CoreConfig(
            max_steps=args.max_steps,
            policy=policy,
            context_window=args.context_window,
            mcp_servers=mcp_servers,
            model_list=args.models,
            price=price,
            compact_at=compact_at,
            vision=args.vision,
            rules_dir=str(state / "rules") if args.remember == "project" else None,
            code_mode=getattr(args, "code_mode", DEFAULT_CODE_MODE),
            steer_late=getattr(args, "steer_late", DEFAULT_STEER_LATE),
            wait_notice=args.wait_notice,
            checkpoints_dir=str(state / "checkpoints") if keeps_checkpoints(args) else None,
        ),
        store=_open_store(state, keep_history=not args.no_history),
    )


def keeps_checkpoints(args: argparse.Namespace) -> bool:
    """Whether checkpoints are taken: not with `--no-checkpoints`, nor with `--no-history` (which keeps
    nothing in the state directory)."""
    return not args.no_history and not getattr(args, "no_checkpoints", False)


def _open_store(state: Path, *, keep_history: bool) -> SessionStore | None:
    if not keep_history:
        return None
    from acp_bridge.history.store import (
        SessionStore,  # only when history is kept: a --no-history run never imports it
    )
    from acp_bridge.runtime.stdio import set_output_barrier

    store = SessionStore(state)
    # The log's queued lines reach the disk before any frame that could tell a client about them.
    set_output_barrier(store.flush)
    return store


def claim_and_set_up(args: argparse.Namespace) -> tuple[Stdio, CoreSetup]:
    """What a face's command does first: claim stdio, then `core_setup`. In this order: whatever the
    set-up prints (an --extra-tools module at import, a model library) goes to stderr, never into the
    protocol stream."""
    from acp_bridge.runtime.stdio import (
        claim_stdio,  # here: importing it loads asyncio, which the parser does not need
    )

    stdio = claim_stdio()
    return stdio, core_setup(args)


def cancel_running_prompts(manager: SessionManager) -> None:
    """SIGINT: cancel every running prompt, as `session/cancel` would (each answers `cancelled`, its
    commands are stopped), and keep serving: clients such as acpx run us in the terminal's process group,
    so Ctrl+C reaches us along with their own cancel."""
    _log().info("SIGINT received; cancelling the running prompts")
    for session in list(manager.sessions.values()):
        session.cancel()


@contextlib.contextmanager
def handling_signals(*, stop: Callable[[], None], interrupt: Callable[[], None]) -> Iterator[None]:
    """While inside (on the running event loop): SIGTERM and SIGHUP call `stop`, which ends the face's
    input as at EOF, so the face's one shutdown runs (dying of the signal's default action would orphan
    the tools' process groups, which are sessions of their own); SIGINT calls `interrupt`. The default
    handling comes back on leaving."""
    import asyncio
    import signal

    stop_signals = (signal.SIGTERM, signal.SIGHUP)

    def stopping(signum: int) -> None:
        _log().info("%s received; shutting down", signal.Signals(signum).name)
        stop()

    loop = asyncio.get_running_loop()
    for signum in stop_signals:
        loop.add_signal_handler(signum, stopping, signum)
    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        for signum in (*stop_signals, signal.SIGINT):
            loop.remove_signal_handler(signum)


def run_until_exit(main: Coroutine[Any, Any, int]) -> int:
    """Run a face's main coroutine, then exit promptly even if something refuses to stop.

    `asyncio.run` would wait for every task (a tool that swallows cancellation) and the interpreter for
    every worker thread (a blocking read); an editor closing our stdin must see us gone within 2 s. So the
    leftover tasks get 0.3 s, and a daemon timer ends the process if the normal exit still hangs. Before
    that, on every path (the face returned or raised), the tools' leftover processes are killed and the
    scratch files deleted (`processes.release_all`).
    """
    import asyncio

    loop = asyncio.new_event_loop()
    code = 1
    try:
        code = loop.run_until_complete(main)
    finally:
        try:
            leftovers = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in leftovers:
                task.cancel()
            if leftovers:
                loop.run_until_complete(asyncio.wait(leftovers, timeout=0.3))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
        finally:
            # Imported here, not before serving: it loads the registry, which `initialize` must not wait for.
            from acp_bridge.session.processes import release_all

            release_all()
            _exit_soon(code)
    return code


def _exit_soon(code: int, after: float = 0.3) -> None:
    import logging
    import threading

    def force() -> None:
        logging.shutdown()
        os._exit(code)

    timer = threading.Timer(after, force)
    timer.daemon = True
    timer.start()
