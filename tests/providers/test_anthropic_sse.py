"""The Anthropic adapter reads the SSE body itself: events cut anywhere by the network, any of
the three line ends, ``data:`` with or without its space, an error event after some text, and
the connection let go however the stream ends. The real SDK makes every request: against the
wire-level fake, or against a bare HTTP server here that sends bytes cut where it is told."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.providers.anthropic import AnthropicProvider, SseParser
from app.providers.base import ErrorKind, Finished, ProviderError, TextDelta, Usage
from tests.fakes import FakeLLMServer
from tests.providers.conftest import HELLO, collect

# Every field form the parser meets: a comment, id and retry (ignored), an event without a
# name (dispatched as None), "data:" with no space and with two (one stays), data on two
# lines, an empty "event:" (None), non-ASCII text cut anywhere by the splits below.
LINES = [
    ": a comment",
    "event: message_start",
    'data: {"type": "message_start"}',
    "",
    "",
    "id: 7",
    "retry: 100",
    "",
    "event:ping",
    'data:{"type": "ping"}',
    "",
    "event: content_block_delta",
    'data:  {"text": "d\u00e9j\u00e0 \u20ac \U0001f600"}',
    "",
    "data: first",
    "data:second",
    "",
    "event:",
    "data: nameless",
    "",
    "event: message_stop",
    "",
    "event: never_ended",
    "data: dropped at the end of the body",
]
EXPECTED = [
    ("message_start", '{"type": "message_start"}'),
    ("ping", '{"type": "ping"}'),
    ("content_block_delta", ' {"text": "d\u00e9j\u00e0 \u20ac \U0001f600"}'),
    (None, "first\nsecond"),
    (None, "nameless"),
    ("message_stop", ""),
]
ENDINGS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


def body(newline: str) -> bytes:
    return newline.join(LINES).encode()


def parse(pieces: Sequence[bytes]) -> list[tuple[str | None, str]]:
    parser = SseParser()
    return [event for piece in pieces for event in parser.feed(piece)]


@pytest.mark.parametrize("newline", ENDINGS.values(), ids=ENDINGS.keys())
def test_events_are_the_same_however_the_body_is_cut_in_two(newline: str) -> None:
    data = body(newline)
    assert parse([data]) == EXPECTED
    for cut in range(len(data) + 1):
        assert parse([data[:cut], data[cut:]]) == EXPECTED, cut


@pytest.mark.parametrize("newline", ENDINGS.values(), ids=ENDINGS.keys())
def test_events_are_the_same_read_a_byte_at_a_time_or_in_three_pieces(newline: str) -> None:
    data = body(newline)
    assert parse([data[i : i + 1] for i in range(len(data))]) == EXPECTED
    for first in range(0, len(data), 3):
        for second in range(first, len(data), 7):
            pieces = [data[:first], data[first:second], data[second:]]
            assert parse(pieces) == EXPECTED, (first, second)


def test_line_ends_may_be_mixed_and_a_crlf_cut_between_its_bytes_ends_one_line() -> None:
    assert parse([b"event: a\r", b"\ndata: 1\r", b"\n\r", b"\n"]) == [("a", "1")]
    assert parse([b"event: a\r\ndata: 1\n\r", b"\r\n"]) == [("a", "1")]
    # CR then CR is two line ends: the second ends the event.
    assert parse([b"data: 1\r", b"\r", b"data: 2\n\n"]) == [(None, "1"), (None, "2")]


def test_a_line_that_is_not_utf_8_is_unreadable() -> None:
    with pytest.raises(UnicodeDecodeError):
        parse([b'data: {"text": "\xff"}\n\n'])


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


async def _first_text_then(provider: AnthropicProvider, stop: str) -> None:
    events = provider.stream(model="claude-test", system="", messages=HELLO, max_tokens=500)
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
async def test_a_stream_given_up_mid_way_lets_its_connection_go(
    fake_llm: FakeLLMServer, settings: Settings, stop: str
) -> None:
    fake_llm.script(provider="anthropic", reply="word " * 200, token_delay=0.05)
    provider = AnthropicProvider(settings)
    await _first_text_then(provider, stop)

    ended = await asyncio.to_thread(fake_llm.wait_for_requests, 1, timeout=5.0, finished=True)
    assert ended, "the server saw the client go"
    (request,) = fake_llm.requests
    assert request.ended is not None and request.ended - request.started < 5.0
    # The client is still good for the next call.
    fake_llm.script(provider="anthropic", reply="again")
    result = await collect(
        provider.stream(model="claude-test", system="", messages=HELLO, max_tokens=5)
    )
    assert result.text == "again"
    await provider.aclose()


# --- a bare server, for bytes the fake does not send -----------------------------------------


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


def cut_oddly(data: bytes, sizes: Iterator[int]) -> list[bytes]:
    pieces, at = [], 0
    while at < len(data):
        size = next(sizes)
        pieces.append(data[at : at + size])
        at += size
    return pieces


def odd_sizes() -> Iterator[int]:
    while True:
        yield from (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 7)


@asynccontextmanager
async def bare_server(pieces: Sequence[bytes], headers: Sequence[str] = ()) -> AsyncIterator[str]:
    """Answers every request with a 200 event stream of ``pieces``, each its own HTTP chunk
    written and drained apart; yields the base URL."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            start = [
                "HTTP/1.1 200 OK",
                "content-type: text/event-stream",
                "transfer-encoding: chunked",
                "connection: close",
                *headers,
            ]
            writer.write(("\r\n".join(start) + "\r\n\r\n").encode())
            for piece in pieces:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
                await asyncio.sleep(0.001)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.close()
        await server.wait_closed()


async def _stream_from(pieces: Sequence[bytes], tmp_path: Path, *headers: str) -> list[Any]:
    async with bare_server(pieces, headers) as url:
        settings = Settings(home=tmp_path, ANTHROPIC_API_KEY="k", ANTHROPIC_BASE_URL=url)
        provider = AnthropicProvider(settings)
        events: list[Any] = []
        try:
            async for event in provider.stream(
                model="claude-test", system="", messages=HELLO, max_tokens=9
            ):
                events.append(event)
        except ProviderError as error:
            events.append(error)
        finally:
            await provider.aclose()
        return events


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
