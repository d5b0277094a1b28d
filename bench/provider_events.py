"""What reading one streamed event costs each provider adapter: ``python -m bench.provider_events``.

Under the hardest load (every token its own wire event) the provider calls spend most of
their CPU reading events. This streams long replies, one token per event in the real APIs'
full shapes, from the benchmark's fake providers (``bench.fake_providers``, in a process of
its own, so its CPU is not counted) and reads each one two ways: through the adapter in
``app/providers/`` as the app does, and through the SDK's own typed stream, every event made
into the SDK's objects. It prints the CPU (user + system) per event of each, the best of
``--repeats`` runs.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

import anthropic
import openai
from google import genai
from google.genai import types

from app import event_loop
from app.config import Settings
from app.providers.anthropic import AnthropicProvider
from app.providers.base import Message, TextDelta
from app.providers.gemini import GeminiProvider
from app.providers.openai import OpenAIProvider
from bench.fake_providers import Pace
from bench.fake_providers import start as start_fake_providers
from bench.processes import stop

MODEL = "bench-model"
KEY = "bench-key"
HELLO = [Message("user", "Hello")]
Reader = Callable[[], Awaitable[int]]  # reads one whole reply; returns the events it saw
Closer = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class Way:
    """One way of reading a provider's stream, and how to let its client go."""

    read: Reader
    close: Closer


def settings_for(url: str) -> Settings:
    return Settings(
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_BASE_URL=url,
        GEMINI_API_KEY=KEY,
        GOOGLE_GEMINI_BASE_URL=url,
        OPENAI_API_KEY=KEY,
        OPENAI_BASE_URL=f"{url}/v1",
    )


async def count_text(events: AsyncIterator[Any], is_text: Callable[[Any], bool]) -> int:
    count = 0
    async for event in events:
        count += is_text(event)
    return count


def through_adapter(
    provider: AnthropicProvider | GeminiProvider | OpenAIProvider,
) -> Way:
    async def read() -> int:
        events = provider.stream(model=MODEL, system="", messages=HELLO, max_tokens=100_000)
        return await count_text(events, lambda event: isinstance(event, TextDelta))

    return Way(read, provider.aclose)


def anthropic_typed(url: str) -> Way:
    client = anthropic.AsyncAnthropic(
        api_key=KEY, base_url=url, max_retries=0, http_client=anthropic.DefaultAioHttpClient()
    )

    async def read() -> int:
        stream = await client.messages.create(
            model=MODEL,
            max_tokens=100_000,
            messages=[{"role": "user", "content": "Hello"}],
            stream=True,
        )
        return await count_text(stream, lambda event: event.type == "content_block_delta")

    return Way(read, client.close)


def openai_typed(url: str) -> Way:
    client = openai.AsyncOpenAI(
        api_key=KEY, base_url=f"{url}/v1", max_retries=0, http_client=openai.DefaultAioHttpClient()
    )

    async def read() -> int:
        stream = await client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hello"}], stream=True
        )
        return await count_text(
            stream, lambda chunk: bool(chunk.choices and chunk.choices[0].delta.content)
        )

    return Way(read, client.close)


def gemini_typed(url: str) -> Way:
    options = types.HttpOptions(base_url=url, retry_options=types.HttpRetryOptions(attempts=1))
    client = genai.Client(api_key=KEY, vertexai=False, http_options=options)

    async def read() -> int:
        stream = await client.aio.models.generate_content_stream(model=MODEL, contents="Hello")
        return await count_text(stream, lambda chunk: bool(chunk.text))

    return Way(read, client.aio.aclose)


async def cpu_microseconds_per_event(read: Reader, repeats: int) -> float:
    await read()  # the first call pays for imports, connections and lazily built models
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        events = await read()
        best = min(best, (time.process_time() - started) / events * 1e6)
    return best


@asynccontextmanager
async def opened_ways(url: str) -> AsyncIterator[dict[str, tuple[Way, Way]]]:
    """Per provider: its adapter, and the SDK's typed stream; every client closed after."""
    settings = settings_for(url)
    ways = {
        "anthropic": (through_adapter(AnthropicProvider(settings)), anthropic_typed(url)),
        "gemini": (through_adapter(GeminiProvider(settings)), gemini_typed(url)),
        "openai": (through_adapter(OpenAIProvider(settings)), openai_typed(url)),
    }
    try:
        yield ways
    finally:
        for pair in ways.values():
            for way in pair:
                await way.close()


async def measure(url: str, repeats: int) -> dict[str, tuple[float, float]]:
    async with opened_ways(url) as ways:
        return {
            name: (
                await cpu_microseconds_per_event(adapter.read, repeats),
                await cpu_microseconds_per_event(typed.read, repeats),
            )
            for name, (adapter, typed) in ways.items()
        }


@contextmanager
def fake_providers(tokens: int) -> Iterator[str]:
    """The benchmark's fake providers in a process of their own, every reply ``tokens``
    tokens, one per event, sent at once; yields their URL."""
    process, url = start_fake_providers(tokens=tokens, paces={"all": Pace(0, 0, 1)})
    try:
        yield url
    finally:
        stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tokens", type=int, default=3000, help="tokens (events) per reply")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each (best is kept)")
    args = parser.parse_args()
    with fake_providers(args.tokens) as url:
        results = event_loop.run(measure(url, args.repeats))
    print(f"{'provider':<10} {'adapter':>16} {'SDK typed stream':>20}")
    for name, (adapter, typed) in results.items():
        print(f"{name:<10} {adapter:10.1f} µs/event {typed:10.1f} µs/event")


if __name__ == "__main__":
    main()
