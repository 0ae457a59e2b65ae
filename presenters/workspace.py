"""`workspace_policy`: the pre-execute listener that asks before a `write` or `edit` outside the session's
roots (symlinks followed), and defers to the next listener otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence

from registry_core import Ask, ToolExecution
from registry_core.policy import PreExecuteListener, PreNext, PreToolDecision

from .paths import is_inside_roots, resolve, session_cwd, session_roots

RootsOf = Callable[[ToolExecution], Sequence[str]]


def _default_roots(execution: ToolExecution) -> Sequence[str]:
    return session_roots(execution.agent)


def workspace_policy(
    roots_of: RootsOf | None = None, *, tools: Collection[str] = ("write", "edit")
) -> PreExecuteListener:
    """A pre-execute listener: a `write`/`edit` whose resolved path (symlinks followed) is outside the
    session's roots returns `Ask` with a reason; anything else defers to the next listener. It never
    denies: the user decides (a silent denial outside the workspace would leave the model guessing
    and the user unaware of what was refused).

    `roots_of(execution)` gives the roots (default: `agent.roots`, else the agent's cwd, else the process
    cwd); `tools` names the tools whose `file_path` argument is checked.
    """
    get_roots = roots_of or _default_roots
    checked = frozenset(tools)

    async def listener(execution: ToolExecution, next_: PreNext) -> PreToolDecision:
        reason = _outside_reason(execution, checked, get_roots)
        if reason is not None:
            return Ask(reason=reason)
        return await next_()

    return listener


def _outside_reason(execution: ToolExecution, checked: frozenset[str], get_roots: RootsOf) -> str | None:
    """Why the call needs asking (its file is outside every root), or None. A few lstat calls at most."""
    args = execution.arguments
    raw = args.get("file_path") if isinstance(args, Mapping) else None
    if execution.name not in checked or not isinstance(raw, str) or not raw:
        return None
    path = resolve(raw, session_cwd(execution.agent))
    roots = [os.path.abspath(r) for r in get_roots(execution)]
    if is_inside_roots(path, roots):
        return None
    where = ", ".join(roots) or "(none)"
    return f"{execution.name} of {path} is outside the workspace roots ({where}); allow it this once?"
