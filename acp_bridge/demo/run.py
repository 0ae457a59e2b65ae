"""`acp-bridge demo`: watch the agent work, offline, in a terminal.

It copies the demo workspace (`models.demo_workspace_files()`) into a temporary directory, spawns
`python -m acp_bridge serve` as a real subprocess, and drives it over real pipes with the ACP SDK's client
side, exactly as an editor would. Cards print as they arrive (`demo_render.CardPrinter`): status changes,
diffs, live terminal output and the plan. A permission question is asked on the terminal when stdin is a
TTY; otherwise it is allowed once and the demo says so. With the built-in script a follow-up prompt runs
its second turn: one Code Mode program whose calls show as cards nested under it. A short summary ends
it (exit 0 when every prompt ended with `end_turn`).
With `--compact`, the demo then sends `/compact`: the conversation is summarized (the scripted model's
summary) and the bridge says what it kept.

Must not: need a network, an API key or a configured editor; leave the bridge process or the temporary
workspace behind (unless `--keep`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO, cast

from acp_bridge.demo.render import CardPrinter, Style, workspace_changes
from acp_bridge.models import demo_workspace_files

DEMO_PROMPT = "Please handle the open items in this project's notes."
# The built-in script's second turn answers it with one `run_code` program.
DEMO_FOLLOW_UP = "Good. Now tidy the notes, if the greeting really is fixed."
# 64 MiB, like the bridge's own reader: a large diff or output frame must not break the client.
_LINE_LIMIT = 64 * 1024 * 1024


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model", default="scripted", metavar="SPEC", help="model spec (default: scripted demo)"
    )
    parser.add_argument("--prompt", default=DEMO_PROMPT, help="what to ask the agent")
    parser.add_argument(
        "--follow-up",
        default=None,
        metavar="TEXT",
        help="a second prompt, sent after the first one ends (default: the built-in script's own, whose "
        "answer is a Code Mode program; none for other models)",
    )
    parser.add_argument(
        "--workspace", default=None, metavar="DIR", help="use DIR instead of a temporary copy"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace afterwards")
    parser.add_argument("--yes", action="store_true", help="allow every permission question without asking")
    parser.add_argument("--no-color", action="store_true", help="plain output (also: NO_COLOR=1)")
    parser.add_argument(
        "--compact", action="store_true", help="then compact the conversation (`/compact`), offline too"
    )
    parser.add_argument(
        "--bridge-arg", action="append", default=[], metavar="ARG", help="extra `serve` argument"
    )


def run(args: argparse.Namespace) -> int:
    out = sys.stdout
    style = Style(enabled=out.isatty() and not args.no_color and not os.environ.get("NO_COLOR"))
    interactive = sys.stdin.isatty() and not args.yes
    if args.workspace:
        workspace = Path(args.workspace).resolve()
        workspace.mkdir(parents=True, exist_ok=True)
        cleanup = False
    else:
        workspace = Path(tempfile.mkdtemp(prefix="acp-bridge-demo-")).resolve()
        cleanup = not args.keep
    originals = demo_workspace_files()
    for name, text in originals.items():
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    try:
        return asyncio.run(_demo(args, workspace, originals, style, interactive, out))
    except KeyboardInterrupt:
        return 130
    finally:
        if cleanup:
            shutil.rmtree(workspace, ignore_errors=True)
        else:
            _quietly(out, f"workspace kept at {workspace}\n")
        # Python flushes stdout at exit; a reader that went away must not turn that into a traceback.
        with contextlib.suppress(OSError, ValueError):
            out.flush()


def _quietly(out: TextIO, text: str) -> None:
    with contextlib.suppress(BrokenPipeError, ValueError):
        out.write(text)


async def _demo(
    args: argparse.Namespace,
    workspace: Path,
    originals: dict[str, str],
    style: Style,
    interactive: bool,
    out: TextIO,
) -> int:
    # Imported here: the SDK costs ~0.5 s to import, and only the demo (the client side) needs it.
    from acp import schema
    from acp.client.connection import ClientSideConnection
    from acp.interfaces import Client

    printer = CardPrinter(out, style, cwd=str(workspace), interactive=interactive)
    # A throwaway workspace: its session does not belong in the user's history.
    serve = ["serve", "--no-history", "--model", args.model, *args.bridge_arg]
    argv = [sys.executable, "-m", "acp_bridge", *serve]
    printer.banner(workspace, args.model, argv)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,  # the bridge's own warnings, if any, go straight to the terminal
        cwd=str(workspace),
        limit=_LINE_LIMIT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    client = _DemoClient(printer)
    # The SDK answers "method not found" for the client methods the demo does not implement (fs, terminal).
    conn = ClientSideConnection(cast(Client, client), proc.stdin, proc.stdout)
    started = time.perf_counter()
    stop_reason = "error"
    try:
        init = await conn.initialize(
            protocol_version=1,
            client_capabilities=schema.ClientCapabilities(field_meta={"terminal_output": True}),
            client_info=schema.Implementation(name="acp-bridge-demo", version="1"),
        )
        agent = init.agent_info
        printer.note(f"connected to {agent.name if agent else 'an agent'} (ACP v{init.protocol_version})")
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        for text in _prompts(args):
            printer.user(text)
            response = await conn.prompt(
                session_id=session.session_id, prompt=[schema.TextContentBlock(type="text", text=text)]
            )
            stop_reason = str(response.stop_reason)
            if stop_reason != "end_turn":
                break
        if args.compact and stop_reason == "end_turn":
            printer.user("/compact")
            response = await conn.prompt(
                session_id=session.session_id, prompt=[schema.TextContentBlock(type="text", text="/compact")]
            )
            stop_reason = str(response.stop_reason)
    except Exception as exc:  # noqa: BLE001 - the demo reports any failure in words, then exits non-zero
        printer.error(f"the demo failed: {type(exc).__name__}: {exc}")
    finally:
        printer.end_stream()
        with contextlib.suppress(Exception):
            await conn.close()
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    printer.summary(stop_reason, time.perf_counter() - started, workspace_changes(workspace, originals))
    return 0 if stop_reason == "end_turn" else 1


def _prompts(args: argparse.Namespace) -> list[str]:
    follow_up = args.follow_up
    if follow_up is None:
        follow_up = DEMO_FOLLOW_UP if args.model == "scripted" and args.prompt == DEMO_PROMPT else ""
    return [args.prompt, follow_up] if follow_up else [args.prompt]


class _DemoClient:
    """The SDK client the demo drives the bridge with: prints updates, answers permission questions."""

    def __init__(self, printer: CardPrinter) -> None:
        self.printer = printer

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.printer.update(update.model_dump(mode="json", by_alias=True, exclude_none=True))

    async def request_permission(self, session_id: str, tool_call: Any, options: Any, **kwargs: Any) -> Any:
        from acp import schema

        call = tool_call.model_dump(mode="json", by_alias=True, exclude_none=True)
        opts = [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options]
        option_id = await self.printer.ask(call, opts)
        return schema.RequestPermissionResponse.model_validate(
            {"outcome": {"outcome": "selected", "optionId": option_id}}
        )
