"""The system prompt every model step gets: who the agent is and where it works.

Must not: depend on the conversation: it is the same text for every step of a session, so a provider that
caches a repeated prompt prefix can reuse it.
"""

from __future__ import annotations

from collections.abc import Sequence


def system_prompt(cwd: str, roots: Sequence[str]) -> str:
    extra = [r for r in roots if r != cwd]
    where = f"The workspace is {cwd}" + (f" (also: {', '.join(extra)})" if extra else "") + "."
    return (
        "You are a coding agent working inside a code editor. "
        f"{where} Use the tools to read, search, edit and run things; paths may be relative to the "
        "workspace. Prefer small, verifiable steps, and say briefly what you are doing. Some calls need "
        "the user's approval; when a call is rejected, adapt instead of retrying it unchanged."
    )
