"""Error codes and exception types of the registry.

Every failure of a tool call becomes *data* (a `ToolFailure` result carrying a `ToolError` with one of
these codes); exceptions below exist so tool authors and the registry can raise them at the seam where the
fault is found. Codes are stable strings: the bridge, durable events and tests match on them.

Invariant: nothing here knows about ACP or JSON-RPC.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

INVALID_ARGS: Final = "INVALID_ARGS"
INVALID_TOOL_OUTPUT: Final = "INVALID_TOOL_OUTPUT"
UNKNOWN_TOOL: Final = "UNKNOWN_TOOL"
DENIED: Final = "DENIED"
CANCELLED: Final = "CANCELLED"
TIMEOUT: Final = "TIMEOUT"
TOOL_FAILED: Final = "TOOL_FAILED"
BLOCKED: Final = "BLOCKED"
INTERNAL: Final = "INTERNAL"


@dataclass(frozen=True, slots=True)
class Violation:
    """One reason a value does not match a schema. `path` is JSON-pointer style ("" = the root)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '/'}: {self.message}"


class ToolError(Exception):
    """Base of the errors a tool body (or the registry) raises to fail a call with a code.

    A body may raise `ToolError("file not found: x", code="NOT_FOUND")`; the registry turns it into an
    error result whose message is exactly `message` (no traceback, no class name). `meta` (lossless JSON)
    becomes the failed result's presentation meta, so a failure can still carry what its card shows
    (e.g. a timed-out command's partial output); meta that is not lossless JSON is dropped.
    """

    code: str = TOOL_FAILED
    meta: Any = None

    def __init__(self, message: str, *, code: str | None = None, meta: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.meta = meta


class ToolArgsError(ToolError):
    """The model's arguments do not match the tool's parameters. Lists every violation."""

    code = INVALID_ARGS

    def __init__(self, tool: str, violations: Sequence[Violation]) -> None:
        self.tool = tool
        self.violations = tuple(violations)
        lines = "\n".join(f"- {v}" for v in self.violations)
        super().__init__(f"Invalid arguments for tool {tool!r}:\n{lines}")


class ToolOutputError(ToolError):
    """A tool body (or a post-execute replacement) produced a value its output schema rejects."""

    code = INVALID_TOOL_OUTPUT

    def __init__(self, tool: str, violations: Sequence[Violation]) -> None:
        self.tool = tool
        self.violations = tuple(violations)
        lines = "\n".join(f"- {v}" for v in self.violations)
        super().__init__(f"Tool {tool!r} produced an invalid output value:\n{lines}")


class ToolNotFoundError(ToolError):
    code = UNKNOWN_TOOL

    def __init__(self, name: str, available: Sequence[str] = ()) -> None:
        self.name = name
        hint = f" Available tools: {', '.join(sorted(available))}." if available else ""
        super().__init__(f"Unknown tool {name!r}.{hint}")


class JsonSchemaError(ValueError):
    """A raw schema uses keywords outside the enforced subset, or is malformed. Lists every problem."""

    def __init__(self, problems: Sequence[Violation]) -> None:
        self.problems = tuple(problems)
        super().__init__("Unsupported or malformed JSON Schema:\n" + "\n".join(f"- {p}" for p in problems))


class RegistrationError(ValueError):
    """A tool definition fails a registration-time check (name, output schema, timeout...)."""
