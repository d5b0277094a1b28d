"""The Gemini adapter through the real ``google-genai`` SDK against the fake Gemini API, and
against a bare server for chunks the fake does not send (thoughts, several parts, shapes the
adapter does not expect)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.config import Settings
from app.providers.base import ErrorKind, Finished, Message, ProviderError, TextDelta, Usage
from app.providers.gemini import GeminiProvider, build_contents, build_request, stream_path
from tests.fakes import FakeLLMServer
from tests.fakes.bare_stream import bare_server, cut_oddly, odd_sizes
from tests.providers.conftest import collect, events_then_error

DIALOGUE = (
    Message("user", "Open the debate."),
    Message("assistant", "I argue yes."),
    Message("user", "Rebut."),
)


def test_build_contents_names_the_assistant_model() -> None:
    contents = build_contents(DIALOGUE)
    assert [c.get("role") for c in contents] == ["user", "model", "user"]
    assert contents[1].get("parts") == [{"text": "I argue yes."}]


def test_build_request_carries_system_and_cap_in_the_apis_names() -> None:
    request = build_request(system="Be brief.", messages=DIALOGUE, max_tokens=55)
    assert request["systemInstruction"] == {"parts": [{"text": "Be brief."}], "role": "user"}
    assert request["generationConfig"] == {"maxOutputTokens": 55}
    assert "systemInstruction" not in build_request(system="", messages=DIALOGUE, max_tokens=55)


def test_stream_path_puts_models_before_a_bare_name_once() -> None:
    assert stream_path("gemini-x") == "models/gemini-x:streamGenerateContent?alt=sse"
    assert stream_path("models/gemini-x") == "models/gemini-x:streamGenerateContent?alt=sse"
    assert stream_path("tunedModels/mine").startswith("tunedModels/mine:")


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


async def test_a_model_name_that_would_change_the_path_is_refused_before_any_request(
    fake_llm: FakeLLMServer, settings: Settings
) -> None:
    provider = GeminiProvider(settings)
    with pytest.raises(ProviderError) as caught:
        await collect(
            provider.stream(model="../tunedModels/x", system="", messages=DIALOGUE, max_tokens=9)
        )
    assert (caught.value.kind, caught.value.retryable) == (ErrorKind.BAD_REQUEST, False)
    assert "'../tunedModels/x' is not a Gemini model name" in caught.value.message
    assert fake_llm.requests == []


def chunk(*parts: dict[str, Any], usage: dict[str, int] | None = None, **candidate: Any) -> bytes:
    body: dict[str, Any] = {
        "candidates": [{"content": {"parts": list(parts), "role": "model"}, **candidate}]
    }
    if usage is not None:
        body["usageMetadata"] = usage
    return f"data: {json.dumps(body)}\r\n\r\n".encode()


async def _events_from(chunks: list[bytes], tmp_path: Path) -> list[Any]:
    """What the adapter makes of ``chunks`` cut at odd places: its events, and the error it
    ends with, if any."""
    pieces = cut_oddly(b"".join(chunks), odd_sizes())
    async with bare_server(pieces) as url:
        settings = Settings(home=tmp_path, GEMINI_API_KEY="k", GOOGLE_GEMINI_BASE_URL=url)
        return await events_then_error(GeminiProvider(settings), model="g", messages=DIALOGUE)


async def test_thoughts_are_left_out_and_a_chunks_parts_joined_and_thinking_billed(
    tmp_path: Path,
) -> None:
    chunks = [
        chunk({"text": "Weighing it up.", "thought": True}),
        chunk({"text": "Yes, "}, {"text": "d\u00e9j\u00e0 vu"}, {"thought": True}),
        chunk(
            {"text": ""},
            usage={"promptTokenCount": 12, "candidatesTokenCount": 5, "thoughtsTokenCount": 4},
            finishReason="MAX_TOKENS",
        ),
    ]
    events = await _events_from(chunks, tmp_path)
    assert events == [
        TextDelta("Yes, d\u00e9j\u00e0 vu"),
        Finished(Usage(input_tokens=12, output_tokens=9), "MAX_TOKENS"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        {"candidates": {"0": {}}},
        {"candidates": [{"content": {"parts": "Yes"}}]},
        {"candidates": [{"content": {"parts": [{"text": ["a", "list"]}]}}]},
        {"candidates": [], "usageMetadata": ["12"]},
    ],
    ids=["candidates-not-a-list", "parts-a-string", "text-a-list", "usage-a-list"],
)
async def test_a_chunk_of_an_unexpected_shape_is_a_bug_here_after_the_text_before_it(
    tmp_path: Path, bad: dict[str, Any]
) -> None:
    chunks = [chunk({"text": "Before."}), f"data: {json.dumps(bad)}\r\n\r\n".encode()]
    events = await _events_from(chunks, tmp_path)
    assert events[0] == TextDelta("Before.")
    error = events[1]
    assert isinstance(error, ProviderError) and len(events) == 2
    assert (error.kind, error.retryable) == (ErrorKind.INTERNAL, False)
    assert "a Gemini chunk of an unexpected shape" in error.message


async def _failure_after_text(error: Any, tmp_path: Path) -> ProviderError:
    """How a stream ends whose second chunk is ``{"error": error}``, after its first's text."""
    chunks = [chunk({"text": "Before."}), f"data: {json.dumps({'error': error})}\r\n\r\n".encode()]
    events = await _events_from(chunks, tmp_path)
    assert events[0] == TextDelta("Before.") and len(events) == 2
    assert isinstance(events[1], ProviderError)
    return events[1]


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        (
            {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"},
            "overloaded",
            503,
        ),
        ({"message": "Quota used up.", "status": "RESOURCE_EXHAUSTED"}, "rate_limit", None),
        (
            {"code": "429", "message": "Slow down.", "status": "RESOURCE_EXHAUSTED"},
            "rate_limit",
            429,
        ),
    ],
    ids=["with-a-code", "status-only", "code-as-text"],
)
async def test_an_error_inside_the_stream_ends_it_with_googles_message_after_the_text_before(
    tmp_path: Path, error: dict[str, Any], kind: str, status: int | None
) -> None:
    failure = await _failure_after_text(error, tmp_path)
    assert (failure.kind.value, failure.status) == (kind, status)
    assert failure.message == error["message"]


@pytest.mark.parametrize(
    "error", ["Backend went away", None, ["a", "list"]], ids=["text", "null", "list"]
)
async def test_an_error_inside_the_stream_that_is_not_an_object_is_the_servers_shown_as_it_came(
    tmp_path: Path, error: Any
) -> None:
    failure = await _failure_after_text(error, tmp_path)
    assert (failure.kind, failure.retryable) == (ErrorKind.SERVER, True)
    assert failure.message == f"an error inside the stream: {error}"
