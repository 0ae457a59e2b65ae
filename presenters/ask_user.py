"""`ask_user`: the model asks the user a question (a few options, optionally free text) and waits for the
answer, with its card.

The tool only states the question; the host asks it, through `agent.services["questions"]` (a
`QuestionAsker`): the bridge shows it as an ACP form elicitation when the client offers one, else as a
permission request whose options are the answers, and over LSP as `window/showMessageRequest`. Without
the service (a host with no user to ask) the call fails, saying so, and the model carries on.

presentation_meta: {"question", "options", "status": "answered" | "declined", "answer" (or null)}.

Must not: guess an answer: a dismissed or declined question is reported as such, and the model decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field, field_validator

from registry_core import (
    ContentText,
    GenericCallView,
    GenericResultView,
    Output,
    ToolDefinition,
    ToolError,
    ToolExecution,
    ToolResult,
    ToolRunContext,
    define_tool,
)

from .cards import failure_card, meta_field

QUESTIONS_SERVICE = "questions"
MAX_OPTIONS = 8
_TITLE_CHARS = 120


@dataclass(frozen=True, slots=True)
class UserAnswer:
    """What came back: the answer's text, or a decline (`text` then holds what the user said, if
    anything)."""

    status: Literal["answered", "declined"]
    text: str | None = None


@runtime_checkable
class QuestionAsker(Protocol):
    """`agent.services["questions"]`: asks the user on the tool's behalf."""

    async def ask(
        self, execution: ToolExecution, question: str, options: Sequence[str], free_text: bool
    ) -> UserAnswer:
        """Show the question and wait for the answer. Raises ToolError when it cannot be asked."""
        ...


class AskUserArgs(BaseModel):
    question: str = Field(min_length=1, max_length=2000, description="The question, in one or two sentences.")
    options: list[str] = Field(
        default_factory=list,
        max_length=MAX_OPTIONS,
        description=f"Up to {MAX_OPTIONS} short answers to pick from (leave empty for a free-text answer).",
    )
    allow_free_text: bool = Field(
        default=False, description="Let the user type an answer of their own besides the options."
    )

    @field_validator("options")
    @classmethod
    def _distinct(cls, options: list[str]) -> list[str]:
        cleaned = [" ".join(o.split()) for o in options]
        if any(not o for o in cleaned):
            raise ValueError("an option must not be empty")
        if len(set(cleaned)) != len(cleaned):
            raise ValueError("options must be distinct")
        return cleaned

    @property
    def free_text(self) -> bool:
        return self.allow_free_text or not self.options


class AskUserValue(BaseModel):
    question: str
    options: list[str]
    status: Literal["answered", "declined"]
    answer: str | None


async def _execute(args: AskUserArgs, ctx: ToolRunContext) -> AskUserValue:
    services = ctx.agent.services if ctx.agent is not None else {}
    asker = services.get(QUESTIONS_SERVICE)
    if not isinstance(asker, QuestionAsker):
        raise ToolError("There is no user to ask here: decide yourself, and say what you assumed.",
                        code="UNAVAILABLE")  # fmt: skip
    answer = await asker.ask(ctx.execution, args.question, tuple(args.options), args.free_text)
    return AskUserValue(
        question=args.question, options=args.options, status=answer.status, answer=answer.text
    )


def _render(_args: AskUserArgs, value: AskUserValue) -> str:
    if value.status == "answered":
        return f"The user answered: {value.answer}"
    said = f" They said: {value.answer}" if value.answer else ""
    return f"The user declined to answer.{said} Do not ask the same question again; decide or stop."


def _meta(_args: AskUserArgs, value: AskUserValue) -> dict[str, Any]:
    return {
        "question": value.question,
        "options": value.options,
        "status": value.status,
        "answer": value.answer,
    }


def _title(question: str) -> str:
    line = " ".join(question.split())
    return "Ask: " + (line if len(line) <= _TITLE_CHARS else line[: _TITLE_CHARS - 1] + "…")


def _call(args: AskUserArgs) -> GenericCallView:
    lines = [f"- {option}" for option in args.options]
    if args.options and args.allow_free_text:
        lines.append("- (or an answer of your own)")
    content = (ContentText(text=args.question + ("\n\n" + "\n".join(lines) if lines else "")),)
    return GenericCallView(title=_title(args.question), kind="other", content=content)


def _result(args: AskUserArgs, result: ToolResult) -> GenericResultView:
    status = meta_field(result.meta, "status", str)
    if result.is_error or status is None:
        return failure_card(_title(args.question), result)
    answer = meta_field(result.meta, "answer", str)
    declined = "Declined." + (f" {answer}" if answer else "")
    text = f"**Answer:** {answer}" if status == "answered" else declined
    return GenericResultView(title=_title(args.question), content=(ContentText(text=text),))


def ask_user_tool() -> ToolDefinition:
    """The `ask_user` tool."""
    return define_tool(
        name="ask_user",
        description=(
            "Ask the user a question and wait for the answer: when a decision is theirs (which of two "
            "approaches, a name, whether to go on), not for things you can find out with the other tools. "
            "Give a few short options when the answers are known, and allow_free_text when they may want "
            "to answer in their own words (no options: a free-text question). The answer comes back as "
            "text; a declined question comes back declined."
        ),
        parameters=AskUserArgs,
        output=Output(type=AskUserValue, render=_render, presentation_meta=_meta),
        execute=_execute,
        concurrency_safe=False,  # one question at a time, in the model's order
        present_call=_call,
        present_result=_result,
    )
