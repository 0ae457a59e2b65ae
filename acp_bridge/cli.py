"""`acp-bridge` (and `python -m acp_bridge`): the command line.

Subcommands are one table, `COMMANDS`: `serve` (the ACP agent on stdio), `demo` (the built-in terminal
client driving `serve` offline), and `login` / `logout` (the API key of an endpoint, `login.py`). A face
adds itself with one entry (the LSP face registers `lsp` there).
Options shared by every face that runs the core (model, policy, logging) are added by
`add_core_arguments` and read back by `core_setup`, so `serve` and `lsp` accept the same flags.

Each entry's functions import their subcommand's modules when called, and `main` adds the options of the
chosen subcommand only, so a run loads what that subcommand needs and nothing else (`serve` never loads
pygls or lsprotocol: about 250 ms of its spawn → initialize time). This module imports the standard library
and `settings` only, and no subcommand's options import a face's library or the tools. `serve` claims
stdio (`connection.claim_stdio`) before anything else runs, so nothing printed while the tools and the
model are set up (an `--extra-tools` module's import included) can reach the protocol. `core_setup` then
takes the API key out of the environment before any tool can run (`credentials`) and makes the process
the reaper of its tools' orphans (`processes`); `run_until_exit` kills what is left of them and deletes
the scratch files on every way out.

Must not: print to stdout in `serve` (stdout is the protocol), or import the model's HTTP client unless an
`openai:` model is asked for (spawn → initialize has a 400 ms budget).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .settings import CODE_MODES, DEFAULT_CODE_MODE, DEFAULT_MAX_STEPS, MODES
from .version import version_text

if TYPE_CHECKING:
    from registry_core import ToolDefinition

    from .mcp import ServerList
    from .models import ModelBackend, ModelError, StepEvent, StepRequest
    from .sessions import CoreConfig
    from .store import SessionStore

log = logging.getLogger("acp_bridge")

LOG_LEVELS = ("debug", "info", "warning", "error")


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
    from .models import ModelError, load_backend

    try:
        # No key yet is no error: `acp-bridge login` (or the editor's login) may store one while we run.
        return load_backend(spec, base_url=base_url, require_key=False)
    except ModelError as exc:
        log.error("model %r is not usable: %s", spec, exc.message)
        # A missing key is an authentication problem from the editor's point of view.
        kind = "auth" if "API key" in exc.message else exc.kind
        return FailedBackend(ModelError(exc.message, kind=kind, status=exc.status))


def load_tools(extra: Sequence[str], *, allow_private_network: bool = False) -> list[ToolDefinition]:
    """The built-in tools, then every `MODULE:FUNC` extra. Raises SystemExit with a message for a bad spec."""
    tools: list[ToolDefinition] = []
    try:
        from presenters import build_tools
    except ImportError as exc:
        log.warning("built-in tools unavailable (%s)", exc)
    else:
        tools.extend(build_tools(allow_private_network=allow_private_network))
    for spec in extra:
        module_name, _, func_name = spec.partition(":")
        try:
            func: Callable[[], Sequence[ToolDefinition]] = getattr(
                importlib.import_module(module_name), func_name
            )
            tools.extend(func())
        except (ImportError, AttributeError, TypeError, ValueError) as exc:
            raise SystemExit(f"acp-bridge: --extra-tools {spec!r}: {exc}") from exc
    return tools


def load_mcp_config(path: str | None) -> ServerList | None:
    """The `--mcp-config` servers (the file's format: `acp_bridge.mcp.config`). Raises SystemExit with a
    message for a file that cannot be read; a bad entry is reported in each session instead."""
    if path is None:
        return None
    from .mcp import ConfigError, load_config_file

    try:
        return load_config_file(path)
    except ConfigError as exc:
        raise SystemExit(f"acp-bridge: --mcp-config: {exc}") from None


@dataclass(frozen=True, slots=True)
class CoreSetup:
    backend: ModelBackend
    tools: list[ToolDefinition]
    config: CoreConfig
    store: SessionStore | None


def core_setup(args: argparse.Namespace) -> CoreSetup:
    """Logging, the process's own hygiene (secrets out of the environment, orphans adopted), then model,
    tools and policy from the parsed core arguments."""
    from .credentials import claim_secrets
    from .models.catalog import Price
    from .permissions import PolicyConfig
    from .processes import become_subreaper
    from .sessions import CoreConfig
    from .state_dir import state_dir
    from .store import SessionStore

    configure_logging(args.log_level, args.log_file)
    # Before any tool can run: the key is read once (kept for the model) and no child inherits it.
    claim_secrets()
    become_subreaper()
    if args.max_steps < 1:
        raise SystemExit("acp-bridge: --max-steps must be at least 1")
    if args.context_window is not None and args.context_window < 1:
        raise SystemExit("acp-bridge: --context-window must be at least 1")
    prices = (args.price_in, args.price_out)
    if (prices[0] is None) != (prices[1] is None) or any(p is not None and p < 0 for p in prices):
        raise SystemExit("acp-bridge: give both --price-in and --price-out, neither negative")
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
            mcp_servers=load_mcp_config(args.mcp_config),
            model_list=args.models,
            price=price,
            compact_at=compact_at,
            vision=args.vision,
            rules_dir=str(state / "rules") if args.remember == "project" else None,
            code_mode=getattr(args, "code_mode", DEFAULT_CODE_MODE),
        ),
        store=None if args.no_history else SessionStore(state),
    )


def run_until_exit(main: Coroutine[Any, Any, int]) -> int:
    """Run a face's main coroutine, then exit promptly even if something refuses to stop.

    `asyncio.run` would wait for every task (a tool that swallows cancellation) and the interpreter for
    every worker thread (a blocking read); an editor closing our stdin must see us gone within 2 s. So the
    leftover tasks get 0.3 s, and a daemon timer ends the process if the normal exit still hangs. Before
    that, on every path (the face returned or raised), the tools' leftover processes are killed and the
    scratch files deleted (`processes.release_all`).
    """
    import asyncio

    from .processes import release_all

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
            release_all()
            _exit_soon(code)
    return code


def _exit_soon(code: int, after: float = 0.3) -> None:
    def force() -> None:
        logging.shutdown()
        os._exit(code)

    timer = threading.Timer(after, force)
    timer.daemon = True
    timer.start()


def _run_serve(args: argparse.Namespace) -> int:
    if args.login or args.logout:
        # An ACP client runs a `terminal` auth method as our own command line plus `--login`.
        return _run_login(args) if args.login else _run_logout(args)
    from .connection import claim_stdio, serve_stdio
    from .sessions import SessionManager

    # First: whatever the setup prints (an --extra-tools module at import, a model library) goes to
    # stderr, never into the protocol stream.
    stdio = claim_stdio()
    setup = core_setup(args)
    store = setup.store
    return run_until_exit(
        serve_stdio(
            lambda channel: SessionManager(channel, setup.backend, setup.tools, setup.config, recorder=store),
            store=store,
            stdio=stdio,
        )
    )


def _add_serve(parser: argparse.ArgumentParser) -> None:
    add_core_arguments(parser)
    auth = parser.add_mutually_exclusive_group()
    auth.add_argument("--login", action="store_true", help="ask for the --base-url endpoint's API key, check "
                      "and store it (what an editor's terminal login runs), then exit")  # fmt: skip
    auth.add_argument("--logout", action="store_true", help="remove the stored key of --base-url, then exit")


def _add_login(parser: argparse.ArgumentParser) -> None:
    from .login import add_login_arguments

    add_login_arguments(parser)


def _run_login(args: argparse.Namespace) -> int:
    from .login import run_login

    return run_login(args)


def _add_logout(parser: argparse.ArgumentParser) -> None:
    from .login import add_arguments

    add_arguments(parser)


def _run_logout(args: argparse.Namespace) -> int:
    from .login import run_logout

    return run_logout(args)


def _add_demo(parser: argparse.ArgumentParser) -> None:
    from .demo import add_arguments

    add_arguments(parser)


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run

    return run(args)


def _add_doctor(parser: argparse.ArgumentParser) -> None:
    from .doctor import add_arguments

    add_arguments(parser)


def _run_doctor(args: argparse.Namespace) -> int:
    from .doctor import run

    return run(args)


def _add_lsp(parser: argparse.ArgumentParser) -> None:
    from .lsp.command import add_arguments

    add_arguments(parser)


def _run_lsp(args: argparse.Namespace) -> int:
    from .lsp.command import run

    return run(args)


@dataclass(frozen=True, slots=True)
class Command:
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


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
