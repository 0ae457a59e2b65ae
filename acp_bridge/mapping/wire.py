"""The mapping's shared vocabulary: the shapes the bridge puts on the wire, `WireContext` (what the mapping
knows about the session and the client) and the size limits the other modules bound their output with.

The shapes are the ACP `session/update` payloads the bridge emits (`Update`, their union), the `toolCall`
and the options of `session/request_permission`, a `session/prompt` answer's `usage`, and the pieces
they are made of: tool call content, diff
and terminal blocks, locations, the `_meta` conventions and the bridge's `rawOutput` summary. They follow
the ACP schema (https://agentclientprotocol.com/protocol/schema) field for field, in wire spelling
(camelCase); `total=False` / `NotRequired` marks what an update may leave out. Every face reads updates
through these types and the fold (`fold.py`), never by guessing at dict keys.

Must not: hold logic or build updates; it is imported by every other module of the package and imports
none of them.
"""

# No `from __future__ import annotations` here: a TypedDict reads `Required` / `NotRequired` from its
# annotations when the class is made, and Python 3.11 cannot see them in strings.
from dataclasses import dataclass
from typing import Any, Final, Literal, NotRequired, Required, TypedDict

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
PlanStatus = Literal["pending", "in_progress", "completed"]
PlanPriority = Literal["high", "medium", "low"]
# The four ACP permission option kinds; the bridge's option ids equal their kind.
PermissionKind = Literal["allow_once", "allow_always", "reject_once", "reject_always"]
ChunkKind = Literal["agent_message_chunk", "agent_thought_chunk", "user_message_chunk"]

# --- content -------------------------------------------------------------------------------------------

# The id of the extra "always" option an MCP tool's question carries: allow every tool of its server.
ALLOW_SERVER_OPTION = "allow_always_server"


class TextContent(TypedDict):
    """An ACP `ContentBlock` of type text."""

    type: Literal["text"]
    text: str


class ImageContent(TypedDict):
    """An ACP `ContentBlock` of type image (base64 `data`)."""

    type: Literal["image"]
    data: str
    mimeType: str
    uri: NotRequired[str]


class ResourceLinkContent(TypedDict, total=False):
    """An ACP `ContentBlock` of type resource_link: a resource the client may open, not its contents."""

    type: Required[Literal["resource_link"]]
    uri: Required[str]
    name: Required[str]
    title: str
    description: str
    mimeType: str
    size: int


class TextResource(TypedDict, total=False):
    """An embedded resource's text (ACP `TextResourceContents`)."""

    uri: Required[str]
    text: Required[str]
    mimeType: str


class BlobResource(TypedDict, total=False):
    """An embedded resource's bytes, base64 (ACP `BlobResourceContents`)."""

    uri: Required[str]
    blob: Required[str]
    mimeType: str


class EmbeddedResourceContent(TypedDict):
    """An ACP `ContentBlock` of type resource: a resource whose text (or, in a replayed prompt, bytes)
    is embedded."""

    type: Literal["resource"]
    resource: TextResource | BlobResource


class ContentItem(TypedDict):
    """A tool call content block that shows an ACP `ContentBlock`."""

    type: Literal["content"]
    content: TextContent | ImageContent | ResourceLinkContent | EmbeddedResourceContent


class DiffItem(TypedDict):
    """A tool call content block that shows a file change; `oldText` None: a new file."""

    type: Literal["diff"]
    path: str  # absolute
    oldText: str | None
    newText: str


class TerminalItem(TypedDict):
    """A tool call content block that embeds a terminal (with Zed's display-only terminal convention, the
    terminal id is the call id)."""

    type: Literal["terminal"]
    terminalId: str


ToolCallContent = ContentItem | DiffItem | TerminalItem


class Location(TypedDict):
    """An ACP `ToolCallLocation`: a file the call is about (absolute), at a 1-based line when known."""

    path: str
    line: NotRequired[int]


# --- _meta ---------------------------------------------------------------------------------------------


class BridgeMeta(TypedDict, total=False):
    """`_meta.acpBridge` of a card: the tool's name (ACP's tool call has no name field), and when known the
    note that says what decided the call, a command's description and its working directory."""

    tool: Required[str]
    note: str
    description: str
    cwd: str


