"""The core's settings the command line shows before any of the core is loaded: the permission modes, the
Code Mode choices, the default step limit, the default model endpoint, what a late steer does and how long
a silent model goes untold, for every folder above (`permissions/policy.py` re-exports the modes).

Must not: import anything but the standard library; `cli.build_parser` imports this, and building the
parser (or answering `--help`) must not load the registry (pydantic), the tools (httpx) or a face.
"""

from __future__ import annotations

from typing import Final, Literal, NamedTuple

DEFAULT_MAX_STEPS = 50

# `--wait-notice`: seconds of the model's silence before the user is told, and again every as many.
DEFAULT_WAIT_NOTICE_S: Final = 20.0

# The OpenAI-compatible endpoint of `--model openai:MODEL` without `--base-url` (`models.openai`).
DEFAULT_BASE_URL: Final = "https://api.deepseek.com"

CodeMode = Literal["off", "on", "only"]
CODE_MODES: tuple[CodeMode, ...] = ("off", "on", "only")
DEFAULT_CODE_MODE: CodeMode = "on"

ModeId = Literal["default", "accept_edits", "plan", "full_access"]

# Steering (docs/sessions.md): a prompt sent while the model gives a turn's final answer takes the turn one
# more step ("step", Codex's behaviour), or runs as the next prompt right after it ("turn", Claude Code's).
SteerLate = Literal["step", "turn"]
STEER_LATE: tuple[SteerLate, ...] = ("step", "turn")
DEFAULT_STEER_LATE: SteerLate = "step"


# NamedTuples rather than dataclasses in what `serve` loads before answering `initialize`: one takes a
# quarter of the time to define (a frozen dataclass with slots, about 0.9 ms on a 2-core machine).
class Mode(NamedTuple):
    id: ModeId
    name: str
    description: str


MODES: dict[str, Mode] = {
    m.id: m
    for m in (
        Mode(
            "default",
            "Ask before changes",
            "Reads inside the workspace run; edits, writes, commands and web fetches ask first.",
        ),
        Mode(
            "accept_edits",
            "Accept edits",
            "Edits and writes inside the workspace run without asking; commands and fetches still ask.",
        ),
        Mode(
            "plan",
            "Plan (read-only)",
            "Only reads run; edits, writes, commands and fetches are denied (visibly, on the card).",
        ),
        Mode(
            "full_access",
            "Full access",
            "Everything runs without asking, except what you chose to always reject.",
        ),
    )
}
