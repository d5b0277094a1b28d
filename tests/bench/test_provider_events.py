"""``python -m bench.provider_events`` compares like with like: for every provider, its adapter
and the SDK's typed stream each see every token of the same reply as one text event."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.provider_events import fake_providers, opened_ways

TOKENS = 40


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with fake_providers(TOKENS) as url:
        yield url


async def test_each_provider_is_read_event_for_event_by_its_adapter_and_by_its_sdk(
    fake_url: str,
) -> None:
    async with opened_ways(fake_url) as ways:
        counts = {
            name: (await adapter.read(), await typed.read())
            for name, (adapter, typed) in ways.items()
        }
    assert counts == {name: (TOKENS, TOKENS) for name in ("anthropic", "gemini", "openai")}
