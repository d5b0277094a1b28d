"""Server-sent events split from a body cut anywhere, as the SDKs' decoders split them: every
field form, each of the three line ends and mixes of them, a CRLF cut between its bytes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.providers.sse import SseParser
from tests.fakes.bare_stream import ENDINGS

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
