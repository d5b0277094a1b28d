"""stream_with_retries: which failures are retried, how long it waits, stalls, and cleanup."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    Retrying,
    TextDelta,
    Usage,
)
from app.providers.openai import OpenAIProvider
from app.providers.resilience import backoff_delay, parse_retry_after, stream_with_retries
from tests.fakes import FakeLLMServer, closed_port_url
from tests.providers.conftest import HELLO, MODELS, PROVIDER_CLASSES, collect, fake_settings


class SleepRecorder:
    """Stands in for asyncio.sleep: records the delays and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def _retrying(provider_name: str, settings: Settings, sleep: SleepRecorder) -> AsyncIterator:
    return stream_with_retries(
        PROVIDER_CLASSES[provider_name](settings),
        model=MODELS[provider_name],
        system="S",
        messages=HELLO,
        max_tokens=32,
        settings=settings,
        sleep=sleep,
    )


# -- pure rules ----------------------------------------------------------------------------


def test_backoff_doubles_from_the_base_and_is_capped(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, retry_base_delay=1.0, retry_max_delay=5.0)
    delays = [backoff_delay(attempt=n, retry_after=None, settings=settings) for n in (1, 2, 3, 4)]
    assert delays == [1.0, 2.0, 4.0, 5.0]


def test_backoff_never_waits_less_than_retry_after(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, retry_base_delay=1.0, retry_max_delay=5.0)
    assert backoff_delay(attempt=1, retry_after=12.0, settings=settings) == 12.0
    assert backoff_delay(attempt=3, retry_after=0.5, settings=settings) == 4.0


def test_parse_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    soon = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (parse_retry_after({"retry-after": soon}) or 0) <= 31
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# -- through the fake server ---------------------------------------------------------------


async def test_rate_limit_is_retried_after_the_servers_retry_after(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider="openai", fault="http_429", retry_after=7)
    fake_llm.script(provider="openai", reply="finally through")
    sleep = SleepRecorder()
    result = await collect(_retrying("openai", settings, sleep))
    assert result.text == "finally through"
    assert sleep.delays == [7.0]
    (retry,) = result.retries
    assert (retry.attempt, retry.delay, retry.error.kind) == (1, 7.0, ErrorKind.RATE_LIMIT)
    assert len(fake_llm.requests) == 2


@pytest.mark.parametrize("fault", ["http_500", "http_529"])
async def test_server_errors_are_retried_with_exponential_backoff(
    fake_llm: FakeLLMServer, settings: Settings, fault: str
) -> None:
    fake_llm.script(provider="anthropic", fault=fault, times=2)
    fake_llm.script(provider="anthropic", reply="third time lucky")
    sleep = SleepRecorder()
    result = await collect(_retrying("anthropic", settings, sleep))
    assert result.text == "third time lucky"
    assert sleep.delays == [1.0, 2.0]
    assert [r.attempt for r in result.retries] == [1, 2]


@pytest.mark.parametrize("fault", ["http_401", "http_400"])
async def test_client_errors_are_not_retried(
    fake_llm: FakeLLMServer, settings: Settings, fault: str
) -> None:
    fake_llm.script(provider="gemini", fault=fault)
    fake_llm.script(provider="gemini", reply="never asked for")
    sleep = SleepRecorder()
    with pytest.raises(ProviderError) as caught:
        await collect(_retrying("gemini", settings, sleep))
    assert caught.value.status == int(fault.removeprefix("http_"))
    assert len(fake_llm.requests) == 1
    assert sleep.delays == []


@pytest.mark.parametrize("provider_name", sorted(PROVIDER_CLASSES))
async def test_mid_stream_error_is_retried_and_partial_text_discarded(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str
) -> None:
    fake_llm.script(
        provider=provider_name,
        reply="doomed partial answer",
        fault="mid_stream_error",
        fault_after=2,
    )
    fake_llm.script(provider=provider_name, reply="the whole answer")
    events = [e async for e in _retrying(provider_name, settings, SleepRecorder())]
    kinds = [type(e) for e in events]
    assert kinds == [TextDelta, TextDelta, Retrying, TextDelta, TextDelta, TextDelta, Finished]
    after_retry = events[kinds.index(Retrying) + 1 : -1]
    assert "".join(e.text for e in after_retry if isinstance(e, TextDelta)) == "the whole answer"


