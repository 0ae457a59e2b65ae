"""The OpenAI-compatible backend against a real local HTTP server speaking the chat-completions SSE format."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from acp_bridge.models import (
    AssistantMessage,
    ModelError,
    OpenAIBackend,
    StepComplete,
    StepEvent,
    StepRequest,
    TextDelta,
    ThoughtDelta,
    ToolCallRequest,
    ToolCallStarted,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
    Waiting,
    load_backend,
)
from acp_bridge.models.openai_http import _retry_after_seconds
from tests.support import fake_openai_server
from tests.support.eventually import eventually
from tests.support.fake_openai_server import SSE, Disconnect, FakeOpenAIServer, HTTPError, chat, chat_chunks

API_KEY = "sk-test-secret-0123456789"
READ_TOOL = ToolSpec(
    name="read",
    description="Read a file",
    parameters={"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)

MakeBackend = Callable[..., OpenAIBackend]


@pytest.fixture
async def make_backend(server: FakeOpenAIServer) -> AsyncIterator[MakeBackend]:
    created: list[OpenAIBackend] = []

    def make(**overrides: Any) -> OpenAIBackend:
        # Tiny backoff so retry tests take milliseconds; each test overrides what it exercises.
        options: dict[str, Any] = {
            "api_key": API_KEY,
            "base_url": server.base_url,
            "backoff_base": 0.01,
            "backoff_max": 0.02,
            "retry_after_max": 0.05,
        }
        options.update(overrides)
        backend = OpenAIBackend("fake-model", **options)
        created.append(backend)
        return backend

    yield make
    for backend in created:
        await backend.aclose()


def step_request(**overrides: Any) -> StepRequest:
    fields: dict[str, Any] = {
        "messages": [UserMessage("hi")],
        "tools": [READ_TOOL],
        "turn_index": 0,
        "step_index": 0,
    }
    fields.update(overrides)
    return StepRequest(**fields)


async def collect(backend: OpenAIBackend, request: StepRequest | None = None) -> list[StepEvent]:
    return [event async for event in backend.stream_step(request or step_request())]


async def collect_until_error(backend: OpenAIBackend) -> tuple[list[StepEvent], ModelError]:
    events: list[StepEvent] = []

    async def drain() -> None:
        async for event in backend.stream_step(step_request()):
            events.append(event)

    with pytest.raises(ModelError) as caught:
        await drain()
    return events, caught.value


def text_of(events: list[StepEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def final(events: list[StepEvent]) -> StepComplete:
    assert isinstance(events[-1], StepComplete)
    assert sum(isinstance(e, StepComplete) for e in events) == 1
    return events[-1]


def tool_call_chunk(index: int, *, id: str | None = None, name: str | None = None, args: str = "") -> str:
    fragment: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        fragment["id"] = id
        fragment["type"] = "function"
    if name is not None:
        fragment["function"]["name"] = name
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [fragment]}, "finish_reason": None}]}
    return f"data: {json.dumps(chunk)}\n\n"


FINISH_TOOL_CALLS = {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}
FINISH_STOP = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}


# --- normal answers ------------------------------------------------------------------------------


async def test_text_answer_streams_in_deltas_and_ends_with_usage(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(
        chat(text="Hello there, editor! All good.", usage={"prompt_tokens": 5, "completion_tokens": 3})
    )
    events = await collect(make_backend())

    assert text_of(events) == "Hello there, editor! All good."
    assert sum(isinstance(e, TextDelta) for e in events) > 1, "the text must arrive as a stream"
    done = final(events)
    assert done.tool_calls == ()
    assert done.finish_reason == "stop"
    assert done.usage == Usage(input_tokens=5, output_tokens=3, total_tokens=8)


async def test_request_carries_model_stream_options_tools_and_bearer_key(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(chat(text="ok"))
    await collect(make_backend(), step_request(system_prompt="You are terse."))

    [request] = server.requests
    assert request.method == "POST"
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {API_KEY}"
    body = request.json()
    assert body["model"] == "fake-model"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file",
                "parameters": dict(READ_TOOL.parameters),
            },
        }
    ]


async def test_base_url_without_v1_gets_chat_completions_appended(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(chat(text="ok"))
    await collect(make_backend(base_url=f"http://127.0.0.1:{server.port}/"))
    assert [r.path for r in server.requests] == ["/chat/completions"]


async def test_no_tools_means_no_tools_field(server: FakeOpenAIServer, make_backend: MakeBackend) -> None:
    server.enqueue(chat(text="ok"))
    await collect(make_backend(), step_request(tools=[]))
    assert "tools" not in server.requests[0].json()


async def test_conversation_history_is_converted_to_openai_messages(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(chat(text="ok"))
    history = [
        UserMessage("read two files"),
        AssistantMessage(
            text="",
            reasoning="I should read both.",
            tool_calls=(
                ToolCallRequest("call_a", "read", {"file_path": "a.txt", "limit": 3}),
                ToolCallRequest("call_b", "read", '{"file_path": "b.txt"'),  # raw: what the model emitted
            ),
        ),
        ToolResultMessage("call_a", "read", "1\tA"),
        ToolResultMessage("call_b", "read", "invalid arguments", is_error=True),
        AssistantMessage(text="Both read.", reasoning="not sent back: no tool calls"),
        UserMessage("thanks"),
    ]
    await collect(make_backend(), step_request(messages=history))

    messages = server.requests[0].json()["messages"]
    assert messages == [
        {"role": "user", "content": "read two files"},
        {
            "role": "assistant",
            "content": None,
            "reasoning_content": "I should read both.",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"file_path": "a.txt", "limit": 3}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"file_path": "b.txt"'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "1\tA"},
        {"role": "tool", "tool_call_id": "call_b", "content": "invalid arguments"},
        {"role": "assistant", "content": "Both read."},
        {"role": "user", "content": "thanks"},
    ]


async def test_reasoning_content_streams_as_thought_before_text(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(chat(reasoning="Let me think about this carefully.", text="Answer."))
    events = await collect(make_backend())

    thoughts = [e for e in events if isinstance(e, ThoughtDelta)]
    assert "".join(t.text for t in thoughts) == "Let me think about this carefully."
    assert len(thoughts) > 1
    first_text = next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    assert all(isinstance(e, ThoughtDelta) for e in events[:first_text])
    assert text_of(events) == "Answer."


async def test_sse_comments_and_events_without_blank_lines_are_handled(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    def data(content: str) -> str:
        return "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": content}}]}) + "\n"

    server.enqueue(SSE([": keep-alive\n\n", data("one "), data("two"), "\n", FINISH_STOP]))
    events = await collect(make_backend())
    assert text_of(events) == "one two"


# --- tool calls ----------------------------------------------------------------------------------


async def test_tool_call_arguments_split_across_chunks_are_assembled(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    arguments = {"file_path": "src/deep/module.py", "offset": 10, "limit": 20}
    server.enqueue(
        chat(text="Reading.", tool_calls=[{"id": "call_1", "name": "read", "arguments": arguments}], piece=3)
    )
    events = await collect(make_backend())

    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started == [ToolCallStarted(id="call_1", name="read")]
    done = final(events)
    assert done.tool_calls == (ToolCallRequest("call_1", "read", arguments),)
    assert done.finish_reason == "tool_calls"


async def test_parallel_tool_calls_interleaved_by_index(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(
        SSE(
            [
                tool_call_chunk(0, id="call_a", name="read", args='{"file_'),
                tool_call_chunk(1, id="call_b", name="grep", args='{"pat'),
                tool_call_chunk(0, args='path": "a.'),
                tool_call_chunk(1, args='tern": "TO'),
                tool_call_chunk(0, args='txt"}'),
                tool_call_chunk(1, args='DO"}'),
                FINISH_TOOL_CALLS,
            ]
        )
    )
    events = await collect(make_backend())

    assert [e for e in events if isinstance(e, ToolCallStarted)] == [
        ToolCallStarted("call_a", "read"),
        ToolCallStarted("call_b", "grep"),
    ]
    assert final(events).tool_calls == (
        ToolCallRequest("call_a", "read", {"file_path": "a.txt"}),
        ToolCallRequest("call_b", "grep", {"pattern": "TODO"}),
    )


@pytest.mark.parametrize("raw", ['{"file_path": "a.txt"', "[1, 2]", "not json at all", '{"x": NaN}'])
async def test_arguments_that_are_not_a_json_object_stay_raw(
    server: FakeOpenAIServer, make_backend: MakeBackend, raw: str
) -> None:
    server.enqueue(chat(tool_calls=[{"id": "call_1", "name": "read", "arguments": raw}]))
    events = await collect(make_backend())
    assert final(events).tool_calls == (ToolCallRequest("call_1", "read", raw),)


async def test_empty_arguments_mean_no_arguments(server: FakeOpenAIServer, make_backend: MakeBackend) -> None:
    server.enqueue(SSE([tool_call_chunk(0, id="call_1", name="glob"), FINISH_TOOL_CALLS]))
    events = await collect(make_backend())
    assert final(events).tool_calls == (ToolCallRequest("call_1", "glob", {}),)


async def test_fragments_without_index_or_id_are_still_assembled(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    # Some compatible servers omit `index`; one even omits ids. A new id starts a call, the rest continue it.
    def fragment(**call: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}

    server.enqueue(
        SSE(
            [
                fragment(id="call_a", function={"name": "read", "arguments": '{"file_path":'}),
                fragment(function={"arguments": ' "a.txt"}'}),
                fragment(id="call_b", function={"name": "glob", "arguments": '{"pattern": "*"}'}),
                FINISH_TOOL_CALLS,
            ]
        ),
        SSE([fragment(index=0, function={"name": "glob", "arguments": "{}"}), FINISH_TOOL_CALLS]),
    )
    backend = make_backend()
    assert final(await collect(backend)).tool_calls == (
        ToolCallRequest("call_a", "read", {"file_path": "a.txt"}),
        ToolCallRequest("call_b", "glob", {"pattern": "*"}),
    )
    [anonymous] = final(await collect(backend)).tool_calls
    assert anonymous.name == "glob"
    assert anonymous.id.startswith("call_")


# --- HTTP errors and retries ---------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failure_is_not_retried_and_names_the_env_vars(
    server: FakeOpenAIServer, make_backend: MakeBackend, status: int
) -> None:
    server.enqueue(HTTPError(status, "Authentication Fails, Your api key is invalid"), chat(text="unused"))
    _, error = await collect_until_error(make_backend(api_key_source="DEEPSEEK_API_KEY"))

    assert error.kind == "auth"
    assert error.status == status
    assert "Authentication Fails, Your api key is invalid" in error.message
    for var in ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        assert var in error.message
    assert "came from DEEPSEEK_API_KEY" in error.message
    assert API_KEY not in error.message
    assert API_KEY not in repr(error)
    assert len(server.requests) == 1
    assert server.pending == 1


async def test_rate_limit_then_success_honours_retry_after(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(HTTPError(429, "Too many requests", retry_after="1"), chat(text="after the wait"))
    started = time.monotonic()
    events = await collect(make_backend(retry_after_max=10.0, backoff_base=0.001))
    elapsed = time.monotonic() - started

    assert text_of(events) == "after the wait"
    assert len(server.requests) == 2
    assert elapsed >= 0.95, "Retry-After: 1 must be waited out"


async def test_each_wait_before_a_retry_is_yielded_before_it_is_taken(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(
        HTTPError(429, "Too many requests", retry_after="2"),
        HTTPError(503, "busy"),
        chat(text="after the waits"),
    )
    backend = make_backend(retry_after_max=2.5, backoff_base=0.001, max_retries=3)
    events: list[StepEvent] = []
    requests_when_told: list[int] = []
    async for event in backend.stream_step(step_request()):
        events.append(event)
        if isinstance(event, Waiting):
            requests_when_told.append(len(server.requests))  # told before the wait, not after
    waits = [e for e in events if isinstance(e, Waiting)]
    assert waits == [
        Waiting("rate_limited", 2.0, 1, 3, 429),
        Waiting("server_error", waits[1].seconds, 2, 3, 503),
    ]
    assert requests_when_told == [1, 2]
    assert waits[0].describe() == "rate limited, retrying in 2 s (attempt 1 of 3)"
    assert waits[1].describe() == "the model API failed (HTTP 503), retrying in 1 s (attempt 2 of 3)"
    assert text_of(events) == "after the waits" and isinstance(events[-1], StepComplete)


async def test_a_cancel_during_a_retry_wait_ends_it_at_once(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(HTTPError(429, "Too many requests", retry_after="30"), chat(text="never asked for"))
    backend = make_backend(retry_after_max=30.0)
    told = asyncio.Event()

    async def consume() -> None:
        async for event in backend.stream_step(step_request()):
            if isinstance(event, Waiting):
                told.set()

    task = asyncio.create_task(consume())
    await told.wait()
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < 5  # not the 30 s wait
    assert len(server.requests) == 1 and server.pending == 1


async def test_retry_after_is_capped(server: FakeOpenAIServer, make_backend: MakeBackend) -> None:
    server.enqueue(HTTPError(429, "slow down", retry_after="3600"), chat(text="ok"))
    started = time.monotonic()
    events = await collect(make_backend(retry_after_max=0.1))
    assert text_of(events) == "ok"
    assert time.monotonic() - started < 3


async def test_server_errors_are_retried_max_retries_times_then_fail(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    max_retries = 2
    server.enqueue(
        *[HTTPError(500, "upstream exploded")] * (max_retries + 1), chat(text="one retry too many")
    )
    _, error = await collect_until_error(make_backend(max_retries=max_retries))

    assert error.kind == "server"
    assert error.status == 500
    assert "upstream exploded" in error.message
    assert f"{max_retries + 1} attempts" in error.message
    assert len(server.requests) == max_retries + 1
    assert server.pending == 1


async def test_rate_limit_that_never_clears_is_a_rate_limit_error(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(*[HTTPError(429, "quota")] * 2)
    _, error = await collect_until_error(make_backend(max_retries=1))
    assert error.kind == "rate_limit"
    assert len(server.requests) == 2


async def test_backoff_grows_between_retries(server: FakeOpenAIServer, make_backend: MakeBackend) -> None:
    # Delays of at least base/2, base, 2*base: about 0.35 s in total with base 0.1, none without backoff.
    server.enqueue(*[HTTPError(503, "busy")] * 3, chat(text="ok"))
    started = time.monotonic()
    await collect(make_backend(backoff_base=0.1, backoff_max=1.0))
    assert time.monotonic() - started >= 0.35
    assert len(server.requests) == 4


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "other"), (404, "config"), (422, "other")],
)
async def test_other_client_errors_fail_at_once_with_the_provider_message(
    server: FakeOpenAIServer, make_backend: MakeBackend, status: int, kind: str
) -> None:
    server.enqueue(HTTPError(status, "Model Not Exist"))
    _, error = await collect_until_error(make_backend())
    assert (error.kind, error.status) == (kind, status)
    assert "Model Not Exist" in error.message
    assert len(server.requests) == 1


async def test_non_json_error_body_is_quoted(server: FakeOpenAIServer, make_backend: MakeBackend) -> None:
    server.enqueue(HTTPError(502, body="<html>Bad Gateway from the proxy</html>"))
    _, error = await collect_until_error(make_backend(max_retries=0))
    assert error.kind == "server"
    assert "Bad Gateway from the proxy" in error.message


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after-ms": "250"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past: no wait
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_forms(headers: dict[str, str], seconds: float | None) -> None:
    assert _retry_after_seconds(httpx.Headers(headers)) == seconds


def test_retry_after_http_date_in_the_future() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    seconds = _retry_after_seconds(httpx.Headers({"retry-after": when}))
    assert seconds is not None
    assert 28 <= seconds <= 30


# --- broken connections and streams --------------------------------------------------------------


async def test_connection_dropped_mid_stream_is_a_connection_error_without_retry(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    chunks = chat_chunks(text="This answer will be cut off half way through.")
    server.enqueue(SSE(chunks, drop_after=4), chat(text="must not be requested"))
    events, error = await collect_until_error(make_backend())

    assert text_of(events), "part of the answer arrived before the drop"
    assert not any(isinstance(e, StepComplete) for e in events)
    assert error.kind == "connection"
    assert "interrupted" in error.message
    assert len(server.requests) == 1


async def test_stream_closed_cleanly_before_done_is_a_connection_error(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    unfinished = [
        c
        for c in chat_chunks(text="no finish reason follows")
        if not c["choices"] or c["choices"][0]["delta"]
    ]
    server.enqueue(SSE(unfinished, done=False))
    events, error = await collect_until_error(make_backend())
    assert text_of(events) == "no finish reason follows"
    assert error.kind == "connection"


@pytest.mark.parametrize("failure", [Disconnect(), SSE(chat_chunks(text="x"), drop_after=0)])
async def test_connection_failure_before_any_event_is_retried(
    server: FakeOpenAIServer, make_backend: MakeBackend, failure: SSE | Disconnect
) -> None:
    server.enqueue(failure, chat(text="second time lucky"))
    events = await collect(make_backend())
    assert text_of(events) == "second time lucky"
    assert len(server.requests) == 2


async def test_unreachable_server_fails_after_the_retries(make_backend: MakeBackend) -> None:
    with FakeOpenAIServer() as gone:
        port = gone.port
    backend = make_backend(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1)
    _, error = await collect_until_error(backend)
    assert error.kind == "connection"
    assert "after 2 attempts" in error.message


async def test_error_object_inside_the_stream_is_reported(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(SSE([{"error": {"message": "context length exceeded", "type": "invalid_request_error"}}]))
    _, error = await collect_until_error(make_backend())
    assert error.kind == "server"
    assert "context length exceeded" in error.message


async def test_invalid_json_event_is_a_protocol_error(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(SSE(["data: {not json\n\n"]))
    _, error = await collect_until_error(make_backend())
    assert error.kind == "protocol"
    assert "not JSON" in error.message


async def test_non_streaming_answer_is_a_protocol_error(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(SSE([{"choices": []}], content_type="application/json"))
    _, error = await collect_until_error(make_backend())
    assert error.kind == "protocol"
    assert "text/event-stream" in error.message


async def test_cancelling_the_consumer_closes_the_stream_promptly(
    server: FakeOpenAIServer, make_backend: MakeBackend
) -> None:
    server.enqueue(SSE(chat_chunks(text="streaming forever and ever"), stall_after=3))
    backend = make_backend()
    first_text = asyncio.Event()

    async def consume() -> None:
        async for event in backend.stream_step(step_request()):
            if isinstance(event, TextDelta):
                first_text.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_text.wait(), 5)
    started = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 1)
    assert time.monotonic() - started < 0.5
    # The server sees the client close its end: the HTTP stream really was closed, not just abandoned.
    assert await asyncio.to_thread(server.wait_for_stall_closed, 1, 2.0)


# --- configuration -------------------------------------------------------------------------------


@pytest.fixture
def no_key_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in ("ACP_BRIDGE_API_KEY", "DEEPSEEK_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


async def test_load_backend_takes_the_key_from_env_vars_in_order(
    server: FakeOpenAIServer, no_key_env: pytest.MonkeyPatch
) -> None:
    no_key_env.setenv("OPENAI_API_KEY", "sk-openai")
    no_key_env.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    no_key_env.setenv("ACP_BRIDGE_API_KEY", "")  # empty counts as unset
    server.enqueue(chat(text="ok"), chat(text="ok"))

    backend = load_backend("openai:deepseek-chat", base_url=server.base_url)
    try:
        assert backend.name == "openai:deepseek-chat"
        await collect_any(backend)
    finally:
        await backend.aclose()
    no_key_env.setenv("ACP_BRIDGE_API_KEY", "sk-bridge")
    backend = load_backend("openai:deepseek-chat", base_url=server.base_url)
    try:
        await collect_any(backend)
    finally:
        await backend.aclose()

    assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-deepseek", "Bearer sk-bridge"]


async def collect_any(backend: Any) -> list[StepEvent]:
    return [event async for event in backend.stream_step(step_request())]


async def test_load_backend_prefers_an_explicit_key(
    server: FakeOpenAIServer, no_key_env: pytest.MonkeyPatch
) -> None:
    no_key_env.setenv("ACP_BRIDGE_API_KEY", "sk-env")
    server.enqueue(chat(text="ok"))
    backend = load_backend("openai:m", base_url=server.base_url, api_key="sk-flag")
    try:
        await collect_any(backend)
    finally:
        await backend.aclose()
    assert server.requests[0].headers["authorization"] == "Bearer sk-flag"


async def test_load_backend_defaults_to_deepseek(no_key_env: pytest.MonkeyPatch) -> None:
    no_key_env.setenv("DEEPSEEK_API_KEY", "sk-x")
    backend = load_backend("openai:deepseek-chat")
    assert isinstance(backend, OpenAIBackend)
    assert backend.url == "https://api.deepseek.com/chat/completions"
    assert "sk-x" not in repr(backend)
    await backend.aclose()


def test_missing_api_key_names_every_env_var_in_order(no_key_env: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelError) as caught:
        load_backend("openai:deepseek-chat")
    assert caught.value.kind == "config"
    assert "ACP_BRIDGE_API_KEY or DEEPSEEK_API_KEY or OPENAI_API_KEY" in caught.value.message


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("openai", "needs a model name"),
        ("openai:  ", "needs a model name"),
        ("anthropic:claude", "unknown model"),
    ],
)
def test_bad_openai_specs_are_config_errors(no_key_env: pytest.MonkeyPatch, spec: str, fragment: str) -> None:
    no_key_env.setenv("ACP_BRIDGE_API_KEY", "sk-x")
    with pytest.raises(ModelError) as caught:
        load_backend(spec)
    assert caught.value.kind == "config"
    assert fragment in caught.value.message


@pytest.mark.parametrize("base_url", ["api.deepseek.com", "ftp://example.com", "http://", "http://[::1"])
def test_base_url_must_be_http(no_key_env: pytest.MonkeyPatch, base_url: str) -> None:
    with pytest.raises(ModelError) as caught:
        load_backend("openai:m", base_url=base_url, api_key="sk-x")
    assert caught.value.kind == "config"
    assert "http://" in caught.value.message


# --- the fake server as a process (what the end-to-end bridge tests use) --------------------------


async def test_fake_server_runs_as_a_process_with_a_script_and_a_request_log(tmp_path: Path) -> None:
    script = tmp_path / "responses.json"
    script.write_text(
        json.dumps([{"status": 500, "message": "first fails"}, {"chat": {"text": "from a process"}}])
    )
    port_file, log_file = tmp_path / "port", tmp_path / "requests.jsonl"
    server_py = Path(fake_openai_server.__file__)
    process = await asyncio.create_subprocess_exec(
        *[sys.executable, str(server_py), "--script", str(script), "--port-file", str(port_file)],
        *["--requests-log", str(log_file)],
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(
            lambda: port_file.exists() or process.returncode is not None, within=10, what="the server's port"
        )
        assert process.returncode is None, "the fake server exited before listening"
        port = int(port_file.read_text())
        backend = OpenAIBackend(
            "m", api_key="sk-proc", base_url=f"http://127.0.0.1:{port}/v1", backoff_base=0.01
        )
        try:
            events = await collect(backend)
        finally:
            await backend.aclose()
        assert text_of(events) == "from a process"
    finally:
        if process.returncode is None:
            process.terminate()
        assert await asyncio.wait_for(process.wait(), 5) == 0
    logged = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert len(logged) == 2
    assert logged[1]["headers"]["authorization"] == "Bearer sk-proc"
    assert logged[1]["body"]["messages"] == [{"role": "user", "content": "hi"}]
