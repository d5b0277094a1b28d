"""Provider calls in the worker process (``app.providers.worker``): the real SDK adapters in
a real child process, talking to the wire-level fake server."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta
from app.providers.registry import build_provider
from app.providers.worker import (
    ProviderWorker,
    RemoteProvider,
    _Outbox,
    _read_frame,
    in_worker_process,
)
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer

HELLO = [Message("user", "Say hello")]


@pytest.fixture
async def worker(settings: Settings) -> AsyncIterator[ProviderWorker]:
    worker = ProviderWorker(settings)
    yield worker
    await worker.aclose()


async def collect(stream: AsyncIterator[TextDelta | Finished]) -> tuple[str, Finished]:
    text, finished = [], None
    async for event in stream:
        if isinstance(event, TextDelta):
            text.append(event.text)
        else:
            finished = event
    assert finished is not None
    return "".join(text), finished


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
async def test_a_call_in_the_worker_streams_what_the_adapter_streams_here(
    provider: str, worker: ProviderWorker, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    reply = "Hello from the other process, token by token."
    fake_llm.script(provider=provider, reply=reply, times=2, input_tokens=7, output_tokens=9)
    call = {"model": "m-1", "system": "Be brief.", "messages": HELLO, "max_tokens": 64}

    here = await collect(build_provider(provider, settings).stream(**call))
    there = await collect(worker.stream(provider, **call))

    assert there == here
    assert there[0] == reply and there[1].usage.output_tokens == 9
    assert worker.pid is not None and worker.pid != os.getpid()
    bodies = [r.body for r in fake_llm.requests_for(provider)]
    assert len(bodies) == 2 and bodies[0] == bodies[1], "the same request went on the wire"


async def test_a_providers_error_crosses_with_its_kind_status_and_own_message(
    worker: ProviderWorker, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(
        provider="anthropic",
        fault="http_429",
        retry_after=3,
        error_message="Slow down: 40 requests per minute",
    )
    with pytest.raises(ProviderError) as caught:
        await collect(
            worker.stream("anthropic", model="m", system="", messages=HELLO, max_tokens=8)
        )
    error = caught.value
    assert (error.kind, error.status, error.retry_after) == (ErrorKind.RATE_LIMIT, 429, 3.0)
    assert error.retryable and error.provider == "anthropic"
    assert error.message == "Slow down: 40 requests per minute"


async def test_giving_up_on_a_stream_cancels_its_call_in_the_worker(
    worker: ProviderWorker, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(provider="gemini", reply="word " * 200, token_delay=0.05)
    stream = worker.stream("gemini", model="m", system="", messages=HELLO, max_tokens=500)
    first = await anext(stream)
    assert isinstance(first, TextDelta)
    await stream.aclose()

    ended = await asyncio.to_thread(fake_llm.wait_for_requests, 1, timeout=5.0, finished=True)
    assert ended, "the worker closed the HTTP call"
    (request,) = fake_llm.requests_for("gemini")
    assert request.ended is not None and request.ended - request.started < 5.0


async def test_when_the_worker_dies_its_calls_fail_retryably_and_the_next_call_starts_anew(
    worker: ProviderWorker, fake_llm: FakeLLMServer
) -> None:
    fake_llm.script(provider="openai", reply="word " * 200, token_delay=0.05)
    stream = worker.stream("openai", model="m", system="", messages=HELLO, max_tokens=500)
    assert isinstance(await anext(stream), TextDelta)
    first_pid = worker.pid
    assert first_pid is not None
    os.kill(first_pid, signal.SIGKILL)

    with pytest.raises(ProviderError) as caught:
        async for _ in stream:
            pass
    assert caught.value.kind is ErrorKind.CONNECTION and caught.value.retryable
    assert "worker process stopped" in caught.value.message

    text, _ = await collect(
        worker.stream("openai", model="m", system="", messages=HELLO, max_tokens=64)
    )
    assert text.startswith("Fake openai reply")
    assert worker.pid not in (None, first_pid)


async def test_a_started_worker_is_ready_once_it_has_imported_the_sdks(
    worker: ProviderWorker,
) -> None:
    assert not worker.ready
    await worker.start()
    assert await worker.wait_ready() and worker.ready


async def test_a_worker_that_exits_while_starting_is_not_waited_for(
    worker: ProviderWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A child that exits at once (here no Python at all) never says it is ready: the server
    # must not wait a minute for it.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    await worker.start()
    began = time.monotonic()
    assert not await worker.wait_ready()
    assert time.monotonic() - began < 10 and not worker.ready


async def test_only_the_http_adapters_move_to_the_worker(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "home")
    names = ("anthropic", "gemini", "openai", "claude-cli")
    built = {name: build_provider(name, settings) for name in names}
    providers = in_worker_process(built, ProviderWorker(settings))
    moved = {name for name, p in providers.items() if isinstance(p, RemoteProvider)}
    assert moved == {"anthropic", "gemini", "openai"}
    assert providers["anthropic"].status() == build_provider("anthropic", settings).status()


async def test_text_arriving_within_the_spacing_reaches_the_parent_in_one_later_write() -> None:
    """The child's writes to the parent are spaced: the first goes at once, what comes
    within the spacing after it waits and goes together, each call's text joined."""
    loop = asyncio.get_running_loop()
    read_end, write_end = os.pipe()
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(write_end, "wb"))
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(read_end, "rb")
    )
    outbox = _Outbox(transport, spacing=0.3)
    try:
        outbox.delta(1, "a")
        first = await _read_frame(reader)
        first_at = time.monotonic()
        outbox.delta(1, "b")
        await asyncio.sleep(0.02)
        outbox.delta(2, "c")
        outbox.delta(1, "d")
        second = await _read_frame(reader)
        second_at = time.monotonic()
        await asyncio.sleep(0.4)  # quiet for longer than the spacing
        outbox.delta(3, "e")
        quiet_at = time.monotonic()
        third = await _read_frame(reader)
        third_at = time.monotonic()
    finally:
        transport.close()

    assert first == [("delta", 1, "a")]
    assert second == [("delta", 1, "bd"), ("delta", 2, "c")]
    assert second_at - first_at >= 0.2, "the second write waited for the spacing"
    assert third == [("delta", 3, "e")]
    assert third_at - quiet_at < 0.2, "after a quiet spell the text goes at once"
