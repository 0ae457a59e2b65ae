"""A client's own system prompt: the `systemPrompt` param of `session/new`, `session/load`,
`session/resume` and `session/fork`, as the ACP proposal "Client-Provided System Prompt" shapes it
(agentclientprotocol/agent-client-protocol, RFD pull request #1237; not in the stable schema yet):

    "systemPrompt": {"mode": "append" | "override", "content": [ContentBlock, ...]}

`mode` defaults to `append` (the client's text follows the agent's prompt); `override` replaces the
built-in prompt, which `initialize` offers with `sessionCapabilities.systemPrompt: {mode: {override:
{}}}`. An earlier draft's bare list of blocks is read as `append`. Only text blocks are taken (their texts
joined by blank lines); whitespace-only content counts as none. What the bridge keeps of its own with
`override` (the project instructions) is `system_prompt.compose`'s.

Must not: accept a block it would drop (an image, a resource): the request is refused, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from acp_bridge.common.errors import InvalidParams, quoted

Mode = Literal["append", "override"]
MODES: tuple[Mode, ...] = ("append", "override")
# A system prompt is instructions, not a document: a client sending more is mistaken.
MAX_CLIENT_PROMPT_BYTES = 256 * 1024


@dataclass(frozen=True, slots=True)
class ClientSystemPrompt:
    mode: Mode
    text: str


def read_client_prompt(raw: object) -> ClientSystemPrompt | None:
    """The `systemPrompt` param, or None when absent or empty. Raises InvalidParams when malformed."""
    if raw is None:
        return None
    mode: object = "append"
    content: object = raw
    if isinstance(raw, Mapping):
        mode = raw.get("mode", "append")
        content = raw.get("content")
    if mode not in MODES:
        raise InvalidParams(f'systemPrompt.mode must be "append" or "override", got {quoted(mode)}')
    if not isinstance(content, list):
        raise InvalidParams("systemPrompt.content must be a list of content blocks")
    texts: list[str] = []
    for i, block in enumerate(content):
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind != "text" or not isinstance(block.get("text"), str):
            raise InvalidParams(f"systemPrompt.content[{i}] must be a text block, got {quoted(kind)}")
        texts.append(block["text"])
    text = "\n\n".join(t.strip("\n") for t in texts).strip()
    if len(text.encode()) > MAX_CLIENT_PROMPT_BYTES:
        raise InvalidParams(f"systemPrompt is over {MAX_CLIENT_PROMPT_BYTES // 1024} KiB")
    if not text:
        return None
    return ClientSystemPrompt("override" if mode == "override" else "append", text)
