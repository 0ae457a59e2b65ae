"""The scripted model: every rule of its format (docs/models.md), script validation, the demo's contract."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acp_bridge.models import (
    DEMO_SCRIPT,
    ModelError,
    ScriptedBackend,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    demo_workspace_files,
    load_backend,
    parse_script,
)
from acp_bridge.models.scripted import split_text

LONG_TEXT = (
    "I will now read the configuration file, then compare it against the defaults, "
    "and finally report every difference I find."
)

SCRIPT: dict[str, Any] = {
    "turns": [
        {
            "steps": [
                {
                    "thought": "The user asked about config. I should look at the file first.",
                    "text": LONG_TEXT,
                    "tool_calls": [
                        {"id": "call_1", "name": "read", "arguments": {"file_path": "config.txt"}},
                        {"id": "call_2", "name": "read", "arguments": '{"file_path": "defaults.txt"}'},
                        {"id": "call_3", "name": "read", "arguments": '{"file_path": "broken.txt"'},
                    ],
                },
                {"text": "DONE"},
            ]
        },
        {"steps": [{"thought": "Only thinking, no text."}]},
    ]
}


def request(turn: int, step: int) -> StepRequest:
    return StepRequest(messages=[], tools=[], turn_index=turn, step_index=step)


async def replay(backend: ScriptedBackend, turn: int, step: int) -> list[StepEvent]:
    return [event async for event in backend.stream_step(request(turn, step))]


def joined(events: list[StepEvent], kind: type[TextDelta] | type[ThoughtDelta]) -> str:
    return "".join(e.text for e in events if isinstance(e, kind))


def final(events: list[StepEvent]) -> StepComplete:
    assert isinstance(events[-1], StepComplete)
    assert sum(isinstance(e, StepComplete) for e in events) == 1
    return events[-1]


@pytest.fixture
def backend() -> ScriptedBackend:
    return ScriptedBackend(parse_script(SCRIPT))


# --- replay --------------------------------------------------------------------------------------


async def test_step_streams_thought_then_text_then_its_calls(backend: ScriptedBackend) -> None:
    events = await replay(backend, 0, 0)

    kinds = [type(e) for e in events]
    first_text = kinds.index(TextDelta)
    assert set(kinds[:first_text]) == {ThoughtDelta}
    assert set(kinds[first_text:-1]) == {TextDelta}
    assert joined(events, ThoughtDelta) == SCRIPT["turns"][0]["steps"][0]["thought"]
    assert joined(events, TextDelta) == LONG_TEXT
    assert kinds.count(TextDelta) >= 4, "a long text must stream as several chunks"
    assert [c.id for c in final(events).tool_calls] == ["call_1", "call_2", "call_3"]


async def test_arguments_object_stays_an_object(backend: ScriptedBackend) -> None:
    calls = final(await replay(backend, 0, 0)).tool_calls
    assert calls[0] == ToolCallRequest("call_1", "read", {"file_path": "config.txt"})


async def test_string_arguments_holding_a_json_object_become_that_object(backend: ScriptedBackend) -> None:
    calls = final(await replay(backend, 0, 0)).tool_calls
    assert calls[1] == ToolCallRequest("call_2", "read", {"file_path": "defaults.txt"})


@pytest.mark.parametrize(
    "raw", ['{"file_path": "broken.txt"', "[1, 2]", '"a string"', "42", "", '{"a": NaN}']
)
async def test_string_arguments_that_are_not_a_json_object_stay_raw(raw: str) -> None:
    script = {"turns": [{"steps": [{"tool_calls": [{"id": "c", "name": "read", "arguments": raw}]}]}]}
    calls = final(await replay(ScriptedBackend(parse_script(script)), 0, 0)).tool_calls
    assert calls == (ToolCallRequest("c", "read", raw),)


async def test_a_step_without_calls_completes_with_none(backend: ScriptedBackend) -> None:
    events = await replay(backend, 0, 1)
    assert joined(events, TextDelta) == "DONE"
    assert final(events) == StepComplete(finish_reason="stop")


async def test_thought_only_step_streams_no_text(backend: ScriptedBackend) -> None:
    events = await replay(backend, 1, 0)
    assert joined(events, ThoughtDelta) == "Only thinking, no text."
    assert not any(isinstance(e, TextDelta) for e in events)
    assert final(events).tool_calls == ()


async def test_step_beyond_the_turn_ends_the_turn_silently(backend: ScriptedBackend) -> None:
    events = await replay(backend, 0, 2)
    assert events == [StepComplete()]


@pytest.mark.parametrize(("turns", "noun"), [(1, "1 turn"), (2, "2 turns"), (0, "0 turns")])
async def test_exhausted_script_says_so_and_flags_it(turns: int, noun: str) -> None:
    script = {"turns": [{"steps": [{"text": f"turn {i}"}]} for i in range(turns)]}
    events = await replay(ScriptedBackend(parse_script(script)), turns, 0)

    assert len(events) == 2
    assert isinstance(events[0], TextDelta)
    assert events[0].text == f"The scripted model has no more turns (script has {noun})."
    assert events[1] == StepComplete(script_exhausted=True)


async def test_replay_is_stateless_so_sessions_never_share_a_cursor(backend: ScriptedBackend) -> None:
    # Two sessions interleaved on one backend: each sees exactly what it would see alone.
    session_a_first = await replay(backend, 0, 0)
    session_b_first = await replay(backend, 0, 0)
    session_a_second = await replay(backend, 1, 0)
    session_b_second = await replay(backend, 1, 0)
    assert session_a_first == session_b_first
    assert session_a_second == session_b_second


async def test_consumers_cannot_change_the_script_through_returned_arguments(
    backend: ScriptedBackend,
) -> None:
    first = final(await replay(backend, 0, 0)).tool_calls[0].arguments
    assert isinstance(first, dict)
    first["file_path"] = "tampered"
    again = final(await replay(backend, 0, 0)).tool_calls[0].arguments
    assert again == {"file_path": "config.txt"}


async def test_negative_indices_are_a_model_error(backend: ScriptedBackend) -> None:
    with pytest.raises(ModelError):
        await replay(backend, -1, 0)


async def test_chunk_delay_paces_the_stream() -> None:
    paced = ScriptedBackend(parse_script(SCRIPT), chunk_delay=0.03)
    started = time.monotonic()
    events = await replay(paced, 0, 0)
    chunks = sum(isinstance(e, TextDelta | ThoughtDelta) for e in events)
    assert time.monotonic() - started >= 0.03 * (chunks - 1) * 0.9


# --- text chunking -------------------------------------------------------------------------------


def test_split_text_makes_word_boundary_chunks_of_16_to_32_chars() -> None:
    chunks = split_text(LONG_TEXT)
    assert "".join(chunks) == LONG_TEXT
    assert all(len(c) <= 32 for c in chunks)
    assert all(len(c) >= 16 for c in chunks[:-1])
    assert all(c.endswith(" ") for c in chunks[:-1]), "chunks break after whitespace, not inside words"


def test_split_text_cuts_a_huge_word() -> None:
    word = "x" * 80
    assert split_text(f"see {word} here") == ["see ", "x" * 32, "x" * 32, "x" * 16 + " ", "here"]


def test_split_text_of_nothing_is_nothing() -> None:
    assert split_text("") == []


@given(st.text())
def test_split_text_chunks_always_concatenate_to_the_text(text: str) -> None:
    chunks = split_text(text)
    assert "".join(chunks) == text
    assert all(0 < len(c) <= 32 for c in chunks)


# --- validation ----------------------------------------------------------------------------------


def call(**fields: Any) -> dict[str, Any]:
    return {"turns": [{"steps": [{"tool_calls": [{"id": "c1", "name": "read", "arguments": {}, **fields}]}]}]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (call(arguments=5), "turns[0].steps[0].tool_calls[0].arguments: must be a JSON object or a string"),
        (
            call(arguments=None),
            "turns[0].steps[0].tool_calls[0].arguments: must be a JSON object or a string",
        ),
        (call(id=None), "turns[0].steps[0].tool_calls[0].id: must be a string"),
        (call(name=""), "turns[0].steps[0].tool_calls[0].name: must not be empty"),
        (call(argument={}), "turns[0].steps[0].tool_calls[0].argument: is not a known field"),
        (
            {"turns": [{"steps": [{"tool_calls": [{"name": "read", "arguments": {}}]}]}]},
            "turns[0].steps[0].tool_calls[0].id: is required",
        ),
        ({"turns": [{"steps": [{"text": 5}]}]}, "turns[0].steps[0].text: must be a string, not a number"),
        ({"turns": [{"steps": [{"tool_call": []}]}]}, "turns[0].steps[0].tool_call: is not a known field"),
        ({"turns": [{"steps": [{"tool_calls": {}}]}]}, "turns[0].steps[0].tool_calls: must be a list"),
        ({"turns": [{"steps": ["text"]}]}, "turns[0].steps[0]: must be a JSON object, not a string"),
        ({"turns": [{}]}, "turns[0].steps: is required"),
        ({"turns": {}}, "turns: must be a list"),
        ({}, "turns: is required"),
        ([], "(top level): must be a JSON object, not a list"),
    ],
)
def test_invalid_script_names_the_json_path(data: Any, expected: str) -> None:
    with pytest.raises(ModelError) as caught:
        parse_script(data, source="my-script.json")
    assert caught.value.kind == "config"
    assert "my-script.json" in caught.value.message
    assert expected in caught.value.message


def test_duplicate_call_ids_anywhere_in_the_script_are_rejected() -> None:
    # A session replays the whole script, and ids are unique within a session.
    data = {
        "turns": [
            {"steps": [{"tool_calls": [{"id": "call_1", "name": "read", "arguments": {}}]}]},
            {"steps": [{"tool_calls": [{"id": "call_1", "name": "read", "arguments": {}}]}]},
        ]
    }
    with pytest.raises(ModelError) as caught:
        parse_script(data)
    assert "turns[1].steps[0].tool_calls[0].id: duplicate id 'call_1'" in caught.value.message
    assert "(first at turns[0].steps[0].tool_calls[0].id)" in caught.value.message


def test_many_problems_are_listed_up_to_five_then_counted() -> None:
    data = {"turns": [{"steps": [{"text": i} for i in range(8)]}]}
    with pytest.raises(ModelError) as caught:
        parse_script(data)
    assert caught.value.message.count("must be a string") == 5
    assert "and 3 more" in caught.value.message
    assert len(caught.value.details["problems"]) == 8


def test_empty_steps_and_empty_script_are_valid() -> None:
    assert parse_script({"turns": []}).turns == ()
    assert parse_script({"turns": [{"steps": []}]}).turns[0].steps == ()


# --- loading through load_backend ----------------------------------------------------------------


async def test_scripted_path_loads_the_file(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(SCRIPT))
    backend = load_backend(f"scripted:{path}")
    assert backend.name == f"scripted:{path}"
    assert isinstance(backend, ScriptedBackend)
    assert await replay(backend, 0, 1) == await replay(ScriptedBackend(parse_script(SCRIPT)), 0, 1)


def test_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        load_backend(f"scripted:{tmp_path / 'nope.json'}")
    assert caught.value.kind == "config"
    assert "not found" in caught.value.message
    assert "nope.json" in caught.value.message


def test_script_path_that_is_a_directory_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        load_backend(f"scripted:{tmp_path}")
    assert caught.value.kind == "config"
    assert "directory" in caught.value.message


def test_script_file_that_is_not_json_reports_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{"turns": [\n  {"steps": [}]\n]}')
    with pytest.raises(ModelError) as caught:
        load_backend(f"scripted:{path}")
    assert caught.value.kind == "config"
    assert "not valid JSON" in caught.value.message
    assert "line 2 column" in caught.value.message


def test_script_file_with_a_bad_field_reports_file_and_path(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(call(arguments=[1])))
    with pytest.raises(ModelError) as caught:
        load_backend(f"scripted:{path}")
    assert str(path) in caught.value.message
    assert "turns[0].steps[0].tool_calls[0].arguments: must be a JSON object or a string, not a list" in (
        caught.value.message
    )


@pytest.mark.parametrize(
    ("spec", "fragment"), [("scripted:", "needs a script path"), ("bogus", "unknown model")]
)
def test_bad_scripted_specs_are_config_errors(spec: str, fragment: str) -> None:
    with pytest.raises(ModelError) as caught:
        load_backend(spec)
    assert caught.value.kind == "config"
    assert fragment in caught.value.message


# --- the built-in demo ---------------------------------------------------------------------------


async def demo_steps() -> list[list[StepEvent]]:
    backend = load_backend("scripted")
    assert isinstance(backend, ScriptedBackend)
    steps = []
    for step in range(len(backend.script.turns[0].steps) + 1):
        steps.append([event async for event in backend.stream_step(request(0, step))])
    return steps


async def test_scripted_without_path_is_the_demo() -> None:
    backend = load_backend("scripted")
    assert backend.name == "scripted:demo"
    assert isinstance(backend, ScriptedBackend)
    assert backend.script == parse_script(DEMO_SCRIPT)


async def test_demo_turn_reads_searches_in_parallel_edits_runs_plans_and_summarises() -> None:
    steps = await demo_steps()
    calls = [[(c.name, c.arguments) for c in final(events).tool_calls] for events in steps]

    assert calls[0] == [("read", {"file_path": "notes.md"})]
    assert calls[1] == [("grep", {"pattern": "TODO"}), ("glob", {"pattern": "**/*.py"})]
    assert calls[2] == [
        (
            "edit",
            {
                "file_path": "app.py",
                "old_string": 'GREETING = "hello"',
                "new_string": 'GREETING = "hello, editor"',
            },
        )
    ]
    [(name, bash)] = calls[3]
    assert name == "bash"
    assert isinstance(bash, dict)
    assert bash["command"] == "python3 app.py"
    [(name, plan)] = calls[4]
    assert name == "todo_write"
    assert isinstance(plan, dict)
    assert len(plan["todos"]) == 3
    assert all(set(item) <= {"content", "status", "priority"} for item in plan["todos"])
    assert calls[5] == [], "the summary step ends the turn"
    assert "hello, editor" in joined(steps[5], TextDelta)
    assert steps[6] == [StepComplete()]


async def test_demo_file_form_replays_like_the_builtin(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    path.write_text(json.dumps(DEMO_SCRIPT))
    from_file = load_backend(f"scripted:{path}")
    builtin = load_backend("scripted")
    assert [e async for e in from_file.stream_step(request(0, 2))] == [
        e async for e in builtin.stream_step(request(0, 2))
    ]


def test_demo_workspace_matches_what_the_demo_script_does(tmp_path: Path) -> None:
    files = demo_workspace_files()
    assert "TODO" in files["notes.md"]
    assert files["app.py"].count('GREETING = "hello"') == 1, "the demo's edit needs exactly one match"
    for relative, content in files.items():
        (tmp_path / relative).write_text(content)

    # What the demo's edit and bash steps do, done by hand: the run must show the new greeting live.
    app = tmp_path / "app.py"
    app.write_text(app.read_text().replace('GREETING = "hello"', 'GREETING = "hello, editor"'))
    started = time.monotonic()
    run = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, capture_output=True, text=True, timeout=10)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) >= 3
    assert all("hello, editor" in line for line in lines)
    assert time.monotonic() - started >= 0.3, "output is spaced out so a live terminal shows it arriving"


def test_demo_workspace_files_is_a_fresh_copy() -> None:
    demo_workspace_files()["app.py"] = "changed"
    assert demo_workspace_files()["app.py"] != "changed"


def test_the_offline_path_does_not_import_httpx() -> None:
    # `initialize` must answer within 400 ms of spawn; httpx costs ~120 ms and only openai:MODEL needs it.
    code = (
        "import sys; from acp_bridge.models import load_backend; load_backend('scripted'); "
        "sys.exit('httpx' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[3]
    assert subprocess.run([sys.executable, "-c", code], cwd=root, timeout=30).returncode == 0
