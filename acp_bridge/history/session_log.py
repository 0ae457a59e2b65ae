"""The session log's records: what a session writes to its log, and what `session/load` reads back.

A log is a header (`SessionHeader`) then one event per durable step of the conversation, in order:
`UserPrompt`, `AssistantStep`, `CallCommitted`, `CallSettled`, `CodeDispatched`, `BackgroundEnded` (a
command `bash` left running in the background ended), `DeferredContext`, `PermissionsChanged`,
`ConfigChanged` (model, effort and auto-compaction), `UsageReported` (a response's usage and the cost so
far), `Compacted` (the older conversation replaced by a summary, where it happened), and
`SessionInfoChanged`.
Each record writes itself as the JSON object `store.py` appends as one line (`to_json`), and `decode`
reads one back. The format is the one logs have always had on disk; a record never renames a key.

Reading is lenient where a log may come from another version: an unknown `type` is no event of ours
(`decode` returns None), unknown fields are ignored, and optional fields take their defaults. A known
event missing what it cannot do without raises (KeyError, TypeError, ValueError), so the reader skips that
one line and keeps the rest.

Must not: know sessions, turns or the wire; a record is data only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from acp_bridge.models import ImageData, ToolCallRequest
from registry_core import (
    CodeDispatchEvent,
    ContentBlock,
    JsonValue,
    ToolResultEvent,
    snapshot,
    thaw,
)
from registry_core.content import content_from_json


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """The first line of a log: whose session it is and where it works."""

    KIND: ClassVar[str] = "session"

    session_id: str
    cwd: str
    roots: tuple[str, ...]
    created_at: str  # ISO 8601

    def to_json(self) -> dict[str, Any]:
        return {"type": self.KIND, "sessionId": self.session_id, "cwd": self.cwd, "roots": list(self.roots),
                "createdAt": self.created_at}  # fmt: skip

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> SessionHeader:
        """Raises ValueError when the header names no cwd (nothing can be rebuilt without it). A root that
        is not a string is left out; with none left, the cwd is the root."""
        cwd = raw.get("cwd")
        if not isinstance(cwd, str):
            raise ValueError("the session log's header has no cwd")
        stored = raw.get("roots")
        roots = tuple(r for r in stored if isinstance(r, str)) if isinstance(stored, list) else ()
        return SessionHeader(
            str(raw.get("sessionId", "")), cwd, roots or (cwd,), str(raw.get("createdAt", ""))
        )


@dataclass(frozen=True, slots=True)
class UserPrompt:
    """A prompt's text, as the model was given it, and the images attached to it. Starts a turn.

    `blocks`: the prompt's ACP content blocks as the client sent them (bounded by `prompt_blocks`), for
    a replay to show; None for a prompt of text alone, and in logs older than the field. On disk an image
    is stored once: a block whose image is one of `images` (an `image` block, or a `resource` whose blob
    it is) names it by its index there (`imageRef`) instead of repeating its data.

    `steered`: the user sent it while a turn ran, and it joined that turn where it is logged (no prompt of
    its own: it starts no turn); `message_id` is the id its echo carried (`user_message_chunk`'s
    `messageId`). Both absent in logs older than steering."""

    KIND: ClassVar[str] = "user"

    text: str
    images: tuple[ImageData, ...] = ()
    blocks: tuple[JsonValue, ...] | None = None
    steered: bool = False
    message_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.KIND, "text": self.text}
        if self.images:
            out["images"] = [{"mimeType": i.mime_type, "data": i.data} for i in self.images]
        if self.blocks is not None:
            refs = {image.data: index for index, image in reversed(list(enumerate(self.images)))}
            out["blocks"] = [_with_image_ref(thaw(block), refs) for block in self.blocks]
        if self.steered:
            out["steered"] = True
        if self.message_id is not None:
            out["messageId"] = self.message_id
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> UserPrompt:
        stored = raw.get("images")
        images = tuple(
            ImageData(str(i["mimeType"]), str(i["data"]))
            for i in (stored if isinstance(stored, list) else ())
            if isinstance(i, Mapping)
            and isinstance(i.get("mimeType"), str)
            and isinstance(i.get("data"), str)
        )
        blocks = raw.get("blocks")
        message_id = raw.get("messageId")
        return UserPrompt(
            str(raw["text"]),
            images,
            tuple(_with_image_data(b, images) for b in blocks if isinstance(b, Mapping))
            if isinstance(blocks, list)
            else None,
            steered=raw.get("steered") is True,
            message_id=message_id if isinstance(message_id, str) else None,
        )


_IMAGE_REF = "imageRef"


def _image_holder(block: Mapping[str, Any]) -> tuple[object, str]:
    """Where a block would hold an image's data: a resource's `blob`, or the block's own `data`."""
    return (block.get("resource"), "blob") if block.get("type") == "resource" else (block, "data")


