"""The one `ClientChannel` fake of the tests: a client in process that records what the core sends it.

Every update is kept in order (`updates`, with its session id, as a JSON round trip: what a face would
put on the wire); `changed` is set on each so a test can wait for one (`until`). Permission questions are
kept in `questions` (the card and the options) and answered by `answer(call, options)` (an option id or a
`PermissionOutcome`), else by `answers[toolCallId]`, else `allow_once`. `files` gives the client an
editor's view (fs read and write advertised); `elicit` answers `elicitation/create` (advertised as a
form). `capabilities` may be set outright. `on_update` sees each update too (a test's own journal).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any

from acp_bridge.client.channel import ClientCapabilities, PermissionOutcome
from acp_bridge.common.errors import RemoteError

Answer = Callable[[dict[str, Any], list[dict[str, Any]]], "str | PermissionOutcome"]


class FakeChannel:
    """Records updates in order; answers permission questions, file access and elicitations as configured."""

    def __init__(
        self,
        answer: Answer | None = None,
        *,
        answers: Mapping[str, str] | None = None,
        elicit: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        files: dict[str, str] | None = None,
        capabilities: ClientCapabilities | None = None,
        on_update: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.capabilities = capabilities or ClientCapabilities(
            terminal_meta=True,
            fs_read=files is not None,
            fs_write=files is not None,
            elicitation_form=elicit is not None,
        )
        self.updates: list[tuple[str, dict[str, Any]]] = []
        self.questions: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        self.elicitations: list[dict[str, Any]] = []
        self.files = files
        self.writes: list[tuple[str, str]] = []
        self.answer = answer
        self.answers = dict(answers or {})
        self.changed = asyncio.Event()
        self._elicit = elicit
        self._on_update = on_update

    # --- the ClientChannel ----------------------------------------------------------------------------

    def send_update(self, session_id: str, update: Any) -> None:
        copy = json.loads(json.dumps(update))
        self.updates.append((session_id, copy))
        if self._on_update is not None:
            self._on_update(session_id, copy)
        self.changed.set()

    async def drain(self) -> None:
        return None

    def backlog(self) -> int:
        return 0

    async def request_permission(self, session_id: str, tool_call: Any, options: Any) -> PermissionOutcome:
        call, choices = dict(tool_call), [dict(o) for o in options]
        self.questions.append((call, choices))
        await asyncio.sleep(0)  # a real client answers on a later turn of the loop
        if self.answer is not None:
            picked = self.answer(call, choices)
            return picked if isinstance(picked, PermissionOutcome) else PermissionOutcome("selected", picked)
        return PermissionOutcome("selected", self.answers.get(call.get("toolCallId", ""), "allow_once"))

    async def read_text_file(self, session_id: str, path: str) -> str:
        assert self.files is not None and self.capabilities.fs_read, "no fs capability was advertised"
        if path not in self.files:
            raise RemoteError(-32002, f"Resource not found: {path}")
        return self.files[path]

    async def write_text_file(self, session_id: str, path: str, content: str) -> None:
        assert self.files is not None and self.capabilities.fs_write, "no fs capability was advertised"
        self.writes.append((path, content))
        self.files[path] = content

    async def create_elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        assert self._elicit is not None, "elicitation was not advertised"
        self.elicitations.append(params)
        return self._elicit(params)

    # --- reading what was sent ------------------------------------------------------------------------

    def sent(self) -> list[dict[str, Any]]:
        """The updates alone, in order."""
        return [u for _, u in self.updates]

    def of(self, call_id: str) -> list[dict[str, Any]]:
        return [u for _, u in self.updates if u.get("toolCallId") == call_id]

    def statuses(self, call_id: str) -> list[str]:
        return [u["status"] for u in self.of(call_id) if "status" in u]

    def card(self, call_id: str) -> dict[str, Any]:
        """The card's final state (ACP's replace-per-field rule)."""
        card: dict[str, Any] = {}
        for update in self.of(call_id):
            card.update({k: v for k, v in update.items() if k != "sessionUpdate" and v is not None})
        return card

    def messages(self) -> str:
        return "".join(
            u["content"]["text"] for _, u in self.updates if u.get("sessionUpdate") == "agent_message_chunk"
        )

    def commands(self) -> list[str]:
        found = [u for _, u in self.updates if u.get("sessionUpdate") == "available_commands_update"]
        return [c["name"] for c in found[-1]["availableCommands"]] if found else []

    async def until(self, condition: Callable[[], object], *, within: float = 10.0, what: str) -> None:
        """Wait for the updates to satisfy `condition` (woken by each update, not polled)."""
        try:
            async with asyncio.timeout(within):
                while not condition():
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            raise AssertionError(f"timed out after {within} s waiting for {what}") from None
