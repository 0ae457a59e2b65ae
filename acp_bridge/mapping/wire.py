"""The mapping's shared vocabulary: the `Update` and `ToolStatus` types, `WireContext` (what the mapping
knows about the session and the client) and the size limits the other modules bound their output with.

Must not: hold logic or build updates; it is imported by every other module of the package and imports
none of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal

ToolStatus = Literal["pending", "in_progress", "completed", "failed"]
Update = dict[str, Any]

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
