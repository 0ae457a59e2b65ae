"""Fixtures of the sessions-and-prompts tests: a fake OpenAI-compatible server (a real HTTP server on
127.0.0.1, fake_openai_server.py) and a bridge talking to it, so a test reads back what the model was
sent."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

from tests.support.bridge_fixtures import StartBridge
from tests.support.bridge_harness import Bridge, RecordingClient
from tests.support.fake_openai_server import FakeOpenAIServer

NO_KEYS = {"ACP_BRIDGE_API_KEY": "", "DEEPSEEK_API_KEY": "", "OPENAI_API_KEY": ""}


async def openai_bridge(
    bridges: StartBridge,
    server: FakeOpenAIServer,
    *args: str,
    model: str = "fake-model",
    client: RecordingClient | None = None,
) -> Bridge:
    """A bridge whose model is `openai:<model>` at `server`, initialized."""
    bridge = await bridges(
        "--base-url", server.base_url, *args, model=f"openai:{model}", client=client,
        env={**NO_KEYS, "ACP_BRIDGE_API_KEY": "test-key"},
    )  # fmt: skip
    await bridge.initialize()
    return bridge


def sent_messages(server: FakeOpenAIServer, index: int) -> list[dict[str, Any]]:
    """The `messages` of the `index`th request the model got."""
    messages: list[dict[str, Any]] = server.requests[index].json()["messages"]
    return messages


def text_of(updates: list[dict[str, Any]], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"].get("text", "") for u in updates if u["sessionUpdate"] == kind)


def write_png(path: Path, width: int = 2, height: int = 3) -> bytes:
    """A valid PNG of `width`×`height` (one grey channel), written to `path`; returns its bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")
    png = b"\x89PNG\r\n\x1a\n" + body
    path.write_bytes(png)
    return png
