"""The card vocabulary: provider-neutral render intents a tool returns for its calls and results.

`present_call(args)` returns a `ToolCallView` (the pending card) and `present_result(args, result)` a
`ToolResultView` (the completed card). Both are `card`-tagged unions that a UI bridge switches on; no UI
ever special-cases a tool name. Completed views replace pending ones. A tool's optional `preview_call`
(`definition.py`; live only, awaited before a permission question) returns the same kind of pending view,
computed against the world as it is; a host validates it with `safe_present_call` too.

`safe_present_call` / `safe_present_result` are the only way the rest of the system calls presenters: a
presenter that raises, or returns something that is not a valid view, yields `None` (the caller falls
back to a generic card). Presenters never raise into the pipeline or the bridge.

Invariant: this module knows no wire protocol (ACP, LSP); `acp_bridge.mapping` is the one translator.
Paths in views are absolute; display paths (relative to a session cwd) are the bridge's job.

Views are `Record`s: frozen, keyword-only, checked when built (a mapping is checked into the typed view by
the `card` tag), and cheap to define at start-up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from itertools import count, repeat
from typing import Annotated, Any, Literal

from .json_values import JsonValue
from .records import AtLeast, Record, RecordError

log = logging.getLogger(__name__)

ToolCallKind = Literal["read", "edit", "delete", "move", "search", "execute", "fetch", "think", "other"]


class _View(Record):
    """A card or a part of one."""


class FileLocation(_View):
    """A file a call reads or modifies (for editor follow-along). `line` is 1-based."""

    path: str
    line: Annotated[int, AtLeast(1)] | None = None


class FileDiff(_View):
    """One file change. `old_text` None means the file is new."""

    path: str
    old_text: str | None
    new_text: str


class ReadFileLine(tuple[int, str]):
    """One 1-based numbered line of a read window: `number`, `text`.

    A (number, text) pair rather than a `Record`: a window may hold thousands of lines and every replayed
    read draws its card again, so `window` builds a whole window in one C loop, without a Python call
    (nor a check) per line, and a renderer unpacks the pairs. Built one by one (by keywords, or from a
    mapping in a view), a line is checked as a record field is, with the same errors."""

    __slots__ = ()

    def __new__(cls, *, number: int, text: str) -> ReadFileLine:
        if type(number) is not int:
            if not isinstance(number, int):
                raise RecordError(f"ReadFileLine.number: expected an integer, got {type(number).__name__}")
            number = int(number)  # a bool counts as 0/1, as in a record
        if number < 1:
            raise RecordError(f"ReadFileLine.number: must be at least 1, got {number!r}")
        if not isinstance(text, str):
            raise RecordError(f"ReadFileLine.text: expected a string, got {type(text).__name__}")
        return _new_line(cls, (number, text))

    @classmethod
    def window(cls, first: int, texts: Sequence[str]) -> tuple[ReadFileLine, ...]:
        """The lines `texts` numbered from `first`, checked once for the whole window."""
        if type(first) is not int or first < 1:
            raise RecordError(f"ReadFileLine.number: must be an integer of at least 1, got {first!r}")
        if not _ONLY_STR.issuperset(map(type, texts)) and not all(isinstance(t, str) for t in texts):
            raise RecordError("ReadFileLine.text: expected strings")
        return tuple(map(_new_line, repeat(cls), zip(count(first), texts)))

    @property
    def number(self) -> int:
        return self[0]

    @property
    def text(self) -> str:
        return self[1]

    def __getnewargs_ex__(self) -> tuple[tuple[()], dict[str, Any]]:  # copy and pickle: keywords only
        return (), {"number": self[0], "text": self[1]}

    def __repr__(self) -> str:
        return f"ReadFileLine(number={self[0]!r}, text={self[1]!r})"


# `tuple.__new__` itself: a line with no check (the callers checked), callable from a C loop.
_new_line: Callable[[type[ReadFileLine], tuple[int, str]], ReadFileLine] = tuple.__new__
_ONLY_STR = frozenset((str,))


class ContentText(_View):
    """A text block a card shows (Markdown)."""

    type: Literal["text"] = "text"
    text: str


class ContentImage(_View):
    """An image a result card shows (base64 `data`)."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str


