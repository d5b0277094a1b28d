"""The Gemini adapter through the real ``google-genai`` SDK against the fake Gemini API."""

from __future__ import annotations

from pathlib import Path

from app.config import Settings
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta, Usage
from app.providers.gemini import GeminiProvider, build_config, build_contents
from tests.fakes import FakeLLMServer
from tests.providers.conftest import collect

DIALOGUE = (
    Message("user", "Open the debate."),
    Message("assistant", "I argue yes."),
    Message("user", "Rebut."),
)


def test_build_contents_names_the_assistant_model() -> None:
    contents = build_contents(DIALOGUE)
    assert [c.get("role") for c in contents] == ["user", "model", "user"]
    assert contents[1].get("parts") == [{"text": "I argue yes."}]


def test_build_config_carries_system_and_cap() -> None:
    config = build_config(system="Be brief.", max_tokens=55)
    assert (config.get("system_instruction"), config.get("max_output_tokens")) == ("Be brief.", 55)
    assert build_config(system="", max_tokens=55).get("system_instruction") is None


async def test_streams_text_in_order_and_finishes_with_reported_usage(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider="gemini", tokens=["Fair ", "point", "."], input_tokens=20, output_tokens=3
    )
    events = [
        e
        async for e in GeminiProvider(settings).stream(
            model="gemini-test", system="Be brief.", messages=DIALOGUE, max_tokens=88
        )
    ]
    assert events[:-1] == [TextDelta("Fair "), TextDelta("point"), TextDelta(".")]
    assert events[-1] == Finished(Usage(input_tokens=20, output_tokens=3), "STOP")


async def test_sends_system_instruction_model_roles_and_cap(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    await collect(
        GeminiProvider(settings).stream(
            model="gemini-test", system="Be brief.", messages=DIALOGUE, max_tokens=88
        )
    )
    (request,) = fake_llm.requests
    assert request.path.endswith("/models/gemini-test:streamGenerateContent")
    assert request.query == {"alt": "sse"}
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"] == "Be brief."
    assert [(c["role"], c["parts"][0]["text"]) for c in body["contents"]] == [
        ("user", "Open the debate."),
        ("model", "I argue yes."),
        ("user", "Rebut."),
    ]
    assert body["generationConfig"]["maxOutputTokens"] == 88
    assert request.headers["x-goog-api-key"] == "test-gemini-key"


async def test_rate_limit_takes_retry_delay_from_googles_retry_info(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    # Only the RetryInfo detail in the body says when to come back: no header.
    fake_llm.script(provider="gemini", fault="http_429", error_message="Quota exceeded")
    provider = GeminiProvider(settings)
    try:
        await collect(provider.stream(model="g", system="", messages=DIALOGUE, max_tokens=9))
    except ProviderError as error:
        assert (error.kind, error.status, error.message) == (
            ErrorKind.RATE_LIMIT,
            429,
            "Quota exceeded",
        )
        assert error.retry_after is None
    from app.providers.gemini import _retry_delay_from_details

    details = {"error": {"details": [{"@type": "x.RetryInfo", "retryDelay": "12.5s"}]}}
    assert _retry_delay_from_details(details) == 12.5


def test_status_accepts_either_key_name(tmp_path: Path) -> None:
    assert GeminiProvider(Settings(home=tmp_path, GOOGLE_API_KEY="k")).status().configured
    missing = GeminiProvider(Settings(home=tmp_path)).status()
    assert not missing.configured
    assert "GEMINI_API_KEY" in missing.reason


async def test_list_models_reads_the_models_endpoint_without_prefix(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.set_models("gemini", ["gemini-x", "gemini-y"])
    assert await GeminiProvider(settings).list_models() == ["gemini-x", "gemini-y"]


async def test_list_models_falls_back_to_the_default_when_none_listed(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.set_models("gemini", [])
    assert await GeminiProvider(settings).list_models() == [settings.gemini_model]