def _with_image_ref(block: dict[str, Any], refs: Mapping[str, int]) -> dict[str, Any]:
    """A block as stored: an image's data that is one of the prompt's images replaced by its index
    among them."""
    holder, key = _image_holder(block)
    data = holder.get(key) if isinstance(holder, dict) else None
    if isinstance(holder, dict) and isinstance(data, str) and data in refs:
        del holder[key]
        holder[_IMAGE_REF] = refs[data]
    return block


def _with_image_data(block: Mapping[str, Any], images: tuple[ImageData, ...]) -> JsonValue:
    """A stored block with its image data back in place. A reference to no image is left as it is: the
    replay passes over a block it cannot show."""
    holder, key = _image_holder(block)
    ref = holder.get(_IMAGE_REF) if isinstance(holder, Mapping) else None
    if not isinstance(holder, Mapping) or type(ref) is not int or not 0 <= ref < len(images):
        return snapshot(block)
    restored = {k: v for k, v in holder.items() if k != _IMAGE_REF} | {key: images[ref].data}
    return snapshot({**block, "resource": restored} if key == "blob" else restored)


@dataclass(frozen=True, slots=True)
class AssistantStep:
    """One model step: its text, its thought, and the calls it asked for (arguments exactly as the model
    sent them: an object, or the raw string when it was not one)."""

    KIND: ClassVar[str] = "assistant"

    text: str
    thought: str
    tool_calls: tuple[ToolCallRequest, ...]

    def to_json(self) -> dict[str, Any]:
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls]
        return {"type": self.KIND, "text": self.text, "thought": self.thought, "toolCalls": calls}

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> AssistantStep:
        calls = tuple(
            ToolCallRequest(str(c["id"]), str(c["name"]), c["arguments"]) for c in raw.get("toolCalls", [])
        )
        return AssistantStep(str(raw.get("text") or ""), str(raw.get("thought") or ""), calls)


@dataclass(frozen=True, slots=True)
class CallCommitted:
    """A file tool made its change (`presenters.changes.report_commit`), logged the moment it is made:
    the result text and presentation meta it will report. Tells a replay that a call with no logged
    result did change the file."""

    KIND: ClassVar[str] = "tool/commit"
    DEFAULT_SUMMARY: ClassVar[str] = "The change was made."

    call_id: str
    tool: str
    summary: str
    meta: JsonValue

    def to_json(self) -> dict[str, Any]:
        return {"type": self.KIND, "callId": self.call_id, "name": self.tool, "summary": self.summary,
                "meta": thaw(self.meta)}  # fmt: skip

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> CallCommitted:
        summary = str(raw.get("summary") or CallCommitted.DEFAULT_SUMMARY)
        return CallCommitted(str(raw["callId"]), str(raw.get("name", "")), summary, snapshot(raw.get("meta")))


@dataclass(frozen=True, slots=True)
class CallSettled:
    """A top-level call's durable result (the registry's `tool/result` record) and the note its card
    showed, logged before the card is sent."""

    KIND: ClassVar[str] = "tool/result"

    result: ToolResultEvent
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.result.to_json()
        if self.note is not None:
            out["note"] = self.note
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> CallSettled:
        note = raw.get("note")
        return CallSettled(ToolResultEvent.from_json(raw), note if isinstance(note, str) else None)