async def test_a_stalled_stream_times_out_and_is_retried(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path, stall_timeout=0.3)
    fake_llm.script(provider="openai", reply="one two three", fault="stall", fault_after=1)
    fake_llm.script(provider="openai", reply="fresh start")
    result = await collect(_retrying("openai", settings, SleepRecorder()))
    assert result.text == "fresh start"
    (retry,) = result.retries
    assert (retry.error.kind, retry.error.retryable) == (ErrorKind.TIMEOUT, True)
    # The stalled request was abandoned: the client closed it, so the server saw it end.
    assert fake_llm.wait_for_requests(2, finished=True)


async def test_a_stall_before_the_first_token_also_times_out(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path, stall_timeout=0.3, retry_max_attempts=1)
    fake_llm.script(provider="gemini", reply="never", fault="stall", fault_after=0)
    with pytest.raises(ProviderError) as caught:
        await collect(_retrying("gemini", settings, SleepRecorder()))
    assert caught.value.kind is ErrorKind.TIMEOUT


async def test_connection_refused_is_retried_until_attempts_run_out(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(
        fake_llm,
        tmp_path,
        OPENAI_BASE_URL=f"{closed_port_url()}/v1",
        retry_max_attempts=3,
    )
    sleep = SleepRecorder()
    with pytest.raises(ProviderError) as caught:
        await collect(_retrying("openai", settings, sleep))
    assert caught.value.kind is ErrorKind.CONNECTION
    assert sleep.delays == [1.0, 2.0]


async def test_exhausted_retries_raise_the_last_error(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path, retry_max_attempts=2)
    fake_llm.script(provider="openai", fault="http_500", error_message="first failure")
    fake_llm.script(provider="openai", fault="http_503", error_message="last failure")
    with pytest.raises(ProviderError) as caught:
        await collect(_retrying("openai", settings, SleepRecorder()))
    assert (caught.value.kind, caught.value.message) == (ErrorKind.OVERLOADED, "last failure")
    assert len(fake_llm.requests) == 2


async def test_a_retry_after_beyond_the_total_wait_budget_is_not_waited_for(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path, retry_max_total_wait=5.0)
    fake_llm.script(provider="openai", fault="http_429", retry_after=60)
    sleep = SleepRecorder()
    with pytest.raises(ProviderError) as caught:
        await collect(_retrying("openai", settings, sleep))
    assert (caught.value.kind, caught.value.retry_after) == (ErrorKind.RATE_LIMIT, 60.0)
    assert sleep.delays == []


async def test_real_sleep_is_used_by_default(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    settings = fake_settings(fake_llm, tmp_path, retry_base_delay=0.05)
    fake_llm.script(provider="openai", fault="http_500")
    events = stream_with_retries(
        OpenAIProvider(settings),
        model="gpt-test",
        system="",
        messages=HELLO,
        max_tokens=8,
        settings=settings,
    )
    result = await collect(events)
    assert len(result.retries) == 1 and result.finished is not None


# -- cleanup of the wrapped stream ---------------------------------------------------------


class ScriptedProvider:
    """A provider following our own protocol (not an SDK double), to watch its stream's life."""

    name = "scripted"

    def __init__(self, gate: asyncio.Event | None = None) -> None:
        self.closed = 0
        self.gate = gate

    def status(self) -> ProviderStatus:
        return ProviderStatus("scripted", True, "always", "m")

    async def list_models(self) -> list[str]:
        return ["m"]

    async def stream(
        self, *, model: str, system: str, messages: Sequence[Message], max_tokens: int
    ) -> AsyncIterator[TextDelta | Finished]:
        try:
            yield TextDelta("first")
            if self.gate is not None:
                await self.gate.wait()
            yield TextDelta("second")
            yield Finished(Usage(1, 2))
        finally:
            self.closed += 1


async def test_the_providers_stream_is_closed_when_the_consumer_stops_early(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider()
    settings = Settings(home=tmp_path)
    events = stream_with_retries(
        provider, model="m", system="", messages=HELLO, max_tokens=8, settings=settings
    )
    assert await anext(events) == TextDelta("first")
    await events.aclose()
    assert provider.closed == 1


async def test_the_providers_stream_is_closed_when_the_consumer_is_cancelled(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()
    provider = ScriptedProvider(gate)
    settings = Settings(home=tmp_path)
    first_seen = asyncio.Event()

    async def consume() -> None:
        async for _ in stream_with_retries(
            provider, model="m", system="", messages=HELLO, max_tokens=8, settings=settings
        ):
            first_seen.set()

    task = asyncio.create_task(consume())
    await first_seen.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.closed == 1
