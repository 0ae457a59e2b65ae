"""Logging one settled Code Mode sub-dispatch: the `tools/code-dispatch-log` waterfall, then the durable
`tool/code-dispatch` event to the observers.

The waterfall reshapes only the durable copy's content: a listener gets the entry and `next` and returns
the content to keep. Everything else in the event comes from the entry, so no listener can change the
sub-call's identity, its arguments, whether it failed, or what the program received (the program already
has its value when this runs). A listener that raises or returns something that is not content is
skipped (logged), keeping the content as the later listeners leave it; an observer that raises is
contained. Only the caller's own asyncio cancellation propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Sequence
from typing import Any

from .content import ContentBlock, ImageBlock, TextBlock
from .events import CodeDispatchEvent
from .execution import CodeDispatchLog
from .policy import CodeDispatchLogListener, CodeDispatchObserver

log = logging.getLogger(__name__)


async def log_code_dispatch(
    listeners: Sequence[CodeDispatchLogListener],
    observers: Sequence[CodeDispatchObserver],
    entry: CodeDispatchLog,
) -> CodeDispatchEvent:
    """Run the waterfall over `entry`, hand the durable event to every observer, and return it."""
    content = await _durable_content(list(listeners), entry) if listeners else entry.content
    event = CodeDispatchEvent.of(entry, content)
    for observer in list(observers):
        try:
            out = observer(entry.execution, event)
            if inspect.isawaitable(out):
                await out
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("code-dispatch observer failed for %s", entry.sub_call_id)
    return event


async def _durable_content(
    listeners: list[CodeDispatchLogListener], entry: CodeDispatchLog
) -> tuple[ContentBlock, ...]:
    # Each listener's outcome is kept, so a listener that awaited `next()` and then failed does not make
    # the later ones run twice.
    settled: dict[int, tuple[ContentBlock, ...]] = {}

    async def step(i: int) -> tuple[ContentBlock, ...]:
        if i in settled:
            return settled[i]
        if i >= len(listeners):
            result = entry.content
        else:
            try:
                out: Any = listeners[i](entry, lambda: step(i + 1))
                if inspect.isawaitable(out):
                    out = await out
                result = _content(out)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("code-dispatch-log listener failed for %s; skipped", entry.sub_call_id)
                result = await step(i + 1)
        settled[i] = result
        return result

    return await step(0)


def _content(value: Any) -> tuple[ContentBlock, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"a code-dispatch-log listener returned {type(value).__name__}, not content blocks")
    out = tuple(value)
    for block in out:
        if not isinstance(block, (TextBlock, ImageBlock)):
            raise TypeError(f"content must be TextBlock/ImageBlock, got {type(block).__name__}")
    return out