class TerminalInfo(TypedDict):
    """Zed's `_meta.terminal_info` on a `tool_call`: opens a display-only terminal."""

    terminal_id: str
    cwd: str


class TerminalOutput(TypedDict):
    """Zed's `_meta.terminal_output`: output appended to the display-only terminal (a delta)."""

    terminal_id: str
    data: str


class TerminalExit(TypedDict):
    """Zed's `_meta.terminal_exit`: the display-only terminal's command ended."""

    terminal_id: str
    exit_code: int | None
    signal: str | None


class CardMeta(TypedDict, total=False):
    """A card's `_meta`: the bridge's own data, and Zed's display-only terminal convention (only for a
    client that opted in with `clientCapabilities._meta.terminal_output`)."""

    acpBridge: BridgeMeta
    terminal_info: TerminalInfo
    terminal_output: TerminalOutput
    terminal_exit: TerminalExit
    parentToolCallId: str  # a nested call's (Code Mode sub-call's): the call of the program that made it


class ErrorSummary(TypedDict):
    message: str
    code: NotRequired[str]


class RawOutput(TypedDict, total=False):
    """A finished card's `rawOutput`: a bounded summary of the result, never what the model saw in full.
    `isError` always; the rest by the kind of result (a command's exit, a search's total, a read's file,
    a fetch's URL, the result's text)."""

    isError: Required[bool]
    error: ErrorSummary
    exitCode: int | None
    signal: str | None
    fullOutputPath: str
    output: str
    total: int
    truncated: bool
    path: str
    totalLines: int
    url: str
    statusCode: int | None
    structuredContent: Any
    text: str


# --- tool calls ----------------------------------------------------------------------------------------


class CardFields(TypedDict, total=False):
    """What every tool call shape may carry besides its id, title, kind and status. On an update, `content`
    and `locations` replace the card's; `rawInput` is the call's arguments (any JSON, bounded); `name` is
    the tool's programmatic name (ACP `ToolCall.name`, stable since schema 1.22 / SDK 2.4), the same as
    `_meta.acpBridge.tool`."""

    name: str
    content: list[ToolCallContent]
    locations: list[Location]
    rawInput: Any
    rawOutput: RawOutput
    _meta: CardMeta


class ToolCallStart(CardFields):
    """`sessionUpdate: "tool_call"`: a card appears (ACP's `ToolCall`)."""

    sessionUpdate: Required[Literal["tool_call"]]
    toolCallId: Required[str]
    title: Required[str]
    kind: Required[ToolKind]
    status: Required[ToolStatus]


class ToolCallUpdate(CardFields, total=False):
    """ACP's `ToolCallUpdate`: the fields of a card that change (every one but the id optional). As is,
    it is the `toolCall` of `session/request_permission`."""

    toolCallId: Required[str]
    title: str
    kind: ToolKind
    status: ToolStatus


class ToolCallProgress(ToolCallUpdate):
    """`sessionUpdate: "tool_call_update"`: a card changes (the SDK's `ToolCallProgress`)."""

    sessionUpdate: Required[Literal["tool_call_update"]]


# --- the rest of a session -----------------------------------------------------------------------------


class MessageChunk(TypedDict):
    """A piece of the agent's answer, of its thoughts, or (replayed) of the user's prompt: any block the
    user sent."""

    sessionUpdate: ChunkKind
    content: TextContent | ImageContent | ResourceLinkContent | EmbeddedResourceContent
    messageId: NotRequired[str]
    # A replayed prompt's first chunk: `{"acpBridge": {"turn": N}}`, the turn it began (checkpoints).
    _meta: NotRequired[dict[str, Any]]


class PlanEntry(TypedDict):
    content: str
    priority: PlanPriority
    status: PlanStatus


class Plan(TypedDict):
    """`sessionUpdate: "plan"`: the whole plan, every time (the client replaces it)."""

    sessionUpdate: Literal["plan"]
    entries: list[PlanEntry]


class CurrentModeUpdate(TypedDict):
    sessionUpdate: Literal["current_mode_update"]
    currentModeId: str


class SessionMode(TypedDict):
    """One mode a session can be in (ACP `SessionMode`): here, a permission mode."""

    id: str
    name: str
    description: NotRequired[str]


