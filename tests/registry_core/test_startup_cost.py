"""What `import registry_core` costs a process that starts: no pydantic unless a tool declares a Python type.

Each check runs in a fresh interpreter (a real subprocess), since this process has long imported pydantic.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_the_registry_loads_no_pydantic() -> None:
    assert _run("import sys, registry_core; print('pydantic' in sys.modules)") == "False"


def test_a_spec_dictionary_tool_runs_and_presents_cards_without_pydantic() -> None:
    out = _run(
        """
        import asyncio, sys
        from registry_core import (
            Agent, FileLocation, GenericCallView, Output, ReadResultView, ToolExecutionInput, ToolRegistry,
            define_tool, safe_present_call, safe_present_result,
        )

        async def body(args, ctx):
            return {"echo": args["text"]}

        tool = define_tool(
            name="echo",
            description="echo",
            parameters={"text": {"type": "string", "required": True}},
            output=Output(
                type={"type": "object", "properties": {"echo": {"type": "string"}},
                      "additionalProperties": False},
                render=lambda args, value: value["echo"],
            ),
            execute=body,
            timeout_ms=5000,
            present_call=lambda args: GenericCallView(
                title="Echo", kind="read", locations=[FileLocation(path="/a", line=1)]
            ),
        )
        registry = ToolRegistry()
        registry.register(tool)
        call = ToolExecutionInput("c1", "echo", {"text": "hi"}, agent=Agent("a", "/"))
        result = asyncio.run(registry.execute(call))
        assert result.value == {"echo": "hi"}, result
        assert safe_present_call(lambda: tool.present_call({"text": "hi"})) is not None
        line = {"number": 1, "text": "x"}
        read = {"card": "read", "path": "/a", "offset": 1, "lines": [line], "total_lines": 1}
        assert isinstance(safe_present_result(lambda: read), ReadResultView)
        print("pydantic" in sys.modules)
        """
    )
    assert out == "False"
