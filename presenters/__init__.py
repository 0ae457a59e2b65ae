"""presenters: the built-in tools, each owning its schema, its body and its cards.

`build_tools()` returns them from one explicit table (no discovery); `workspace_policy()` is the
pre-execute listener that asks before a write or edit outside the session's roots.

| tool         | module     | call card              | result card             | concurrency |
|--------------|------------|------------------------|-------------------------|-------------|
| `read`       | read.py    | generic, kind read     | read                    | parallel    |
| `write`      | write.py   | diff (oldText None)*   | diff (applied hunks)    | exclusive   |
| `edit`       | edit.py    | diff (the snippet)*    | diff (one hunk a site)  | exclusive   |
| `bash`       | shell.py   | terminal               | terminal**              | exclusive   |
| `bash_output`| background_tools.py | generic, kind read | generic (new output) | parallel    |
| `kill_bash`  | background_tools.py | generic, kind execute | generic           | exclusive   |
| `grep`       | grep.py    | generic, kind search   | search, shape matches   | parallel    |
| `glob`       | glob.py    | generic, kind search   | search, shape paths     | parallel    |
| `web_fetch`  | web.py     | generic, kind fetch    | web, kind fetch         | parallel    |
| `todo_write` | plan.py    | generic, kind think    | generic (+ meta.todos)  | exclusive   |
| `ask_user`   | ask_user.py| generic (the question) | generic (the answer)    | exclusive   |
| `task`       | task.py    | generic, kind think    | generic (the answer)*** | parallel    |

* Before a permission question the host awaits the tool's `preview_call`: the same hunks as the result
card, against the file as it is (`read` only pins the file the question is about; see `landing`).
** With `run_in_background` the result card says the command runs on (`background`): the host keeps the
card live until the command ends (`background.py`, the session's `services["background"]`).
*** A subagent: the host runs its model loop (`services["subagents"]`); each call it makes is a nested
call of the task (`nested_calls.py`, shared with `run_code`), with its own card under the task's.

`run_code` (run_code.py: Code Mode, a TypeScript program calling the other tools from a Deno sandbox) is
not in the table: a host registers it as its registry's transport (`register(..., transport=True)`).

The names below load their module on first use (PEP 562 module `__getattr__`): importing one module of the
package, such as `presenters.paths` (the bridge's mapping does), loads no tool, nor pydantic with them.

Every body takes the session from `ctx.agent` (cwd, roots, `services["fs"]`, see `fs_access`); without an
agent it runs in the process cwd. Invariant: presenters import `registry_core` only (no ACP, no bridge).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .ask_user import ask_user_tool
    from .background_tools import bash_output_tool, kill_bash_tool
    from .builtin import build_tools
    from .edit import edit_tool
    from .fs_access import DiskFileAccess, FileAccess, TextDocument
    from .glob import glob_tool
    from .grep import grep_tool
    from .paths import display_path, is_inside_roots, resolve
    from .plan import todo_write_tool
    from .read import read_tool
    from .shell import bash_tool
    from .task import task_tool
    from .web import web_fetch_tool
    from .workspace import workspace_policy
    from .write import write_tool

__all__ = [
    "DiskFileAccess",
    "FileAccess",
    "TextDocument",
    "ask_user_tool",
    "bash_output_tool",
    "bash_tool",
    "build_tools",
    "display_path",
    "edit_tool",
    "glob_tool",
    "grep_tool",
    "is_inside_roots",
    "kill_bash_tool",
    "read_tool",
    "resolve",
    "task_tool",
    "todo_write_tool",
    "web_fetch_tool",
    "workspace_policy",
    "write_tool",
]

# Each exported name → the module defining it (the same pairs as the `TYPE_CHECKING` imports above).
_HOME: dict[str, str] = {
    "DiskFileAccess": "fs_access",
    "FileAccess": "fs_access",
    "TextDocument": "fs_access",
    "ask_user_tool": "ask_user",
    "bash_output_tool": "background_tools",
    "bash_tool": "shell",
    "build_tools": "builtin",
    "display_path": "paths",
    "edit_tool": "edit",
    "glob_tool": "glob",
    "grep_tool": "grep",
    "is_inside_roots": "paths",
    "kill_bash_tool": "background_tools",
    "read_tool": "read",
    "resolve": "paths",
    "task_tool": "task",
    "todo_write_tool": "plan",
    "web_fetch_tool": "web",
    "workspace_policy": "workspace",
    "write_tool": "write",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        # Also how `from presenters import grep` falls through to importing the submodule.
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