class ContentResourceLink(_View):
    """A resource a result points at (a URI the client may open), not its contents."""

    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: Annotated[int, AtLeast(0)] | None = None


class ContentResource(_View):
    """A resource whose text a result embeds."""

    type: Literal["resource"] = "resource"
    uri: str
    text: str
    mime_type: str | None = None


# What a result card may show besides text: a tool's own images and resources (an MCP server's result).
ResultContent = ContentText | ContentImage | ContentResourceLink | ContentResource


# --- pending (call-time) views -------------------------------------------------------------------


class GenericCallView(_View):
    card: Literal["generic"] = "generic"
    title: str
    kind: ToolCallKind = "other"
    raw_input: JsonValue = None
    content: tuple[ContentText, ...] = ()
    locations: tuple[FileLocation, ...] = ()


class TerminalCallView(_View):
    """A shell command: `title` is the command itself, `description` renders above it."""

    card: Literal["terminal"] = "terminal"
    title: str
    description: str | None = None
    cwd: str | None = None


class DiffCallView(_View):
    card: Literal["diff"] = "diff"
    title: str
    diffs: tuple[FileDiff, ...]
    locations: tuple[FileLocation, ...] = ()


ToolCallView = GenericCallView | TerminalCallView | DiffCallView


# --- completed (result-time) views ---------------------------------------------------------------


class GenericResultView(_View):
    """The default completed card. `kind` (when given) re-states the card's kind; `raw_output` is the
    result's own structured data, for clients that show a call's raw output."""

    card: Literal["generic"] = "generic"
    title: str | None = None
    content: tuple[ResultContent, ...] | None = None
    kind: ToolCallKind | None = None
    raw_output: JsonValue = None


class TerminalResultView(_View):
    """A command's end: its output, exit status and where its full output went. `background`: the call
    returned but its command runs on (`bash` with `run_in_background`); a host that can keeps the card
    live, streaming, until the command ends, and completes it then with the command's own end; one that
    cannot completes it now, with `output` saying what happened."""

    card: Literal["terminal"] = "terminal"
    title: str | None = None
    output: str | None = None
    exit_code: int | None = None
    signal: str | None = None
    # Where the full output went when `output` had to be capped (for the model and the user).
    full_output_path: str | None = None
    background: bool = False


class DiffResultView(_View):
    """The applied change: hunks with context (edit, overwrite) or a whole-file diff (create)."""

    card: Literal["diff"] = "diff"
    title: str | None = None
    diffs: tuple[FileDiff, ...]
    locations: tuple[FileLocation, ...] = ()


class SearchLine(_View):
    number: Annotated[int, AtLeast(1)]
    text: str


class SearchFileMatches(_View):
    path: str
    lines: tuple[SearchLine, ...] = ()
    count: int | None = None  # matches in this file when lines are not listed (count mode)


class SearchResultView(_View):
    """A discovery search. `shape` "matches" (grep) groups lines by file; "paths" (glob) lists paths.
    `truncated`/`total` say whether the inline result was capped, so a UI never shows part as all.
    `files`: how many files the whole search found matches in, when the matches are lines (`total` counts
    the lines); None when not known (a card from an older log): the files of `matches` are only those
    shown."""

    card: Literal["search"] = "search"
    shape: Literal["matches", "paths"]
    title: str | None = None
    truncated: bool
    total: Annotated[int, AtLeast(0)]
    files: Annotated[int, AtLeast(0)] | None = None
    matches: tuple[SearchFileMatches, ...] = ()
    paths: tuple[str, ...] = ()


class ReadResultView(_View):
    """A file read: `offset` is the 1-based first line the window asked for (kept when `lines` is
    empty); `content` is the plain text a UI without read support falls back to."""

    card: Literal["read"] = "read"
    title: str | None = None
    path: str
    offset: Annotated[int, AtLeast(1)]
    lines: tuple[ReadFileLine, ...]
    total_lines: Annotated[int, AtLeast(0)]
    lang: str | None = None
    content: str | None = None
    truncated: bool = False