class SessionModeState(TypedDict):
    """The `modes` of a session/new, load, resume or fork answer (ACP `SessionModeState`)."""

    currentModeId: str
    availableModes: list[SessionMode]


class Cost(TypedDict):
    """A session's cumulative cost (ACP `Cost`)."""

    amount: float
    currency: str


class UsageUpdate(TypedDict):
    """`used` tokens are in the context, of a `size`-token window; `cost` when prices are known;
    `_meta.acpBridge.unpricedResponses`: responses whose price was not known (the cost is incomplete)."""

    sessionUpdate: Literal["usage_update"]
    used: int
    size: int
    cost: NotRequired[Cost]
    _meta: NotRequired[dict[str, Any]]


class ConfigSelectValue(TypedDict):
    """One value a `select` config option offers."""

    value: str
    name: str
    description: NotRequired[str]


class ConfigSelect(TypedDict):
    """A `select` session config option (ACP `SessionConfigOption`)."""

    id: str
    name: str
    description: str
    category: str
    type: Literal["select"]
    currentValue: str
    options: list[ConfigSelectValue]


class ConfigBoolean(TypedDict):
    """A `boolean` session config option (ACP `SessionConfigOption`, an on/off toggle): only for a client
    that advertised `clientCapabilities.session.configOptions.boolean`. No `category`: ACP's are for
    the mode, model and thought-level pickers."""

    id: str
    name: str
    description: str
    type: Literal["boolean"]
    currentValue: bool


ConfigOption = ConfigSelect | ConfigBoolean


class ConfigOptionUpdate(TypedDict):
    """`config_option_update`: the full set of options and their current values."""

    sessionUpdate: Literal["config_option_update"]
    configOptions: list[ConfigOption]


class CompactionUpdate(TypedDict):
    """`compaction_update` (unstable): a compaction's status; a field left out keeps the client's value."""

    sessionUpdate: Literal["compaction_update"]
    compactionId: str
    status: Literal["in_progress", "completed", "failed", "cancelled"]
    summary: NotRequired[list[TextContent]]
    error: NotRequired[str]
    _meta: NotRequired[dict[str, Any]]


class CompactionSummaryChunk(TypedDict):
    """`compaction_summary_chunk` (unstable): one more piece of an in-progress compaction's summary."""

    sessionUpdate: Literal["compaction_summary_chunk"]
    compactionId: str
    content: TextContent


class SessionInfoUpdate(TypedDict):
    """`session_info_update`: what changed of the session's title and last activity (`updatedAt`)."""

    sessionUpdate: Literal["session_info_update"]
    title: NotRequired[str]
    updatedAt: NotRequired[str]


class ModelWait(TypedDict):
    """`_meta.acpBridge.wait` of a notice saying the model step waits: why (`rate_limited`,
    `server_error`, `unreachable`: before a retry; `silent`: nothing came from the model), how many
    seconds (the wait ahead before a retry, the silence so far), and which retry of how many (0: none)."""

    reason: str
    seconds: float
    attempt: int
    of: int


class InstructionFileEntry(TypedDict):
    """One instructions file the agent follows: its absolute path, its name in its folder (`AGENTS.md`,
    `CLAUDE.md`, `.github/copilot-instructions.md`), its scope (`user`, `root`, `folder`), and why it was
    found but not read, if it was not."""

    path: str
    name: str
    scope: str
    skipped: NotRequired[str]


class InstructionsReport(TypedDict):
    """`_meta.acpBridge.instructions` of a notice about the instructions files: `loaded` (the session's
    files, at its first turn) and `changed` (them again, re-read) list every file of the session; `added`
    lists a folder's own file, when the agent first works there."""

    event: Literal["loaded", "changed", "added"]
    files: list[InstructionFileEntry]


class NoticeBridgeMeta(TypedDict, total=False):
    wait: ModelWait
    instructions: InstructionsReport


class NoticeMeta(TypedDict):
    acpBridge: NoticeBridgeMeta


class Notice(TypedDict):
    """`notice` (unstable): advisory, not history."""

    sessionUpdate: Literal["notice"]
    severity: Literal["info", "warning", "error"]
    title: str
    description: NotRequired[str]
    _meta: NotRequired[NoticeMeta]


SubagentState = Literal["running", "completed", "failed", "cancelled", "disconnected"]


