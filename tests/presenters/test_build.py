"""`build_tools`: the explicit table, model-facing schemas, and the execution modes the issue fixes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from presenters import build_tools
from registry_core import ToolRegistry


def test_the_table_names_schemas_and_execution_modes() -> None:
    registry = ToolRegistry()
    for tool in build_tools():
        registry.register(tool)

    assert registry.names() == [
        "read", "write", "edit", "bash", "bash_output", "kill_bash", "grep", "glob", "web_fetch",
        "todo_write", "ask_user", "task",
    ]  # fmt: skip
    modes = {
        "read": {"file_path": "a"},
        "grep": {"pattern": "x"},
        "glob": {"pattern": "*"},
        "web_fetch": {"url": "https://example.com"},
        "write": {"file_path": "a", "content": ""},
        "edit": {"file_path": "a", "old_string": "a", "new_string": "b"},
        "bash": {"command": "true"},
        "bash_output": {"bash_id": "b1"},
        "kill_bash": {"bash_id": "b1"},
        "task": {"description": "d", "prompt": "p"},
    }
    assert {name: registry.execution_mode(name, args) for name, args in modes.items()} == {
        "read": "parallel",
        "grep": "parallel",
        "glob": "parallel",
        "web_fetch": "parallel",
        "write": "exclusive",
        "edit": "exclusive",
        "bash": "exclusive",
        "bash_output": "parallel",
        "kill_bash": "exclusive",
        "task": "parallel",  # several subagents of one step run at once
    }
    schemas = {s["name"]: s["parameters"] for s in registry.schemas()}
    assert {"-i", "-n", "-A", "-B", "-C", "head_limit", "output_mode", "glob", "path", "pattern"} <= set(
        schemas["grep"]["properties"]
    )
    assert schemas["edit"]["required"] == ["file_path", "old_string", "new_string"]
    assert set(schemas["bash"]["properties"]) == {
        "command", "description", "timeout", "workdir", "run_in_background",
    }  # fmt: skip
    assert schemas["bash_output"]["required"] == schemas["kill_bash"]["required"] == ["bash_id"]
    assert schemas["task"]["required"] == ["description", "prompt"]
    tools = dict(schemas["task"]["properties"]["tools"])
    assert (tools["type"], tools["items"]) == ("array", {"type": "string"})


def test_importing_one_module_of_the_package_loads_no_tool_and_no_pydantic() -> None:
    """The package's names load lazily: the bridge's mapping imports `presenters.paths` before any tool is
    wanted (in a fresh interpreter, since this one has long imported every tool)."""
    probe = (
        "import json, sys\n"
        "import presenters.paths\n"
        "from presenters import display_path, resolve\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('presenters.', 'pydantic')))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == ["presenters.paths"]
