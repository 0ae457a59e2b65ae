"""The floor: the least an ACP agent over stdio can do for the bridge's benchmark turns, in raw asyncio.

No registry, no tools, no model, no validation: newline-delimited JSON-RPC on stdin/stdout (ACP's stdio
transport), encoded with orjson as the bridge's are (`acp_bridge/common/json_bytes.py`), answering
`initialize`, `session/new` and a `session/prompt` whose text names files to read
(whitespace-separated, relative to the session's cwd). For each file it sends what the bridge sends for a
`read` call: a `tool_call` (pending) and a `tool_call_update` (completed, with the file's text as a content
block and its location), then answers `end_turn`. Whatever the bridge costs above this is the price of
its own layers (registry, presenters, mapping, the session core).

Run: `python -m benchmarks.floor_agent` (the benchmarks spawn it as the bridge is spawned).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import orjson


def _read(path: str) -> str:
    # Small files, read inline: a thread per read would be the floor's own overhead, not the minimum.
    with open(path, encoding="utf-8") as file:
        return file.read()


class FloorAgent:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.sessions: dict[str, str] = {}  # session id → cwd

    def send(self, message: dict[str, Any]) -> None:
        self.writer.write(orjson.dumps(message) + b"\n")

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        params = {"sessionId": session_id, "update": update}
        self.send({"jsonrpc": "2.0", "method": "session/update", "params": params})

    async def handle(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            result: Any = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
        elif method == "session/new":
            session_id = f"floor-{len(self.sessions) + 1}"
            self.sessions[session_id] = params["cwd"]
            result = {"sessionId": session_id}
        elif method == "session/prompt":
            result = await self.prompt(params["sessionId"], params["prompt"])
        elif "id" in message:
            self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}})
            return
        else:
            return
        self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
        await self.writer.drain()

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
        cwd = self.sessions[session_id]
        names = " ".join(b.get("text", "") for b in blocks if b.get("type") == "text").split()
        for i, name in enumerate(names):
            call_id = f"read-{i}"
            path = os.path.join(cwd, name)
            location = [{"path": path, "line": 1}]
            pending = {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": f"Read {name}",
                       "kind": "read", "status": "pending", "locations": location,
                       "rawInput": {"file_path": name}}  # fmt: skip
            self.update(session_id, pending)
            content = [{"type": "content", "content": {"type": "text", "text": _read(path)}}]
            completed = {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed",
                         "locations": location, "content": content}  # fmt: skip
            self.update(session_id, completed)
            await self.writer.drain()
        return {"stopReason": "end_turn"}


async def main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    agent = FloorAgent(writer)
    tasks = set()
    while line := await reader.readline():
        # Each request its own task, as an agent must (a prompt never blocks a cancel).
        task = asyncio.ensure_future(agent.handle(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if tasks:
        await asyncio.wait(tasks)


if __name__ == "__main__":
    asyncio.run(main())
