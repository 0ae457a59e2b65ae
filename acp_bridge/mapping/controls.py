"""Model-control updates: session config options (`config_select`, `config_boolean`,
`config_option_update`), the usage gauge's cost (`cost`), a prompt's token usage (`prompt_usage`),
compaction (`compaction_update`, `compaction_summary_chunk`), notices (`notice`) and the model's waits
(`model_wait`: a notice, or a thought for a client without notices).

Shapes follow ACP v1 as `@agentclientprotocol/sdk` 2.4.0 defines it (`dist/v1/schema/types.gen.d.ts`):
`SessionConfigOption` (type `select`, `category` one of `mode` / `model` / `thought_level`; or type
`boolean`, which a client asks for with `clientCapabilities.session.configOptions.boolean`),
`ConfigOptionUpdate`, `Cost`, the unstable `Usage` of a `PromptResponse`, and the unstable
`CompactionUpdate`, `CompactionSummaryChunk` and `Notice` session updates, which a client asks for with
`clientCapabilities.session.compaction` and `clientCapabilities.session.notices` (the caller checks,
except `model_wait`, told which; these functions only build).

Must not: decide which options exist or when to send anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal

from .messages import agent_thought_chunk
from .text import truncate_middle
from .wire import (
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigBoolean,
    ConfigOption,
    ConfigOptionUpdate,
    ConfigSelect,
    ConfigSelectValue,
    Cost,
    InstructionFileEntry,
    InstructionsReport,
    MessageChunk,
    ModelWait,
    Notice,
    PromptUsage,
    TextContent,
)

# A compaction summary is a few paragraphs; a model that rambles is cut, never a multi-megabyte frame.
MAX_SUMMARY_CHARS: Final = 64 * 1024
MAX_NOTICE_CHARS: Final = 2_000

CompactionStatus = Literal["in_progress", "completed", "failed", "cancelled"]
NoticeSeverity = Literal["info", "warning", "error"]


def config_select(
    option_id: str,
    name: str,
    description: str,
    category: str,
    current: str,
    values: Iterable[tuple[str, str, str | None]],
) -> ConfigSelect:
    """One `select` config option; `values` are (value, name, description or None) triples."""
    options: list[ConfigSelectValue] = []
    for value, label, detail in values:
        entry: ConfigSelectValue = {"value": value, "name": label}
        if detail is not None:
            entry["description"] = detail
        options.append(entry)
    return {
        "id": option_id,
        "name": name,
        "description": description,
        "category": category,
        "type": "select",
        "currentValue": current,
        "options": options,
    }


def config_boolean(option_id: str, name: str, description: str, current: bool) -> ConfigBoolean:
    """One `boolean` config option (an on/off toggle)."""
    return {
        "id": option_id,
        "name": name,
        "description": description,
        "type": "boolean",
        "currentValue": current,
    }


def config_option_update(options: list[ConfigOption]) -> ConfigOptionUpdate:
    """ACP's `config_option_update`: the full set of options and their current values."""
    return {"sessionUpdate": "config_option_update", "configOptions": options}


def cost(amount: float, currency: str = "USD") -> Cost:
    """A `usage_update`'s cumulative `cost`."""
    return {"amount": round(amount, 6), "currency": currency}


def prompt_usage(
    input_tokens: int, output_tokens: int, total_tokens: int, *, thought: int = 0, cached_read: int = 0
) -> PromptUsage:
    """A `session/prompt` answer's `usage` (unstable); `thought` and `cached_read` are left out at 0 (no
    response reported them)."""
    usage: PromptUsage = {
        "totalTokens": total_tokens,
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
    }
    if thought:
        usage["thoughtTokens"] = thought
    if cached_read:
        usage["cachedReadTokens"] = cached_read
    return usage


def compaction_update(
    compaction_id: str,
    status: CompactionStatus,
    *,
    summary: str | None = None,
    error: str | None = None,
    meta: dict[str, Any] | None = None,
) -> CompactionUpdate:
    """ACP's `compaction_update` (unstable). Patch semantics: a field left out keeps the client's value,
    so `summary` goes only where it is final (and is cut at `MAX_SUMMARY_CHARS`)."""
    update: CompactionUpdate = {
        "sessionUpdate": "compaction_update",
        "compactionId": compaction_id,
        "status": status,
    }
    if summary is not None:
        update["summary"] = [_text(summary)]
    if error is not None:
        update["error"] = truncate_middle(error, MAX_NOTICE_CHARS)
    if meta:
        update["_meta"] = {"acpBridge": meta}
    return update


def compaction_summary_chunk(compaction_id: str, text: str) -> CompactionSummaryChunk:
    """ACP's `compaction_summary_chunk` (unstable): one more piece of an in-progress compaction's summary."""
    return {
        "sessionUpdate": "compaction_summary_chunk",
        "compactionId": compaction_id,
        "content": _text(text),
    }


def _text(text: str) -> TextContent:
    """An ACP text `ContentBlock`."""
    return {"type": "text", "text": truncate_middle(text, MAX_SUMMARY_CHARS)}


def model_wait(
    words: str, reason: str, seconds: float, attempt: int = 0, of: int = 0, *, notices: bool
) -> Notice | MessageChunk:
    """The user told that the model step waits (`words`: "rate limited, retrying in 2 s (attempt 1 of
    3)", "waiting for the model for 40 s"): a `notice` for a client that advertised `session.notices`,
    carrying the wait as data (`_meta.acpBridge.wait`, so a client can show it as the waiting line it
    is), else an agent thought of one line."""
    if not notices:
        return agent_thought_chunk(f"({words})\n")
    update = notice("info" if reason == "silent" else "warning", words[:1].upper() + words[1:])
    wait: ModelWait = {"reason": reason, "seconds": seconds, "attempt": attempt, "of": of}
    update["_meta"] = {"acpBridge": {"wait": wait}}
    return update


def instructions_notice(
    title: str,
    description: str,
    event: Literal["loaded", "changed", "added"],
    files: Sequence[tuple[str, str, str, str | None]],
) -> Notice:
    """The user told which instructions files the agent follows (`files`: path, name in its folder, scope,
    why it was not read or None): an info `notice` whose `_meta.acpBridge.instructions` lists them as data,
    so a client can show them as links rather than parse the description."""
    update = notice("info", title, description)
    entries: list[InstructionFileEntry] = []
    for path, name, scope, skipped in files:
        entry: InstructionFileEntry = {"path": path, "name": name, "scope": scope}
        if skipped is not None:
            entry["skipped"] = skipped
        entries.append(entry)
    report: InstructionsReport = {"event": event, "files": entries}
    update["_meta"] = {"acpBridge": {"instructions": report}}
    return update


def notice(severity: NoticeSeverity, title: str, description: str | None = None) -> Notice:
    """ACP's `notice` (unstable): advisory, not history; `title` must not be empty."""
    update: Notice = {
        "sessionUpdate": "notice",
        "severity": severity,
        "title": truncate_middle(title.strip() or severity, MAX_NOTICE_CHARS),
    }
    if description:
        update["description"] = truncate_middle(description, MAX_NOTICE_CHARS)
    return update
