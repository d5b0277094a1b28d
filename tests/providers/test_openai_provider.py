"""The OpenAI adapter through the real ``openai`` SDK against the fake Chat Completions API."""

from __future__ import annotations

from pathlib import Path

from app.config import Settings
from app.providers.base import Finished, Message, TextDelta, Usage, estimate_tokens
from app.providers.openai import OpenAIProvider, build_request, is_official
from tests.fakes import FakeLLMServer
from tests.providers.conftest import collect, fake_settings

DIALOGUE = (
    Message("user", "Open the debate."),
    Message("assistant", "I argue yes."),
    Message("user", "Rebut."),
)


def test_build_request_puts_system_first_and_names_the_cap_per_endpoint() -> None:
    official = build_request(
        model="m", system="Be brief.", messages=DIALOGUE, max_tokens=77, official=True
    )
    assert official["messages"][0] == {"role": "system", "content": "Be brief."}
    assert official["max_completion_tokens"] == 77 and "max_tokens" not in official
    compatible = build_request(
        model="m", system="", messages=DIALOGUE, max_tokens=77, official=False
    )
    assert compatible["messages"][0]["role"] == "user"
    assert compatible["max_tokens"] == 77 and "max_completion_tokens" not in compatible
    assert compatible["stream_options"] == {"include_usage": True}


def test_only_openais_own_endpoint_counts_as_official() -> None:
    assert is_official(None)
    assert is_official("https://api.openai.com/v1")
    assert not is_official("http://127.0.0.1:11434/v1")


async def test_streams_text_in_order_and_finishes_with_reported_usage(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider="openai", tokens=["Un", "der ", "way."], input_tokens=12, output_tokens=3
    )
    events = [
        e
        async for e in OpenAIProvider(settings).stream(
            model="gpt-test", system="Be brief.", messages=DIALOGUE, max_tokens=64
        )
    ]
    assert events[:-1] == [TextDelta("Un"), TextDelta("der "), TextDelta("way.")]
    assert events[-1] == Finished(Usage(input_tokens=12, output_tokens=3), "stop")


async def test_usage_is_estimated_when_the_server_reports_none(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(provider="openai", reply="twelve chars", usage=False)
    result = await collect(
        OpenAIProvider(settings).stream(
            model="gpt-test", system="Be brief.", messages=DIALOGUE, max_tokens=64
        )
    )
    assert result.text == "twelve chars"
    assert result.finished is not None
    usage = result.finished.usage
    assert usage.estimated
    assert usage.output_tokens == estimate_tokens("twelve chars")
    expected_input = estimate_tokens("Be brief.") + sum(
        estimate_tokens(m.content) for m in DIALOGUE
    )
    assert usage.input_tokens == expected_input


async def test_sends_system_as_a_system_message_with_roles_model_and_cap(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    await collect(
        OpenAIProvider(settings).stream(
            model="gpt-test", system="Be brief.", messages=DIALOGUE, max_tokens=64
        )
    )
    (request,) = fake_llm.requests
    assert request.path == "/v1/chat/completions"
    body = request.body
    assert body["model"] == "gpt-test"
    assert [(m["role"], m["content"]) for m in body["messages"]] == [
        ("system", "Be brief."),
        *((m.role, m.content) for m in DIALOGUE),
    ]
    assert body["max_tokens"] == 64  # a custom base URL: an OpenAI-compatible server
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert request.headers["authorization"] == "Bearer test-openai-key"


def test_status_with_base_url_but_no_key_says_to_set_any_key(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, OPENAI_BASE_URL="http://127.0.0.1:11434/v1")
    status = OpenAIProvider(settings).status()
    assert not status.configured
    assert "OPENAI_API_KEY=anything" in status.reason


def test_status_without_anything_names_the_missing_key(tmp_path: Path) -> None:
    status = OpenAIProvider(Settings(home=tmp_path)).status()
    assert (status.configured, status.reason) == (False, "OPENAI_API_KEY not set")


async def test_list_models_reads_the_models_endpoint(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.set_models("openai", ["llama3.2", "qwen3"])
    assert await OpenAIProvider(settings).list_models() == ["llama3.2", "qwen3"]


async def test_list_models_without_a_key_returns_the_default(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path)
    assert await OpenAIProvider(settings).list_models() == [settings.openai_model]


async def test_list_models_falls_back_on_a_server_error(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path, OPENAI_BASE_URL=f"{fake_llm.url}/missing/v1")
    assert await OpenAIProvider(settings).list_models() == [settings.openai_model]
