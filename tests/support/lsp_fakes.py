"""Fakes of what the LSP channel talks to: a transport that records every message and answers requests
as a test says, and the editor's synced documents."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from acp_bridge.lsp.channel import OpenDocument


class FakeTransport:
    def __init__(self) -> None:
        self.closed = False
        self.sent: list[tuple[str, Any]] = []  # notifications and requests, in order
        self.answers: dict[str, Callable[[Any], Any]] = {}

    def notify(self, method: str, params: Any) -> None:
        self.sent.append((method, params))

    async def request(self, method: str, params: Any) -> Any:
        self.sent.append((method, params))
        answer = self.answers.get(method, lambda _params: None)(params)
        if asyncio.iscoroutine(answer):
            answer = await answer
        return answer

    def backlog(self) -> int:
        return 0

    async def drain(self) -> None:
        return None

    def of(self, method: str) -> list[Any]:
        return [params for m, params in self.sent if m == method]


class FakeDocuments:
    def __init__(self) -> None:
        self.open: dict[str, OpenDocument] = {}

    def find(self, path: str) -> OpenDocument | None:
        return self.open.get(path)

    def uri_for(self, path: str) -> str:
        return self.open[path].uri if path in self.open else "file://" + path

    def units(self, text: str) -> int:
        return len(text.encode("utf-16-le")) // 2
