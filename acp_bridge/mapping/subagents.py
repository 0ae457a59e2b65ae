"""The subagents RFD's `subagent_update` (ACP unstable, docs/rfds/subagents.mdx of the ACP repository): a
`task` call's child agent shown as a session of its own, for a client that advertised
`clientCapabilities.subagents` (the caller checks). The child's id (`child_session_id`) is derived from the
parent session's and the task call's, so a replay announces the same one; `_meta.acpBridge.toolCallId`
names the task call whose card the child's calls are nested under.

Must not: decide when to send anything.
"""

from __future__ import annotations

from typing import Final

from .text import truncate_middle
from .wire import SubagentState, SubagentUpdate

# The task summary a client shows beside the child's name: the prompt, bounded.
MAX_TASK_CHARS: Final = 2_000


def child_session_id(session_id: str, call_id: str) -> str:
    """The child session's id: unique within the connection, as session ids and a session's call ids are."""
    return f"{session_id}/task/{call_id}"


def subagent_announced(child_id: str, call_id: str, name: str, task: str) -> SubagentUpdate:
    """The announcing `subagent_update`: no `state` (running) and no `capabilities` (the client may not
    cancel the child by itself: cancelling the parent prompt stops it)."""
    return {
        "sessionUpdate": "subagent_update",
        "subagentSessionId": child_id,
        "name": truncate_middle(name.strip() or "subagent", MAX_TASK_CHARS),
        "task": truncate_middle(task, MAX_TASK_CHARS),
        "_meta": {"acpBridge": {"toolCallId": call_id}},
    }


def subagent_ended(child_id: str, state: SubagentState) -> SubagentUpdate:
    """The terminal `subagent_update` (after every update and request of the child)."""
    return {"sessionUpdate": "subagent_update", "subagentSessionId": child_id, "state": state}
