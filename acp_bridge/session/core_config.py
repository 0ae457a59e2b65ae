"""The core's deployment settings (`CoreConfig`), which the CLI fills and every session of a manager shares.

Must not: import the sessions or their manager (both read it; it is below them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from acp_bridge.common.settings import (
    DEFAULT_CODE_MODE,
    DEFAULT_MAX_STEPS,
    DEFAULT_STEER_LATE,
    DEFAULT_WAIT_NOTICE_S,
    CodeMode,
    SteerLate,
)
from acp_bridge.models.catalog import Price
from acp_bridge.permissions.policy import PolicyConfig
from acp_bridge.session.compaction import DEFAULT_COMPACT_AT

if TYPE_CHECKING:
    from acp_bridge.mcp.config import ServerList


@dataclass(frozen=True, slots=True)
class CoreConfig:
    """Deployment settings of the core (the CLI fills them)."""

    max_steps: int = DEFAULT_MAX_STEPS
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    # The configured model's context window in tokens, when the deployment knows it (the backend's
    # metadata and the built-in table come first, `models.catalog`): `usage_update` needs a truthful
    # `size`, so a model none of them describes reports no usage.
    context_window: int | None = None
    # MCP servers every session gets (`--mcp-config`), after those its client passes; and how long the
    # first prompt waits for each server to start.
    mcp_servers: ServerList | None = None
    mcp_startup_timeout: float = 30.0
    # `--models`: the models offered instead of the backend's list; `--price-in/--price-out`: the
    # configured model's price; `--compact-at`: the share of the window that triggers a compaction.
    model_list: tuple[str, ...] | None = None
    price: Price | None = None
    compact_at: float | None = DEFAULT_COMPACT_AT
    # Whether the model is given images: None = known from its name (`models.images.vision_by_name`).
    vision: bool | None = None
    # Where "always" answers are kept per project (`--remember project`); None: they last a session.
    rules_dir: str | None = None
    # Code Mode: "off" (no `run_code`), "on" (`run_code` beside the other tools), "only" (the model gets
    # `run_code` alone; every other tool is reached through a program, and a direct call is refused).
    code_mode: CodeMode = DEFAULT_CODE_MODE
    # `--steer-late`: what a prompt sent while the model gives a turn's final answer does (session/steering).
    steer_late: SteerLate = DEFAULT_STEER_LATE
    # `--wait-notice`: after how many seconds of the model's silence the user is told, and again every as
    # many seconds (0: never).
    wait_notice: float = DEFAULT_WAIT_NOTICE_S
    # Where checkpoints are kept (`acp_bridge.checkpoints`, `<state>/checkpoints`); None: none are taken.
    checkpoints_dir: str | None = None
