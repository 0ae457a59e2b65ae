"""`ask_user`: the question goes to the host's asker (`agent.services["questions"]`) as the model stated
it; the answer, a decline or the host's failure comes back as the model's text and the card; arguments
are checked before anyone is asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from presenters.ask_user import QUESTIONS_SERVICE, UserAnswer
from registry_core import GenericCallView, GenericResultView, ToolError, ToolExecution

from .conftest import Session, text_of


class Asker:
    """Answers with `reply`, recording what it was asked."""

    def __init__(self, reply: Callable[[], UserAnswer]) -> None:
        self.reply = reply
        self.asked: list[tuple[str, str, tuple[str, ...], bool]] = []

    async def ask(
        self, execution: ToolExecution, question: str, options: Sequence[str], free_text: bool
    ) -> UserAnswer:
        self.asked.append((execution.call_id, question, tuple(options), free_text))
        return self.reply()


def _session(make_session: Callable[..., Session], asker: Any) -> Session:
    return make_session(services={QUESTIONS_SERVICE: asker})


async def test_the_answer_is_what_the_model_reads_and_the_card_shows(
    make_session: Callable[..., Session],
) -> None:
    asker = Asker(lambda: UserAnswer("answered", "Blue"))
    session = _session(make_session, asker)
    args = {"question": "Which  colour?\n", "options": ["Red", " Blue "], "allow_free_text": True}
    result = await session.run("ask_user", args)
    assert not result.is_error
    assert text_of(result) == "The user answered: Blue"
    assert asker.asked == [("call-1", "Which  colour?\n", ("Red", "Blue"), True)]
    card = session.result_card("ask_user", args, result)
    assert isinstance(card, GenericResultView)
    assert card.title == "Ask: Which colour?"
    assert card.content is not None and card.content[0].text == "**Answer:** Blue"
    call = session.call_card("ask_user", args)
    assert isinstance(call, GenericCallView)
    assert "- Red\n- Blue\n- (or an answer of your own)" in call.content[0].text


async def test_a_question_without_options_asks_for_free_text(make_session: Callable[..., Session]) -> None:
    asker = Asker(lambda: UserAnswer("answered", "feature/login"))
    session = _session(make_session, asker)
    result = await session.run("ask_user", {"question": "Branch name?"})
    assert asker.asked[0][2:] == ((), True)
    assert text_of(result) == "The user answered: feature/login"


async def test_a_declined_question_tells_the_model_not_to_ask_again(
    make_session: Callable[..., Session],
) -> None:
    session = _session(make_session, Asker(lambda: UserAnswer("declined", "not now")))
    args = {"question": "Deploy?", "options": ["Yes", "No"]}
    result = await session.run("ask_user", args)
    assert not result.is_error
    assert text_of(result).startswith("The user declined to answer. They said: not now")
    card = session.result_card("ask_user", args, result)
    assert card.content is not None and card.content[0].text == "Declined. not now"


async def test_a_host_that_cannot_ask_fails_the_call_with_its_reason(
    make_session: Callable[..., Session],
) -> None:
    def unavailable() -> UserAnswer:
        raise ToolError("The question could not be asked (the client went away).", code="UNAVAILABLE")

    session = _session(make_session, Asker(unavailable))
    result = await session.run("ask_user", {"question": "Deploy?", "options": ["Yes"]})
    assert result.is_error and "the client went away" in text_of(result)
    bare = make_session()  # no service at all
    result = await bare.run("ask_user", {"question": "Deploy?", "options": ["Yes"]})
    assert result.is_error and "no user to ask" in text_of(result)


@pytest.mark.parametrize(
    "args",
    [
        {"question": ""},
        {"question": "Pick", "options": ["a", "a"]},
        {"question": "Pick", "options": ["a", "  "]},
        {"question": "Pick", "options": [str(n) for n in range(9)]},
    ],
)
async def test_bad_arguments_are_refused_before_anyone_is_asked(
    make_session: Callable[..., Session], args: dict[str, Any]
) -> None:
    asker = Asker(lambda: UserAnswer("answered", "x"))
    result = await _session(make_session, asker).run("ask_user", args)
    assert result.is_error and asker.asked == []
