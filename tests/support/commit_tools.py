"""An `--extra-tools` module for the crash tests (`tests.support.commit_tools:tools`).

`write_then_hang` is the built-in `write` (same schema, body and cards) that, once the body returned (the
file written, the change reported to the host), creates the file named by `$ACP_BRIDGE_TEST_MARKER` and
never returns: a test kills the bridge there, between the write and its result, as a crash would.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import Path
from typing import Any

from presenters.write import write_tool
from registry_core import ToolDefinition, ToolRunContext

MARKER_ENV = "ACP_BRIDGE_TEST_MARKER"


def tools() -> list[ToolDefinition]:
    write = write_tool()

    async def execute(args: Any, ctx: ToolRunContext) -> Any:
        value = await write.execute(args, ctx)
        await asyncio.to_thread(Path(os.environ[MARKER_ENV]).write_text, "written\n")
        await asyncio.Event().wait()  # until the bridge is killed
        return value

    return [dataclasses.replace(write, name="write_then_hang", execute=execute)]
