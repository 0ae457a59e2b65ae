"""The built-in tools' table: `build_tools`, the one explicit list a host registers (no discovery).

The table itself (tool, module, cards, concurrency) is in the package's docstring (`presenters/__init__.py`).
"""

from __future__ import annotations

from registry_core import ToolDefinition

from .ask_user import ask_user_tool
from .background_tools import bash_output_tool, kill_bash_tool
from .edit import edit_tool
from .glob import glob_tool
from .grep import Backend, grep_tool
from .plan import todo_write_tool
from .read import read_tool
from .shell import bash_tool
from .task import task_tool
from .web import web_fetch_tool
from .write import write_tool


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
    always use the cwd the call ran in. `grep_backend`, for `grep` and `glob`: "auto" (ripgrep when on
    PATH), "ripgrep", "python". `bash_spill_dir`: where `bash` puts the full output of long runs
    (default: the temp dir).
    `allow_private_network`: `web_fetch` may connect to loopback, private and link-local addresses.
    """
    return [
        read_tool(cwd=cwd),
        write_tool(cwd=cwd),
        edit_tool(cwd=cwd),
        bash_tool(spill_dir=bash_spill_dir),
        bash_output_tool(),
        kill_bash_tool(),
        grep_tool(cwd=cwd, backend=grep_backend),
        glob_tool(cwd=cwd, backend=grep_backend),
        web_fetch_tool(allow_private_network=allow_private_network),
        todo_write_tool(),
        ask_user_tool(),
        task_tool(),
    ]
