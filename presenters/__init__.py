"""presenters: the built-in tools, each owning its schema, its body and its cards.

`build_tools()` returns them from one explicit table (no discovery); `workspace_policy()` is the
pre-execute listener that asks before a write or edit outside the session's roots.

| tool         | module     | call card              | result card             | concurrency |
|--------------|------------|------------------------|-------------------------|-------------|
| `read`       | read.py    | generic, kind read     | read                    | parallel    |
| `write`      | write.py   | diff (oldText None)*   | diff (applied hunks)    | exclusive   |
| `edit`       | edit.py    | diff (the snippet)*    | diff (one hunk a site)  | exclusive   |
| `bash`       | shell.py   | terminal               | terminal                | exclusive   |
| `grep`       | grep.py    | generic, kind search   | search, shape matches   | parallel    |
| `glob`       | glob.py    | generic, kind search   | search, shape paths     | parallel    |
| `web_fetch`  | web.py     | generic, kind fetch    | web, kind fetch         | parallel    |
| `todo_write` | plan.py    | generic, kind think    | generic (+ meta.todos)  | exclusive   |
| `ask_user`   | ask_user.py| generic (the question) | generic (the answer)    | exclusive   |

* Before a permission question the host awaits the tool's `preview_call`: the same hunks as the result
card, against the file as it is (`read` only pins the file the question is about; see `fs_access`).

`run_code` (run_code.py: Code Mode, a TypeScript program calling the other tools from a Deno sandbox) is
not in the table: a host registers it as its registry's transport (`register(..., transport=True)`).

Every body takes the session from `ctx.agent` (cwd, roots, `services["fs"]`, see `fs_access`); without an
agent it runs in the process cwd. Invariant: presenters import `registry_core` only (no ACP, no bridge).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence

from registry_core import Ask, ToolDefinition, ToolExecution
from registry_core.policy import PreExecuteListener, PreNext, PreToolDecision

from .ask_user import ask_user_tool
from .edit import edit_tool
from .fs_access import DiskFileAccess, FileAccess, TextDocument
from .glob import glob_tool
from .grep import Backend, grep_tool
from .paths import display_path, is_inside_roots, resolve, session_cwd, session_roots
from .plan import todo_write_tool
from .read import read_tool
from .shell import bash_tool
from .web import web_fetch_tool
from .write import write_tool

__all__ = [
    "DiskFileAccess",
    "FileAccess",
    "TextDocument",
    "ask_user_tool",
    "bash_tool",
    "build_tools",
    "display_path",
    "edit_tool",
    "glob_tool",
    "grep_tool",
    "is_inside_roots",
    "read_tool",
    "resolve",
    "todo_write_tool",
    "web_fetch_tool",
    "workspace_policy",
    "write_tool",
]


def build_tools(
    *,
    cwd: str | None = None,
    grep_backend: Backend = "auto",
    bash_spill_dir: str | None = None,
    allow_private_network: bool = False,
) -> list[ToolDefinition]:
    """The built-in tools, in a fixed order.

    `cwd`: a session cwd for call-card titles and paths, when the host builds tools per session; without
    it, call cards show paths as the model wrote them (the host resolves relative ones). Result cards
    always use the cwd the call ran in. `grep_backend`: "auto" (ripgrep when on PATH), "ripgrep",
    "python". `bash_spill_dir`: where `bash` puts the full output of long runs (default: the temp dir).
    `allow_private_network`: `web_fetch` may connect to loopback, private and link-local addresses.
    """
    return [
        read_tool(cwd=cwd),
        write_tool(cwd=cwd),
        edit_tool(cwd=cwd),
        bash_tool(spill_dir=bash_spill_dir),
        grep_tool(cwd=cwd, backend=grep_backend),
        glob_tool(cwd=cwd),
        web_fetch_tool(allow_private_network=allow_private_network),
        todo_write_tool(),
        ask_user_tool(),
    ]


RootsOf = Callable[[ToolExecution], Sequence[str]]


def _default_roots(execution: ToolExecution) -> Sequence[str]:
    return session_roots(execution.agent)


def workspace_policy(
    roots_of: RootsOf | None = None, *, tools: Collection[str] = ("write", "edit")
) -> PreExecuteListener:
    """A pre-execute listener: a `write`/`edit` whose resolved path (symlinks followed) is outside the
    session's roots returns `Ask` with a reason; anything else defers to the next listener. It never
    denies: the user decides (complaint 7 of PEERS.md: silent denials outside the workspace).

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
