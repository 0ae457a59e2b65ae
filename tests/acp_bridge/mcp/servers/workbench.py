"""A real MCP server, written with the official SDK, that the MCP tests connect to.

`python -m tests.acp_bridge.mcp.servers.workbench stdio` serves MCP on stdio;
`python -m tests.acp_bridge.mcp.servers.workbench http` serves streamable HTTP on 127.0.0.1 (a free port,
printed first on stdout as `PORT <n>`). Tools:
- `echo(message)` (read-only): "Echo: <message>";
- `picture()`: a text block and a 1×1 PNG;
- `weather(city)`: structured content (and its JSON as text);
- `refs()`: a resource link and an embedded text resource;
- `fail(why)`: an `isError` result saying why;
- `count(steps)`: reports progress `steps` times, then "counted <steps>";
- `wait(marker)`: waits until cancelled, then writes `cancelled` to the file `marker`;
- `crash()`: writes to stderr and exits with status 3;
- `grow()`: adds the tool `extra` and says the tool list changed (either era's way);
- `roots()`: asks the client for its roots (`roots/list`) and returns them;
- `sample()`: asks the client to sample (`sampling/createMessage`) and says what came back;
- `ask()`: asks the user for a name (`elicitation/create`) and says what came back;
  these three ask through the SDK's resolvers: a request of the server's own on a 2025-era connection, an
  `InputRequiredResult` the client answers and retries with on a 2026-07-28 one (the bridge connects
  with `server/discover` first, so it gets the latter);
- `big(chars)`: a text of `chars` characters.
Prompts: `greet(name)` and `review(pr, focus?)`. Instructions: "Prefer echo for greetings.".
`MCP_WORKBENCH_STDERR` set: the server writes it to stderr at start (a failing server's last words).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import socket
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp_types import ToolAnnotations
from pydantic import BaseModel

PNG_1X1 = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()

server: MCPServer[Any] = MCPServer("workbench", instructions="Prefer echo for greetings.")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def echo(message: str) -> str:
    """Echo a message back."""
    return f"Echo: {message}"


@server.tool()
def picture() -> types.CallToolResult:
    """A tiny picture."""
    return types.CallToolResult(
        content=[
            types.TextContent(type="text", text="a red dot"),
            types.ImageContent(type="image", data=PNG_1X1, mime_type="image/png"),
        ]
    )


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True))
def weather(city: str) -> types.CallToolResult:
    """The weather of a city, as structured data."""
    data = {"city": city, "temperature": 21, "conditions": "sunny"}
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{city}: 21°C, sunny")], structured_content=data
    )


@server.tool()
def refs() -> types.CallToolResult:
    """A linked and an embedded resource."""
    return types.CallToolResult(
        content=[
            types.ResourceLink(
                type="resource_link", uri="file:///docs/guide.md", name="guide.md", mime_type="text/markdown"
            ),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///docs/notes.txt", mime_type="text/plain", text="note one"
                ),
            ),
        ]
    )


class Stop(BaseModel):
    city: str
    nights: int


class Trip(BaseModel):
    traveller: str
    stops: list[Stop]


@server.tool()
def plan(trip: Trip) -> str:
    """Plan a trip (its schema nests models: the SDK sends them as `$defs` behind `$ref`s)."""
    return f"{trip.traveller}: " + ", ".join(f"{s.city} ({s.nights})" for s in trip.stops)


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def fail(why: str) -> types.CallToolResult:
    """Fail on purpose."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"refused: {why}")], is_error=True
    )


@server.tool()
async def count(steps: int, ctx: Context) -> str:
    """Count, reporting progress."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await anyio.sleep(0.15)
    return f"counted {steps}"


@server.tool()
async def wait(marker: str) -> str:
    """Wait until cancelled (`<marker>.started` says the call reached the server, `marker` that it was
    cancelled there)."""
    Path(marker + ".started").write_text("started")  # noqa: ASYNC240 - before the first await, on purpose
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        Path(marker).write_text("cancelled")  # noqa: ASYNC240 - the server's last act, on purpose
        raise
    return "never"


@server.tool()
def crash() -> str:
    """Exit at once, with a last word on stderr."""
    print("workbench: about to crash", file=sys.stderr, flush=True)
    os._exit(3)


def extra() -> str:
    """A tool that appears later."""
    return "extra!"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool `extra`, and say so in either era: `notifications/tools/list_changed` to a 2025-era
    client, a `subscriptions/listen` event to a 2026-07-28 one."""
    server.add_tool(extra)
    await ctx.notify_tools_changed()
    with contextlib.suppress(Exception):  # no back-channel on a 2026-07-28 connection
        await ctx.session.send_tool_list_changed()
    return "grown"


# The client's roots, a sample and an answer are asked through resolvers, which the SDK sends as a request
# of the server's own on a 2025-era connection and as an `InputRequiredResult` on a 2026-07-28 one.
def _ask_roots() -> ListRoots:
    return ListRoots()


@server.tool()
async def roots(listed: Annotated[types.ListRootsResult, Resolve(_ask_roots)]) -> str:
    """The client's roots."""
    return "\n".join(str(root.uri) for root in listed.roots)


def _ask_sample() -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))
    return Sample([message], max_tokens=10)


@server.tool()
async def sample(result: Annotated[types.CreateMessageResult, Resolve(_ask_sample)]) -> str:
    """Ask the client to sample."""
    return f"sampled: {result}"


class Name(BaseModel):
    name: str


def _ask_name() -> Elicit[Name]:
    return Elicit("Your name?", Name)


@server.tool()
async def ask(answer: Annotated[ElicitationResult[Name], Resolve(_ask_name)]) -> str:
    """Ask the user for a name."""
    content = answer.data.model_dump() if isinstance(answer, AcceptedElicitation) else None
    return f"elicited: {answer.action} {content}"


@server.tool()
def big(chars: int) -> str:
    """A long text."""
    return "x" * chars


@server.tool()
def save(path: str, text: str) -> str:
    """Write a file (an absolute path): a tool that changes files outside the bridge's own file tools."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    return f"saved {len(text)} characters"


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name} warmly."


@server.prompt()
def review(pr: str, focus: str = "everything") -> str:
    """Review a pull request."""
    return f"Review pull request {pr}, focusing on {focus}."


async def serve_http() -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # before the port is told: a client that connects at once waits in the backlog
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def main() -> None:
    said = os.environ.get("MCP_WORKBENCH_STDERR")
    if said:
        print(said, file=sys.stderr, flush=True)
    if sys.argv[1:2] == ["http"]:
        asyncio.run(serve_http())
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
