"""Failures are told apart: a bug in an adapter (an exception nobody expected) is an
``internal`` error, tried once, logged with its traceback and shown on the turn as Argue's
fault, not the provider's; and no failure is swallowed without a log line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.debates import DebateRequest, SeatChoice, create, prepare
from app.events import EventHub
from app.jobs import JobManager
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
)
from app.providers.registry import close_providers, provider_statuses
from app.providers.resilience import stream_with_retries
from app.providers.worker import ProviderWorker
from tests.fakes import FakeLLMServer, closed_port_url
from tests.providers.conftest import HELLO, MODELS, PROVIDER_CLASSES, collect, fake_settings

KEYS = ("test-anthropic-key", "test-gemini-key", "test-openai-key")


def tracebacks(caplog: pytest.LogCaptureFixture, kind: type[BaseException]) -> list[str]:
    """The messages of the log records that carry a traceback of a ``kind`` exception."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.exc_info and isinstance(record.exc_info[1], kind)
    ]


@pytest.mark.parametrize("provider_name", ["anthropic", "openai"])
async def test_an_adapter_tripping_on_an_unexpected_event_is_an_internal_error_tried_once(
    fake_llm: FakeLLMServer,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    provider_name: str,
) -> None:
    fake_llm.script(
        provider=provider_name, reply="one two", fault="unexpected_event", fault_after=1
    )
    provider = PROVIDER_CLASSES[provider_name](settings)
    events = stream_with_retries(
        provider,
        model=MODELS[provider_name],
        system="S",
        messages=HELLO,
        max_tokens=32,
        settings=settings,
    )

    with caplog.at_level(logging.ERROR), pytest.raises(ProviderError) as caught:
        await collect(events)

    error = caught.value
    assert (error.kind, error.retryable) == (ErrorKind.INTERNAL, False)
    assert "not a failure of" in error.message and "AttributeError" in error.message
    assert len(fake_llm.requests) == 1  # no retry
    assert tracebacks(caplog, AttributeError), caplog.text


async def test_gemini_reads_a_candidate_without_content_as_no_text(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider="gemini", reply="one two", fault="unexpected_event", fault_after=1)
    provider = PROVIDER_CLASSES["gemini"](settings)
    result = await collect(
        provider.stream(model=MODELS["gemini"], system="S", messages=HELLO, max_tokens=32)
    )
    assert result.text == "one " and result.finished is not None


@pytest.mark.parametrize("provider_name", sorted(PROVIDER_CLASSES))
async def test_unreadable_json_from_the_server_stays_a_retryable_server_error(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str
) -> None:
    fake_llm.script(provider=provider_name, reply="one two", fault="malformed_chunk", fault_after=1)
    provider = PROVIDER_CLASSES[provider_name](settings)
    with pytest.raises(ProviderError) as caught:
        await collect(
            provider.stream(model=MODELS[provider_name], system="S", messages=HELLO, max_tokens=8)
        )
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.SERVER, True)


class BuggyProvider:
    """A provider of our own protocol whose stream fails with a plain exception."""

    name = "buggy"

    def __init__(self) -> None:
        self.calls = 0

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, True, "always", "m")

    async def list_models(self) -> list[str]:
        return ["m"]

    async def stream(
        self, *, model: str, system: str, messages: Sequence[Message], max_tokens: int
    ) -> AsyncIterator[TextDelta | Finished]:
        self.calls += 1
        yield TextDelta("partial ")
        raise KeyError("choices")


async def test_a_plain_exception_from_a_providers_stream_is_internal_and_not_retried(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider = BuggyProvider()
    settings = Settings(home=tmp_path, retry_base_delay=0.0)
    events = stream_with_retries(
        provider, model="m", system="", messages=HELLO, max_tokens=8, settings=settings
    )

    with caplog.at_level(logging.ERROR), pytest.raises(ProviderError) as caught:
        await collect(events)

    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.INTERNAL, False)
    assert caught.value.provider == "buggy"
    assert provider.calls == 1
    assert tracebacks(caplog, KeyError), caplog.text


async def test_a_turn_broken_by_an_adapter_bug_is_saved_as_an_internal_error(
    fake_llm: FakeLLMServer, settings: Settings, engine: Engine, hub: EventHub
) -> None:
    seats = {role: SeatChoice(provider="anthropic") for role in ("claude", "gemini")}
    request = DebateRequest(topic="Tabs or spaces?", rounds=1, seats=seats)
    prepared = prepare(request, statuses=provider_statuses(settings))
    debate_id = create(engine, prepared=prepared, settings=settings).id
    fake_llm.script(provider="anthropic", reply="one two", fault="unexpected_event", times=2)
    jobs = JobManager(
        engine=engine,
        hub=hub,
        providers={"anthropic": PROVIDER_CLASSES["anthropic"](settings)},
        settings=settings,
    )

    jobs.submit(debate_id)
    async with asyncio.timeout(20):
        assert await jobs.wait(debate_id) == "failed"

    with session_scope(engine) as session:
        failed = [turn for turn in store.turns_of(session, debate_id=debate_id)]
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None and debate.status_reason is not None
        reason = debate.status_reason
    assert failed and {turn.error_kind for turn in failed} == {"internal"}
    assert {turn.attempts for turn in failed} == {1}
    assert all("a bug, not a failure of" in (turn.error_message or "") for turn in failed)
    assert "internal" in reason
    assert len(fake_llm.requests) == 2  # the two openings, once each


class Closing:
    def __init__(self, name: str, fails: bool) -> None:
        self.name = name
        self.fails = fails
        self.closed = False

    async def aclose(self) -> None:
        if self.fails:
            raise RuntimeError("the pool was already gone")
        self.closed = True


async def test_a_provider_that_fails_to_close_leaves_a_log_line_and_the_rest_still_close(
    caplog: pytest.LogCaptureFixture,
) -> None:
    first, broken, last = Closing("openai", False), Closing("gemini", True), Closing("local", False)
    providers = {p.name: p for p in (first, broken, last)}

    with caplog.at_level(logging.WARNING):
        await close_providers(providers)  # type: ignore[arg-type]

    assert first.closed and last.closed
    lines = tracebacks(caplog, RuntimeError)
    assert len(lines) == 1 and "gemini" in lines[0]


@pytest.mark.parametrize("provider_name", sorted(PROVIDER_CLASSES))
async def test_a_model_list_that_cannot_be_had_falls_back_with_a_log_line(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    provider_name: str,
) -> None:
    refused = closed_port_url()
    settings = fake_settings(
        fake_llm,
        tmp_path,
        ANTHROPIC_BASE_URL=refused,
        OPENAI_BASE_URL=f"{refused}/v1",
        GOOGLE_GEMINI_BASE_URL=refused,
    )
    provider = PROVIDER_CLASSES[provider_name](settings)

    with caplog.at_level(logging.WARNING):
        models = await provider.list_models()

    assert models == [provider.status().default_model]
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(provider_name in line and "could not list" in line for line in lines), lines
    assert not any(key in caplog.text for key in KEYS)


async def test_an_adapter_bug_in_the_worker_process_arrives_as_an_internal_error(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider="openai", reply="one two", fault="unexpected_event", fault_after=1)
    worker = ProviderWorker(settings)
    try:
        with pytest.raises(ProviderError) as caught:
            await collect(
                worker.stream("openai", model="m", system="", messages=HELLO, max_tokens=8)
            )
    finally:
        await worker.aclose()
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.INTERNAL, False)
    assert "AttributeError" in caught.value.message
