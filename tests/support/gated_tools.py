"""An `--extra-tools` module whose import waits until the test opens its gate, so a test can look at the
bridge while its core is still loading (test_bridge_cold_start.py).

The gate is the FIFO named by `ACP_BRIDGE_TEST_GATE`: the import waits (at most `GATE_TIMEOUT_S`) until
something is written to it or its writer closes it. Without the variable it does not wait.
"""

from __future__ import annotations

import os
import select

from registry_core import ToolDefinition

GATE_ENV = "ACP_BRIDGE_TEST_GATE"
GATE_TIMEOUT_S = 30.0


def _wait_for_the_gate() -> None:
    path = os.environ.get(GATE_ENV)
    if not path:
        return
    # Non-blocking open: no writer yet is no error; the read end becomes readable when one writes or
    # closes (a FIFO nobody has opened for writing yet is not at its end).
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        readable, _, _ = select.select([fd], [], [], GATE_TIMEOUT_S)
        if not readable:
            raise TimeoutError(f"gated_tools: the gate {path} was not opened within {GATE_TIMEOUT_S:g} s")
    finally:
        os.close(fd)


_wait_for_the_gate()


def tools() -> list[ToolDefinition]:
    return []