class SubagentBridgeMeta(TypedDict):
    toolCallId: str


class SubagentMeta(TypedDict):
    acpBridge: SubagentBridgeMeta


class SubagentUpdate(TypedDict):
    """`subagent_update` (unstable, the subagents RFD): a child session announced, or its state, on its
    parent's stream (upsert: a field it lacks is unchanged). Only for a client with
    `clientCapabilities.subagents`."""

    sessionUpdate: Literal["subagent_update"]
    subagentSessionId: str
    name: NotRequired[str]
    task: NotRequired[str]
    state: NotRequired[SubagentState]
    _meta: NotRequired[SubagentMeta]


class CommandInput(TypedDict):
    hint: str


class AvailableCommand(TypedDict):
    name: str
    description: str
    input: NotRequired[CommandInput]


class AvailableCommandsUpdate(TypedDict):
    sessionUpdate: Literal["available_commands_update"]
    availableCommands: list[AvailableCommand]


Update = (
    ToolCallStart
    | ToolCallProgress
    | MessageChunk
    | Plan
    | CurrentModeUpdate
    | UsageUpdate
    | AvailableCommandsUpdate
    | ConfigOptionUpdate
    | CompactionUpdate
    | CompactionSummaryChunk
    | Notice
    | SessionInfoUpdate
    | SubagentUpdate
)
"""The `update` object of a `session/update` notification: every shape the bridge emits."""


# --- request answers -----------------------------------------------------------------------------------


class PromptUsage(TypedDict):
    """A `session/prompt` answer's `usage` (ACP `Usage`, unstable): the tokens the backend reported for
    every model request of the prompt. `outputTokens` includes `thoughtTokens`, and `inputTokens`
    includes `cachedReadTokens`, as OpenAI-compatible endpoints count them; those two are sent only when
    some response reported them."""

    totalTokens: int
    inputTokens: int
    outputTokens: int
    thoughtTokens: NotRequired[int]
    cachedReadTokens: NotRequired[int]


# --- permission requests -------------------------------------------------------------------------------


class OptionScope(TypedDict):
    """`_meta.acpBridge` of an "always" option: what a remembered answer covers, as the policy labels it
    (e.g. "`npm test` commands"), so a face need not read it out of the option's name."""

    scope: str


class OptionMeta(TypedDict):
    acpBridge: OptionScope


class PermissionOption(TypedDict):
    """An ACP `PermissionOption` of `session/request_permission`."""

    optionId: str
    name: str
    kind: PermissionKind
    _meta: NotRequired[OptionMeta]


# --- limits ----------------------------------------------------------------------------------------
# Python ACP peers read lines with asyncio's StreamReader; the bridge raises its own limit, but a
# client may not, so every update stays well under this (configurable per session).
DEFAULT_MAX_UPDATE_BYTES: Final = 512 * 1024
MAX_LOCATIONS: Final = 50  # follow-along needs a few anchors, not every grep hit in a monorepo
MAX_DIFF_BLOCKS: Final = 100
MAX_TITLE_CHARS: Final = 300
RAW_INPUT_MAX_BYTES: Final = 32 * 1024
RAW_OUTPUT_TEXT_CHARS: Final = 10_000  # opencode had to cap rawOutput at ~10 KB for Python clients
LIVE_OUTPUT_TAIL_CHARS: Final = 64 * 1024  # the fallback re-sends the whole block; keep it a tail
FINAL_TERMINAL_OUTPUT_CHARS: Final = 2 * 1024 * 1024
MAX_SEARCH_LINE_CHARS: Final = 400
MAX_WEB_SOURCES: Final = 50
MAX_PLAN_ENTRIES: Final = 200
MAX_PLAN_CONTENT_CHARS: Final = 2_000


@dataclass(frozen=True, slots=True)
class WireContext:
    """What the mapping needs to know about the session and the client."""

    cwd: str  # absolute session cwd
    terminal_meta: bool = False  # client advertised clientCapabilities._meta.terminal_output == true
    max_update_bytes: int = DEFAULT_MAX_UPDATE_BYTES  # serialised size cap of one update
    # The session's other workspace roots (`additionalDirectories`): a title shows a path below one of
    # them as `<root name>/<path inside it>`, as paths below the cwd are shown relative to it.
    extra_roots: tuple[str, ...] = ()
