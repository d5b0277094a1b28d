"""``python -m bench.provider_events`` compares like with like: for every provider, its adapter
and the SDK's typed stream each see every token of the same reply as one text event."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bench.provider_events import fake_providers, readers

TOKENS = 40


@pytest.fixture(scope="module")
def fake_url() -> Iterator[str]:
    with fake_providers(TOKENS) as url:
        yield url


async def test_each_provider_is_read_event_for_event_by_its_adapter_and_by_its_sdk(
    fake_url: str,
) -> None:
    ways = readers(fake_url)
    counts: dict[str, tuple[int, int]] = {}
    try:
        for name, ((adapter, _), (typed, _)) in ways.items():
            counts[name] = (await adapter(), await typed())
    finally:
        for pair in ways.values():
            for _, close in pair:
                await close()
    assert counts == {name: (TOKENS, TOKENS) for name in ("anthropic", "gemini", "openai")}