class WebSource(_View):
    url: str
    title: str | None = None
    snippet: str | None = None


class WebResultView(_View):
    """A web retrieval. kind "fetch": url/status_code/truncated; kind "search": sources/answer."""

    card: Literal["web"] = "web"
    kind: Literal["search", "fetch"]
    title: str | None = None
    url: str | None = None
    status_code: int | None = None
    content_type: str | None = None
    truncated: bool = False
    sources: tuple[WebSource, ...] = ()
    answer: str | None = None


ToolResultView = (
    GenericResultView
    | TerminalResultView
    | DiffResultView
    | SearchResultView
    | ReadResultView
    | WebResultView
)

# The names the bridge annotates with.
CallViewT = ToolCallView
ResultViewT = ToolResultView

_CALL_CARDS: dict[str, type[_View]] = {
    "generic": GenericCallView,
    "terminal": TerminalCallView,
    "diff": DiffCallView,
}
_RESULT_CARDS: dict[str, type[_View]] = {
    "generic": GenericResultView,
    "terminal": TerminalResultView,
    "diff": DiffResultView,
    "search": SearchResultView,
    "read": ReadResultView,
    "web": WebResultView,
}


def _coerce(cards: Mapping[str, type[_View]], value: Any) -> Any:
    """A presenter may return a plain mapping: the `card` tag picks the view, which checks the rest."""
    if not isinstance(value, Mapping):
        raise RecordError(f"expected a view or a mapping, got {type(value).__name__}")
    view_type = cards.get(value.get("card"))  # type: ignore[arg-type]
    if view_type is None:
        raise RecordError(f"unknown card {value.get('card')!r}; expected one of {', '.join(cards)}")
    return view_type(**value)


def safe_present_call(presenter: Callable[[], Any] | None, tool: str = "?") -> CallViewT | None:
    """Run a call presenter; any exception or invalid view becomes None (logged, never raised)."""
    if presenter is None:
        return None
    try:
        view = presenter()
        if view is None:
            return None
        if isinstance(view, (GenericCallView, TerminalCallView, DiffCallView)):
            return view
        coerced: CallViewT = _coerce(_CALL_CARDS, view)
        return coerced
    except Exception as exc:  # noqa: BLE001 - contained by contract
        log.warning("present_call of tool %r failed; falling back to a generic card: %s", tool, exc)
        return None


def safe_present_result(presenter: Callable[[], Any] | None, tool: str = "?") -> ResultViewT | None:
    """Run a result presenter; any exception or invalid view becomes None (logged, never raised)."""
    if presenter is None:
        return None
    try:
        view = presenter()
        if view is None:
            return None
        if isinstance(
            view,
            (
                GenericResultView,
                TerminalResultView,
                DiffResultView,
                SearchResultView,
                ReadResultView,
                WebResultView,
            ),
        ):
            return view
        coerced: ResultViewT = _coerce(_RESULT_CARDS, view)
        return coerced
    except Exception as exc:  # noqa: BLE001 - contained by contract
        log.warning("present_result of tool %r failed; falling back to a generic card: %s", tool, exc)
        return None


class TerminalOutputProgress(_View):
    """Live progress of a running terminal tool: a chunk of output not reported before."""

    kind: Literal["terminal_output"] = "terminal_output"
    data: str


class StatusProgress(_View):
    """Live progress of a running call that is not a terminal: how far (`progress` of `total`, when the
    tool knows them) and what it is doing now (`message`)."""

    kind: Literal["status"] = "status"
    progress: float | None = None
    total: float | None = None
    message: str | None = None


class NestedCallProgress(_View):
    """A composite tool is about to dispatch a nested call (a Code Mode program's sub-call `call_id`): a
    host may show the nested call's own card, under the composite's, before anything else happens to it
    (a permission question about it included). Its result comes as a durable `tool/code-dispatch`."""

    kind: Literal["nested_call"] = "nested_call"
    call_id: str
    name: str
    arguments: JsonValue


ToolProgress = TerminalOutputProgress | StatusProgress | NestedCallProgress
