"""The one poller of the tests: `eventually(predicate, within=..., what=...)`.

For a condition the test cannot await (a child process's state, a file another process writes, a field
another task sets): poll it with a short sleep, fail with an AssertionError naming `what` after `within`
seconds. Whatever can be awaited (an event, a future) should be awaited instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

POLL_S = 0.01


async def eventually(predicate: Callable[[], object], *, within: float = 10.0, what: str) -> None:
    """Return as soon as `predicate()` is truthy; raise AssertionError naming `what` after `within` s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        await asyncio.sleep(POLL_S)
