"""A reply cut at its output-token cap says so: each SDK adapter, against the fake server
speaking that provider's wire protocol, ends its stream with ``hit_output_limit`` set, and the
worker process passes the provider's reason through."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.providers.base import Finished
from app.providers.worker import ProviderWorker
from tests.fakes import FakeLLMServer
from tests.providers.conftest import HELLO, MODELS, PROVIDER_CLASSES, collect

# What each provider's wire says when the reply reached ``max_tokens``.
CUT_ON_THE_WIRE = {"anthropic": "max_tokens", "gemini": "MAX_TOKENS", "openai": "length"}


@pytest.mark.parametrize("provider", sorted(CUT_ON_THE_WIRE))
async def test_a_reply_cut_at_max_tokens_finishes_marked_as_hitting_the_output_limit(
    provider: str, fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider=provider, reply="It was cut in the mid", stop_reason=CUT_ON_THE_WIRE[provider]
    )
    adapter = PROVIDER_CLASSES[provider](settings)

    got = await collect(
        adapter.stream(model=MODELS[provider], system="", messages=HELLO, max_tokens=6)
    )

    assert got.text == "It was cut in the mid"
    assert got.finished is not None
    assert got.finished.stop_reason == CUT_ON_THE_WIRE[provider]
    assert got.finished.hit_output_limit


@pytest.mark.parametrize("provider", sorted(CUT_ON_THE_WIRE))
async def test_a_reply_that_ends_on_its_own_is_not_marked_as_cut(
    provider: str, fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider=provider, reply="A whole answer.")
    adapter = PROVIDER_CLASSES[provider](settings)

    got = await collect(
        adapter.stream(model=MODELS[provider], system="", messages=HELLO, max_tokens=600)
    )

    assert got.finished is not None and got.finished.stop_reason
    assert not got.finished.hit_output_limit


async def test_the_worker_process_passes_the_output_limit_through(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider="openai", reply="Cut short", stop_reason="length")
    worker = ProviderWorker(settings)
    try:
        events = [
            event
            async for event in worker.stream(
                "openai", model="gpt-test", system="", messages=HELLO, max_tokens=2
            )
        ]
    finally:
        await worker.aclose()

    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.hit_output_limit
