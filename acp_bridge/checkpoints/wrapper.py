"""The registry's execute wrapper that takes a session's checkpoints around a call (`service.around`).

Registered outermost, so a call that times out or is cancelled is still followed by its snapshot (what it
changed before it stopped shows too). Calls that cannot change files (the read, fetch and safe classes of
`permissions.tool_classes`, but `run_code`, whose program's calls can) and a program's own nested calls
(its snapshot covers them) pass straight through, as do calls of an agent without checkpoints.
"""

from __future__ import annotations

from acp_bridge.checkpoints.service import CHECKPOINTS_SERVICE, SessionCheckpoints
from acp_bridge.permissions.tool_classes import DEFAULT_CLASSES, NO_DISK_EFFECTS
from registry_core import ToolExecution, ToolExecutionResult
from registry_core.policy import ExecuteNext

_THROUGH = frozenset(name for name, cls in DEFAULT_CLASSES.items() if cls in NO_DISK_EFFECTS) - {"run_code"}


async def checkpoint_wrapper(execution: ToolExecution, proceed: ExecuteNext) -> ToolExecutionResult:
    agent = execution.agent
    service = agent.services.get(CHECKPOINTS_SERVICE) if agent is not None else None
    if (
        not isinstance(service, SessionCheckpoints)
        or execution.parent is not None
        or execution.name in _THROUGH
    ):
        return await proceed(execution)
    return await service.around(execution, proceed)
