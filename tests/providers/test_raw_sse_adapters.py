"""The Anthropic and OpenAI adapters read the SSE body themselves: events cut anywhere by the
network, any of the three line ends, ``data:`` with or without its space, an error after some
text, OpenAI's ``[DONE]``, and the connection let go however the stream ends. The real SDK
makes every request: against the wire-level fake, or against a bare HTTP server that sends
bytes cut where it is told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Sequence
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.providers.anthropic import AnthropicProvider
from app.providers.base import ErrorKind, Finished, Provider, ProviderError, TextDelta, Usage
from app.providers.openai import OpenAIProvider
from tests.fakes import FakeLLMServer
from tests.fakes.bare_stream import ENDINGS, bare_server, cut_oddly, odd_sizes
from tests.providers.conftest import HELLO, MODELS, PROVIDER_CLASSES, collect, events_then_error


async def test_an_error_event_after_some_text_yields_the_text_then_the_providers_error(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider="anthropic",
        reply="one two three four",
        fault="mid_stream_error",
        fault_after=3,
        error_status=429,
        error_message="Too many tokens in flight",
    )
    seen: list[str] = []
    with pytest.raises(ProviderError) as caught:
        async for event in AnthropicProvider(settings).stream(
            model="claude-test", system="", messages=HELLO, max_tokens=50
        ):
            assert isinstance(event, TextDelta)
            seen.append(event.text)
    assert seen == ["one ", "two ", "three "]
    error = caught.value
    assert (error.kind, error.status, error.message) == (
        ErrorKind.RATE_LIMIT,
        None,
        "Too many tokens in flight",
    )
    assert (error.provider, error.retry_after, error.retryable) == ("anthropic", None, True)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, ErrorKind.BAD_REQUEST),  # invalid_request_error
        (401, ErrorKind.AUTH),  # authentication_error
        (404, ErrorKind.NOT_FOUND),
        (500, ErrorKind.SERVER),  # api_error
        (529, ErrorKind.OVERLOADED),
    ],
)
async def test_an_error_event_is_classed_by_its_type_and_has_no_status(
    fake_llm: FakeLLMServer, settings: Settings, status: int, kind: ErrorKind
) -> None:
    fake_llm.script(
        provider="anthropic",
        reply="one two",
        fault="mid_stream_error",
        fault_after=1,
        error_status=status,
        error_message="said by the provider",
    )
    with pytest.raises(ProviderError) as caught:
        await collect(
            AnthropicProvider(settings).stream(
                model="claude-test", system="", messages=HELLO, max_tokens=50
            )
        )
    assert (caught.value.kind, caught.value.status) == (kind, None)
    assert caught.value.message == "said by the provider"


async def _first_text_then(provider: Provider, model: str, stop: str) -> None:
    events = provider.stream(model=model, system="", messages=HELLO, max_tokens=500)
    if stop == "aclose":
        assert isinstance(events, AsyncGenerator)
        assert isinstance(await anext(events), TextDelta)
        await events.aclose()
        return
    started = asyncio.Event()

    async def consume() -> None:
        async for _ in events:
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize("stop", ["aclose", "cancel"])
@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
async def test_a_stream_given_up_mid_way_lets_its_connection_go(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str, stop: str
) -> None:
    fake_llm.script(provider=provider_name, reply="word " * 200, token_delay=0.05)
    provider = PROVIDER_CLASSES[provider_name](settings)
    model = MODELS[provider_name]
    await _first_text_then(provider, model, stop)

    ended = await asyncio.to_thread(fake_llm.wait_for_requests, 1, timeout=5.0, finished=True)
    assert ended, "the server saw the client go"
    (request,) = fake_llm.requests
    assert request.ended is not None and request.ended - request.started < 5.0
    # The client is still good for the next call.
    fake_llm.script(provider=provider_name, reply="again")
    result = await collect(provider.stream(model=model, system="", messages=HELLO, max_tokens=5))
    assert result.text == "again"
    await provider.aclose()


def frame(event: str, data: dict[str, Any], newline: str = "\n", space: str = " ") -> bytes:
    return f"event:{space}{event}{newline}data:{space}{json.dumps(data)}{newline}{newline}".encode()


def stream_frames(text: Sequence[str], newline: str, space: str) -> list[bytes]:
    def f(event: str, data: dict[str, Any]) -> bytes:
        return frame(event, data, newline, space)

    message = {"type": "message", "usage": {"input_tokens": 12, "output_tokens": 1}}
    frames = [
        f("message_start", {"type": "message_start", "message": message}),
        f("content_block_start", {"type": "content_block_start", "index": 0}),
        f("ping", {"type": "ping"}),
    ]
    frames += [
        f(
            "content_block_delta",
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": t}},
        )
        for t in text
    ]
    frames += [
        f("content_block_stop", {"type": "content_block_stop", "index": 0}),
        f(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens"},
                "usage": {"output_tokens": 7},
            },
        ),
        f("message_stop", {"type": "message_stop"}),
    ]
    return frames


async def _stream_from(
    pieces: Sequence[bytes],
    tmp_path: Path,
    *headers: str,
    provider_name: str = "anthropic",
    hold_open: float = 0.0,
) -> list[Any]:
    """What the adapter makes of ``pieces``: its events, and the error it ends with, if any."""
    async with bare_server(pieces, headers, hold_open=hold_open) as url:
        provider: AnthropicProvider | OpenAIProvider
        if provider_name == "openai":
            settings = Settings(home=tmp_path, OPENAI_API_KEY="k", OPENAI_BASE_URL=url)
            provider = OpenAIProvider(settings)
        else:
            settings = Settings(home=tmp_path, ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url)
            provider = AnthropicProvider(settings)
        return await events_then_error(provider, model=MODELS[provider_name], messages=HELLO)


TEXT = ["Tabs ", "or ", "spaces", "? ", "d\u00e9j\u00e0 vu \U0001f600"]


@pytest.mark.parametrize("space", [" ", ""], ids=["space", "no-space"])
@pytest.mark.parametrize("newline", ENDINGS.values(), ids=ENDINGS.keys())
async def test_a_stream_cut_at_odd_places_reads_whole(
    tmp_path: Path, newline: str, space: str
) -> None:
    data = b"".join(stream_frames(TEXT, newline, space))
    events = await _stream_from(cut_oddly(data, odd_sizes()), tmp_path)
    assert events == [
        *(TextDelta(t) for t in TEXT),
        Finished(Usage(input_tokens=12, output_tokens=7), "max_tokens"),
    ]


@pytest.mark.parametrize(
    ("data", "kind", "message"),
    [
        # The provider's own words and type, as the fake's errors.
        (
            '{"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}',
            ErrorKind.OVERLOADED,
            "Busy",
        ),
        # An unknown type is the server's fault; a body without a message is quoted whole.
        (
            '{"type": "error", "error": {"type": "new_error"}}',
            ErrorKind.SERVER,
            "{'type': 'error', 'error': {'type': 'new_error'}}",
        ),
        # Data that is not JSON is the message as it came; no data at all names the status.
        ("the sky fell", ErrorKind.SERVER, "the sky fell"),
        ("", ErrorKind.SERVER, "Error code: 200"),
    ],
)
async def test_an_error_event_is_mapped_as_the_sdks_error_for_it_was(
    tmp_path: Path, data: str, kind: ErrorKind, message: str
) -> None:
    frames = stream_frames(["before "], "\r\n", " ")[:4]
    frames.append(f"event: error\r\ndata: {data}\r\n\r\n".encode())
    events = await _stream_from(cut_oddly(b"".join(frames), odd_sizes()), tmp_path)
    assert events[0] == TextDelta("before ")
    error = events[1]
    assert isinstance(error, ProviderError) and len(events) == 2
    assert (error.kind, error.status, error.message) == (kind, None, message)


async def test_an_error_event_takes_retry_after_from_the_streams_headers(
    tmp_path: Path,
) -> None:
    error_data = {"type": "error", "error": {"type": "rate_limit_error", "message": "Wait"}}
    pieces = [frame("error", error_data)]
    (error,) = await _stream_from(pieces, tmp_path, "retry-after: 4")
    assert isinstance(error, ProviderError)
    assert (error.kind, error.status, error.retry_after) == (ErrorKind.RATE_LIMIT, None, 4.0)


async def test_an_event_of_an_unexpected_shape_is_a_bug_here_named_by_its_type(
    tmp_path: Path,
) -> None:
    pieces = [frame("message_delta", {"type": "message_delta", "delta": {}})]
    (error,) = await _stream_from(pieces, tmp_path)
    assert isinstance(error, ProviderError)
    assert (error.kind, error.retryable) == (ErrorKind.INTERNAL, False)
    assert "AttributeError" in error.message and "'message_delta'" in error.message


async def test_unreadable_json_is_a_retryable_server_error(tmp_path: Path) -> None:
    pieces = [b'event: content_block_delta\r\ndata: {"type": \r\n\r\n']
    (error,) = await _stream_from(pieces, tmp_path)
    assert isinstance(error, ProviderError)
    assert (error.kind, error.retryable) == (ErrorKind.SERVER, True)
    assert error.message.startswith("unreadable response: JSONDecodeError: ")


# --- OpenAI: data-only chunks, ending in [DONE] ----------------------------------------------


def chat_chunk(
    text: str | None = None,
    *,
    finish_reason: str | None = None,
    usage: dict[str, int] | None = None,
    choices: bool = True,
) -> dict[str, Any]:
    delta = {} if text is None else {"role": "assistant", "content": text}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": (
            [{"index": 0, "delta": delta, "finish_reason": finish_reason}] if choices else []
        ),
        "usage": usage,
    }


def data_frames(items: Sequence[object], newline: str = "\n", space: str = " ") -> bytes:
    """Each item as a data-only event (a string as it is, anything else as JSON); a string
    starting with a colon is a comment line instead."""

    def line(item: object) -> str:
        if isinstance(item, str):
            return item if item.startswith(":") else f"data:{space}{item}"
        return f"data:{space}{json.dumps(item)}"

    return b"".join(f"{line(item)}{newline}{newline}".encode() for item in items)


async def _openai_events(items: Sequence[object], tmp_path: Path, **cut: str) -> list[Any]:
    pieces = cut_oddly(data_frames(items, **cut), odd_sizes())
    return await _stream_from(pieces, tmp_path, provider_name="openai")


@pytest.mark.parametrize("space", [" ", ""], ids=["space", "no-space"])
@pytest.mark.parametrize("newline", ENDINGS.values(), ids=ENDINGS.keys())
async def test_openai_chunks_cut_at_odd_places_read_whole_with_usage_and_finish_reason(
    tmp_path: Path, newline: str, space: str
) -> None:
    items = [
        *(chat_chunk(t) for t in TEXT),
        ": a keep-alive comment",
        chat_chunk(finish_reason="length"),
        chat_chunk(usage={"prompt_tokens": 12, "completion_tokens": 7}, choices=False),
        "[DONE]",
    ]
    events = await _openai_events(items, tmp_path, newline=newline, space=space)
    assert events == [
        *(TextDelta(t) for t in TEXT),
        Finished(Usage(input_tokens=12, output_tokens=7), "length"),
    ]


async def test_openai_reads_nothing_after_done_and_estimates_usage_it_was_not_sent(
    tmp_path: Path,
) -> None:
    items = [chat_chunk("Only "), chat_chunk("this."), "[DONE]", chat_chunk(" Not this.")]
    events = await _openai_events(items, tmp_path)
    assert events[:2] == [TextDelta("Only "), TextDelta("this.")]
    (finished,) = events[2:]
    assert isinstance(finished, Finished) and finished.usage.estimated
    assert finished.usage.output_tokens > 0 and finished.stop_reason is None


async def test_openai_finishes_at_done_when_the_server_keeps_the_body_open(
    tmp_path: Path,
) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 7}
    items = [chat_chunk("All "), chat_chunk("said."), chat_chunk(usage=usage, choices=False)]
    pieces = [data_frames([*items, "[DONE]"])]
    # The server would end the body only after 60 s: the turn is over at [DONE] all the same.
    events = await asyncio.wait_for(
        _stream_from(pieces, tmp_path, provider_name="openai", hold_open=60.0), timeout=10.0
    )
    assert events == [
        TextDelta("All "),
        TextDelta("said."),
        Finished(Usage(input_tokens=12, output_tokens=7), None),
    ]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ({"message": "The server had an error", "type": "server_error"}, "The server had an error"),
        ({"type": "server_error"}, "An error occurred during streaming"),
        ("overloaded, try later", "overloaded, try later"),
    ],
)
async def test_an_openai_error_object_after_some_text_ends_the_stream_with_its_message(
    tmp_path: Path, error: object, message: str
) -> None:
    items = [chat_chunk("before "), {"error": error}, chat_chunk("never")]
    events = await _openai_events(items, tmp_path, newline="\r\n")
    assert events[0] == TextDelta("before ")
    (failure,) = events[1:]
    assert isinstance(failure, ProviderError)
    assert (failure.kind, failure.status, failure.message) == (ErrorKind.SERVER, None, message)
    assert (failure.provider, failure.retryable) == ("openai", True)


@pytest.mark.parametrize(
    "chunk",
    [
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": ["a", "list"]}}]},
        {"id": "chatcmpl-1", "choices": None},
        {"id": "chatcmpl-1", "choices": [], "usage": {"total_tokens": 3}},
    ],
    ids=["content-not-text", "choices-null", "usage-without-counts"],
)
async def test_an_openai_chunk_of_an_unexpected_shape_is_a_bug_here(
    tmp_path: Path, chunk: dict[str, Any]
) -> None:
    (error,) = await _openai_events([chunk, "[DONE]"], tmp_path)
    assert isinstance(error, ProviderError)
    assert (error.kind, error.retryable) == (ErrorKind.INTERNAL, False)
    assert "AttributeError" in error.message and "chat chunk" in error.message
