"""The live streams' response: each write made directly when there is no send timeout, the
library's own timeout when there is one, and the same bytes either way."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pytest
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError

from app.web.event_stream import LiveEventResponse

SCOPE = {"type": "http", "method": "GET", "path": "/stream", "headers": []}


async def three_events() -> AsyncIterator[ServerSentEvent]:
    for n in range(3):
        yield ServerSentEvent(data=f"event {n}", id=str(n))


async def bodies_sent(response: EventSourceResponse) -> list[bytes]:
    """Runs ``response`` as the server would, for a client that stays until the end."""
    sent: list[bytes] = []
    stay = asyncio.Event()

    async def receive() -> dict[str, Any]:
        await stay.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            sent.append(message.get("body", b""))

    await response(SCOPE, receive, send)
    return [body for body in sent if body]


@pytest.fixture
def timeout_scopes(monkeypatch: pytest.MonkeyPatch) -> list[float | None]:
    """Every send-timeout scope opened, by its delay."""
    opened: list[float | None] = []
    move_on_after: Callable[..., Any] = anyio.move_on_after

    def counted(delay: float | None, *args: Any, **kwargs: Any) -> Any:
        opened.append(delay)
        return move_on_after(delay, *args, **kwargs)

    monkeypatch.setattr(anyio, "move_on_after", counted)
    return opened


async def test_a_live_stream_writes_the_same_bytes_as_the_library_with_no_timeout_scope(
    timeout_scopes: list[float | None],
) -> None:
    library = await bodies_sent(EventSourceResponse(three_events(), ping=0))
    scopes_of_the_library = len(timeout_scopes)
    timeout_scopes.clear()

    live = await bodies_sent(LiveEventResponse(three_events(), ping=0))

    assert live == library == [b"id: %d\r\ndata: event %d\r\n\r\n" % (n, n) for n in range(3)]
    # The library opens a scope for every write; the live stream, none.
    assert scopes_of_the_library >= len(library) == 3
    assert timeout_scopes == []


async def test_a_send_timeout_set_on_a_live_stream_still_ends_a_write_that_hangs() -> None:
    async def receive() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            await asyncio.Event().wait()  # a client that never reads

    response = LiveEventResponse(three_events(), ping=0, send_timeout=0.05)
    with pytest.raises(SendTimeoutError):
        async with asyncio.timeout(5):
            await response(SCOPE, receive, send)
