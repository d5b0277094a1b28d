"""Fixtures for provider tests: the adapters by name, and draining a stream.

The fake server, the clean environment and ``fake_settings`` come from ``tests/conftest.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.providers.anthropic import AnthropicProvider
from app.providers.base import (
    Finished,
    Message,
    Provider,
    ProviderError,
    Retrying,
    StreamEvent,
    TextDelta,
)
from app.providers.gemini import GeminiProvider
from app.providers.openai import OpenAIProvider
from tests import conftest as shared
from tests.fakes import FakeLLMServer

PROVIDER_CLASSES: dict[str, Callable[[Settings], Provider]] = {
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
    "openai": OpenAIProvider,
}
MODELS = {"anthropic": "claude-test", "gemini": "gemini-test", "openai": "gpt-test"}
HELLO = (Message("user", "Say hello"),)


def fake_settings(server: FakeLLMServer, home: Path, **overrides: Any) -> Settings:
    """Retry delays at their real sizes: these tests record the sleeps instead of taking them."""
    values: dict[str, Any] = {"retry_base_delay": 1.0, "retry_max_delay": 30.0, **overrides}
    return shared.fake_settings(server, home, **values)


@pytest.fixture
def settings(fake_llm: FakeLLMServer, tmp_path: Path) -> Settings:
    return fake_settings(fake_llm, tmp_path)


@dataclass(frozen=True)
class Collected:
    text: str
    deltas: tuple[str, ...]
    finished: Finished | None
    retries: tuple[Retrying, ...]


async def collect(events: AsyncIterator[StreamEvent]) -> Collected:
    """Drain a stream; text counts only from the last attempt, as a consumer would keep it."""
    deltas: list[str] = []
    retries: list[Retrying] = []
    finished: Finished | None = None
    async for event in events:
        if isinstance(event, TextDelta):
            deltas.append(event.text)
        elif isinstance(event, Retrying):
            retries.append(event)
            deltas.clear()
        else:
            finished = event
    return Collected("".join(deltas), tuple(deltas), finished, tuple(retries))


async def events_then_error(
    provider: AnthropicProvider | GeminiProvider | OpenAIProvider,
    *,
    model: str,
    messages: Sequence[Message],
) -> list[Any]:
    """Every event of one call's stream, and the error it ends with, if any; the provider
    closed after."""
    events: list[Any] = []
    try:
        async for event in provider.stream(model=model, system="", messages=messages, max_tokens=9):
            events.append(event)
    except ProviderError as error:
        events.append(error)
    finally:
        await provider.aclose()
    return events