@dataclass(frozen=True, slots=True)
class SettledAnswer:
    """What a `CallSettled` line told the model: the call, its content, whether it failed. Read without
    the rest of the line (the presentation meta and the failure's details, which only its card needs),
    for a replay that draws no card (`session/resume`): on a long session, reading every result's meta is
    most of the cost of reading the log."""

    call_id: str
    name: str
    content: tuple[ContentBlock, ...]
    is_error: bool

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> SettledAnswer:
        if raw.get("type") != CallSettled.KIND:
            raise ValueError("not a tool/result event")
        content = tuple([content_from_json(b) for b in raw.get("content", ())])
        return SettledAnswer(str(raw["callId"]), str(raw["name"]), content, bool(raw.get("isError")))


@dataclass(frozen=True, slots=True)
class CodeDispatched:
    """A settled Code Mode sub-call (the registry's `tool/code-dispatch` record: its arguments and the
    durable copy of its result, under its program's call id) and the note its card showed. Logged before
    its card completes; the program's own result comes later, as a `CallSettled`."""

    KIND: ClassVar[str] = "tool/code-dispatch"

    dispatch: CodeDispatchEvent
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = self.dispatch.to_json()
        if self.note is not None:
            out["note"] = self.note
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> CodeDispatched:
        note = raw.get("note")
        return CodeDispatched(CodeDispatchEvent.from_json(raw), note if isinstance(note, str) else None)


@dataclass(frozen=True, slots=True)
class BackgroundEnded:
    """A command `bash` started in the background (`run_in_background`) ended: the durable end its card
    completed with, as the tool draws it (its exit status, output, who stopped it). The call's own
    `CallSettled` said only that it started; this comes later, maybe prompts later, and is logged before
    the card completes."""

    KIND: ClassVar[str] = "tool/background-end"

    result: ToolResultEvent

    def to_json(self) -> dict[str, Any]:
        return {**self.result.to_json(), "type": self.KIND}

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> BackgroundEnded:
        return BackgroundEnded(ToolResultEvent.from_json({**raw, "type": "tool/result"}))


@dataclass(frozen=True, slots=True)
class DeferredContext:
    """A context a step's result deferred to the model (a user message after the step's results)."""

    KIND: ClassVar[str] = "context"

    text: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.KIND, "text": self.text}

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> DeferredContext:
        return DeferredContext(str(raw["text"]))


@dataclass(frozen=True, slots=True)
class PermissionsChanged:
    """The session's whole permission state after a change the user made; the last one in a log wins.
    The fields are kept as stored: `permission_log.restore` judges them against today's policy."""

    KIND: ClassVar[str] = "permissions"

    mode: JsonValue
    rules: tuple[JsonValue, ...]

    def to_json(self) -> dict[str, Any]:
        return {"type": self.KIND, "mode": self.mode, "rules": list(self.rules)}

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> PermissionsChanged:
        rules = raw.get("rules")
        return PermissionsChanged(raw.get("mode"), tuple(rules) if isinstance(rules, list) else ())


@dataclass(frozen=True, slots=True)
class ConfigChanged:
    """The session's model, thinking effort and auto-compaction after the user changed any of them (None:
    the default, or no effort); the last one in a log wins. `autoCompact` is written only when off, so a
    log from before it (or with it on) reads as on."""

    KIND: ClassVar[str] = "config"

    model: str | None
    thought_level: str | None
    auto_compact: bool = True

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.KIND, "model": self.model, "thoughtLevel": self.thought_level}
        if not self.auto_compact:
            out["autoCompact"] = False
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> ConfigChanged:
        model, level = raw.get("model"), raw.get("thoughtLevel")
        return ConfigChanged(
            model if isinstance(model, str) else None,
            level if isinstance(level, str) else None,
            raw.get("autoCompact") is not False,
        )


