"""The Anthropic adapter through the real ``anthropic`` SDK against the fake Messages API."""

from __future__ import annotations

from pathlib import Path

from app.config import Settings
from app.providers.anthropic import AnthropicProvider, build_request
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta, Usage
from tests.fakes import FakeLLMServer
from tests.providers.conftest import collect, fake_settings

DIALOGUE = (
    Message("user", "Open the debate."),
    Message("assistant", "I argue yes."),
    Message("user", "Rebut."),
)


def test_build_request_keeps_system_apart_and_roles_as_given() -> None:
    request = build_request(model="m", system="Be brief.", messages=DIALOGUE, max_tokens=99)
    assert request["system"] == "Be brief."
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert request["max_tokens"] == 99
    assert "system" not in build_request(model="m", system="", messages=DIALOGUE, max_tokens=9)


async def test_streams_text_in_order_and_finishes_with_reported_usage(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider="anthropic",
        tokens=["The ", "answer ", "is ", "42."],
        input_tokens=31,
        output_tokens=4,
    )
    events = [
        e
        async for e in AnthropicProvider(settings).stream(
            model="claude-test", system="Be brief.", messages=DIALOGUE, max_tokens=321
        )
    ]
    assert events[:-1] == [
        TextDelta("The "),
        TextDelta("answer "),
        TextDelta("is "),
        TextDelta("42."),
    ]
    assert events[-1] == Finished(Usage(input_tokens=31, output_tokens=4), "end_turn")


async def test_sends_model_system_roles_max_tokens_and_key(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    await collect(
        AnthropicProvider(settings).stream(
            model="claude-test", system="Be brief.", messages=DIALOGUE, max_tokens=321
        )
    )
    (request,) = fake_llm.requests
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-test"
    assert request.body["system"] == "Be brief."
    assert request.body["max_tokens"] == 321
    assert request.body["stream"] is True
    assert [(m["role"], m["content"]) for m in request.body["messages"]] == [
        (m.role, m.content) for m in DIALOGUE
    ]
    # This SDK version sends the key as a bearer token; older ones used x-api-key.
    sent_key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == "test-anthropic-key"
    assert request.headers["x-stainless-retry-count"] == "0"


async def test_overloaded_error_event_mid_stream_is_overloaded_without_status(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.script(
        provider="anthropic",
        reply="a b c d",
        fault="mid_stream_error",
        fault_after=2,
        error_message="Overloaded right now",
    )
    provider = AnthropicProvider(settings)
    seen: list[str] = []
    try:
        async for event in provider.stream(
            model="claude-test", system="", messages=DIALOGUE, max_tokens=50
        ):
            if isinstance(event, TextDelta):
                seen.append(event.text)
    except ProviderError as error:
        assert error.kind is ErrorKind.OVERLOADED
        assert error.status is None
        assert error.message == "Overloaded right now"
        assert error.retryable
    else:
        raise AssertionError("the mid-stream error was swallowed")
    assert seen == ["a ", "b "]


def test_status_names_the_missing_key(tmp_path: Path) -> None:
    status = AnthropicProvider(Settings(home=tmp_path)).status()
    assert not status.configured
    assert status.reason == "ANTHROPIC_API_KEY not set"
    assert status.default_model == Settings(home=tmp_path).anthropic_model


def test_status_is_configured_with_a_key(tmp_path: Path) -> None:
    status = AnthropicProvider(Settings(home=tmp_path, ANTHROPIC_API_KEY="k")).status()
    assert status.configured
    assert "k" not in status.reason.replace("ANTHROPIC_API_KEY", "").replace("set", "")


async def test_list_models_reads_the_models_endpoint(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    fake_llm.set_models("anthropic", ["claude-a", "claude-b"])
    assert await AnthropicProvider(settings).list_models() == ["claude-a", "claude-b"]
    assert fake_llm.requests[0].path == "/v1/models"


async def test_list_models_falls_back_to_the_default_when_unreachable(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    from tests.fakes import closed_port_url

    settings = fake_settings(fake_llm, tmp_path, ANTHROPIC_BASE_URL=closed_port_url())
    assert await AnthropicProvider(settings).list_models() == [settings.anthropic_model]
