"""Every fault the fake can inject, through each real SDK, lands as the right ProviderError."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.config import Settings
from app.providers.base import ErrorKind, ProviderError
from tests.fakes import FakeLLMServer, closed_port_url
from tests.providers.conftest import HELLO, MODELS, PROVIDER_CLASSES, collect, fake_settings

PROVIDERS = sorted(PROVIDER_CLASSES)
KEYS = ("test-anthropic-key", "test-gemini-key", "test-openai-key")

HTTP_FAULTS = [
    ("http_401", ErrorKind.AUTH, False),
    ("http_403", ErrorKind.AUTH, False),
    ("http_400", ErrorKind.BAD_REQUEST, False),
    ("http_422", ErrorKind.BAD_REQUEST, False),
    ("http_404", ErrorKind.NOT_FOUND, False),
    ("http_429", ErrorKind.RATE_LIMIT, True),
    ("http_500", ErrorKind.SERVER, True),
    ("http_503", ErrorKind.OVERLOADED, True),
    ("http_529", ErrorKind.OVERLOADED, True),
]


async def _failure(provider_name: str, settings: Settings) -> ProviderError:
    provider = PROVIDER_CLASSES[provider_name](settings)
    with pytest.raises(ProviderError) as caught:
        await collect(
            provider.stream(model=MODELS[provider_name], system="S", messages=HELLO, max_tokens=32)
        )
    error = caught.value
    assert error.provider == provider_name
    assert not any(key in str(error) for key in KEYS)  # keys never reach a message
    return error


@pytest.mark.parametrize("provider_name", PROVIDERS)
@pytest.mark.parametrize(("fault", "kind", "retryable"), HTTP_FAULTS)
async def test_http_error_maps_to_kind_status_and_the_providers_message(
    fake_llm: FakeLLMServer,
    settings: Settings,
    provider_name: str,
    fault: str,
    kind: ErrorKind,
    retryable: bool,
) -> None:
    status = int(fault.removeprefix("http_"))
    fake_llm.script(provider=provider_name, fault=fault, error_message=f"the server says {status}")
    error = await _failure(provider_name, settings)
    assert (error.kind, error.status, error.retryable) == (kind, status, retryable)
    assert error.message == f"the server says {status}"


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_rate_limit_carries_the_retry_after_header(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str
) -> None:
    fake_llm.script(provider=provider_name, fault="http_429", retry_after=7)
    error = await _failure(provider_name, settings)
    assert (error.kind, error.retry_after) == (ErrorKind.RATE_LIMIT, 7.0)


@pytest.mark.parametrize(
    ("provider_name", "kind", "status"),
    [
        ("anthropic", ErrorKind.OVERLOADED, None),  # event: error with overloaded_error
        ("openai", ErrorKind.SERVER, None),  # data: {"error": {"type": "server_error"}}
        ("gemini", ErrorKind.OVERLOADED, 503),  # data: {"error": {"code": 503, "UNAVAILABLE"}}
    ],
)
async def test_error_in_the_middle_of_a_stream_is_mapped_and_retryable(
    fake_llm: FakeLLMServer,
    settings: Settings,
    provider_name: str,
    kind: ErrorKind,
    status: int | None,
) -> None:
    fake_llm.script(
        provider=provider_name,
        reply="one two three",
        fault="mid_stream_error",
        fault_after=2,
        error_message="broke mid-way",
    )
    error = await _failure(provider_name, settings)
    assert (error.kind, error.status, error.message) == (kind, status, "broke mid-way")
    assert error.retryable


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_malformed_chunk_is_a_retryable_server_error(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str
) -> None:
    fake_llm.script(provider=provider_name, reply="one two", fault="malformed_chunk", fault_after=1)
    error = await _failure(provider_name, settings)
    assert (error.kind, error.retryable) == (ErrorKind.SERVER, True)


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_dropped_connection_mid_stream_is_a_connection_error(
    fake_llm: FakeLLMServer, settings: Settings, provider_name: str
) -> None:
    fake_llm.script(provider=provider_name, reply="one two", fault="disconnect", fault_after=1)
    error = await _failure(provider_name, settings)
    assert (error.kind, error.retryable) == (ErrorKind.CONNECTION, True)


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_connection_refused_is_a_connection_error(
    fake_llm: FakeLLMServer, tmp_path: Path, provider_name: str
) -> None:
    refused = closed_port_url()
    settings = fake_settings(
        fake_llm,
        tmp_path,
        ANTHROPIC_BASE_URL=refused,
        OPENAI_BASE_URL=f"{refused}/v1",
        GOOGLE_GEMINI_BASE_URL=refused,
    )
    error = await _failure(provider_name, settings)
    assert (error.kind, error.status, error.retryable) == (ErrorKind.CONNECTION, None, True)


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_a_server_that_hangs_up_unanswered_is_a_connection_error(
    fake_llm: FakeLLMServer, tmp_path: Path, provider_name: str
) -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1024)  # the request arrives; no response is sent
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    settings = fake_settings(
        fake_llm,
        tmp_path,
        ANTHROPIC_BASE_URL=url,
        OPENAI_BASE_URL=f"{url}/v1",
        GOOGLE_GEMINI_BASE_URL=url,
    )
    async with server:
        error = await _failure(provider_name, settings)
    assert (error.kind, error.status, error.retryable) == (ErrorKind.CONNECTION, None, True)


@pytest.mark.parametrize("provider_name", PROVIDERS)
async def test_missing_key_is_a_non_retryable_auth_error_without_a_request(
    fake_llm: FakeLLMServer, tmp_path: Path, provider_name: str
) -> None:
    error = await _failure(provider_name, Settings(home=tmp_path))
    assert (error.kind, error.retryable) == (ErrorKind.AUTH, False)
    assert "not set" in error.message
    assert fake_llm.requests == []