@dataclass(frozen=True, slots=True)
class UsageReported:
    """A model response's usage as the client was told: the tokens in context, and the session's cumulative
    cost so far (None while no price is known)."""

    KIND: ClassVar[str] = "usage"

    used: int
    cost: float | None = None
    currency: str = "USD"
    unpriced: int = 0  # responses so far whose price was unknown (the cost leaves them out)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.KIND, "used": self.used}
        if self.cost is not None:
            out["cost"] = {"amount": self.cost, "currency": self.currency}
        if self.unpriced:
            out["unpriced"] = self.unpriced
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> UsageReported:
        used = raw["used"]
        if not isinstance(used, int) or isinstance(used, bool) or used < 0:
            raise ValueError(f"usage must count tokens, got {used!r}")
        cost = raw.get("cost")
        amount = cost.get("amount") if isinstance(cost, Mapping) else None
        currency = cost.get("currency") if isinstance(cost, Mapping) else None
        unpriced = raw.get("unpriced", 0)
        return UsageReported(
            used,
            float(amount) if isinstance(amount, int | float) and not isinstance(amount, bool) else None,
            currency if isinstance(currency, str) else "USD",
            unpriced if isinstance(unpriced, int) and not isinstance(unpriced, bool) else 0,
        )


@dataclass(frozen=True, slots=True)
class Compacted:
    """The conversation was compacted: everything but its last `kept` messages was replaced by `summary`
    (`compaction.apply` does it, live and on replay). `trigger` is `threshold` or `command` (`/compact`,
    with its `focus`)."""

    KIND: ClassVar[str] = "compaction"

    compaction_id: str
    summary: str
    kept: int
    trigger: str
    focus: str | None = None
    summarized: int = 0  # how many messages the summary replaced

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.KIND,
            "compactionId": self.compaction_id,
            "summary": self.summary,
            "kept": self.kept,
            "trigger": self.trigger,
            "summarized": self.summarized,
        }
        if self.focus is not None:
            out["focus"] = self.focus
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Compacted:
        kept, summarized = raw["kept"], raw.get("summarized", 0)
        if not isinstance(kept, int) or isinstance(kept, bool) or kept < 0:
            raise ValueError(f"kept must count messages, got {kept!r}")
        focus = raw.get("focus")
        return Compacted(
            str(raw["compactionId"]),
            str(raw["summary"]),
            kept,
            str(raw.get("trigger") or "threshold"),
            focus if isinstance(focus, str) else None,
            summarized if isinstance(summarized, int) and not isinstance(summarized, bool) else 0,
        )


@dataclass(frozen=True, slots=True)
class SessionInfoChanged:
    """What `session/list` shows of the session changed: its title (from the first prompt, set by the
    user, or given to a fork: `title_source` "prompt", "user" or "fork") and/or its roots (a load or
    resume with other additional directories). A field left None did not change; the last value logged
    wins."""

    KIND: ClassVar[str] = "info"

    title: str | None = None
    title_source: str | None = None
    roots: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.KIND}
        if self.title is not None:
            out["title"] = self.title
            out["titleSource"] = self.title_source or "user"
        if self.roots is not None:
            out["roots"] = list(self.roots)
        return out

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> SessionInfoChanged:
        title, source, roots = raw.get("title"), raw.get("titleSource"), raw.get("roots")
        return SessionInfoChanged(
            title if isinstance(title, str) else None,
            source if isinstance(source, str) else None,
            tuple(r for r in roots if isinstance(r, str)) if isinstance(roots, list) else None,
        )


LogEvent = (
    UserPrompt
    | AssistantStep
    | CallCommitted
    | CallSettled
    | CodeDispatched
    | BackgroundEnded
    | DeferredContext
    | PermissionsChanged
    | ConfigChanged
    | UsageReported
    | Compacted
    | SessionInfoChanged
)

_READERS: dict[str, Callable[[Mapping[str, Any]], LogEvent]] = {
    kind.KIND: kind.from_json
    for kind in (
        UserPrompt,
        AssistantStep,
        CallCommitted,
        CallSettled,
        CodeDispatched,
        BackgroundEnded,
        DeferredContext,
        PermissionsChanged,
        ConfigChanged,
        UsageReported,
        Compacted,
        SessionInfoChanged,
    )
}


def decode(raw: Mapping[str, Any]) -> LogEvent | None:
    """The event a stored line holds, or None when its `type` is none of ours. Raises KeyError, TypeError
    or ValueError for an event of a known type that cannot be read."""
    kind = raw.get("type")
    read = _READERS.get(kind) if isinstance(kind, str) else None
    return read(raw) if read is not None else None
