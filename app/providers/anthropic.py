"""Claude through Anthropic's Messages API, streamed with the official ``anthropic`` SDK.

Owns the request shape (system apart, user/assistant turns), the reading of the SSE events
into text deltas and usage, and the mapping of every SDK failure onto ``ProviderError``.
The SDK's own retries are off: ``resilience`` retries. Requests go over the SDK's aiohttp
transport (``DefaultAioHttpClient``), which costs far less CPU than its default one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
)
from app.providers.keyed import (
    SdkProvider,
    key_status,
    listed_or_defaults,
    require_key,
    timeout_error,
    unmapped_error,
)
from app.providers.resilience import (
    kind_for_status,
    parse_retry_after,
)

NAME = "anthropic"
KEY_ENV = "ANTHROPIC_API_KEY"

# Anthropic names the cause in the body. An error event inside a 200 stream has only that;
# an HTTP error is classed by its status unless the body says overloaded or rate limited.
_KINDS_BY_TYPE = {
    "authentication_error": ErrorKind.AUTH,
    "permission_error": ErrorKind.AUTH,
    "not_found_error": ErrorKind.NOT_FOUND,
    "invalid_request_error": ErrorKind.BAD_REQUEST,
    "request_too_large": ErrorKind.BAD_REQUEST,
    "rate_limit_error": ErrorKind.RATE_LIMIT,
    "overloaded_error": ErrorKind.OVERLOADED,
    "api_error": ErrorKind.SERVER,
    "timeout_error": ErrorKind.TIMEOUT,
}


def build_request(
    *, model: str, system: str, messages: Sequence[Message], max_tokens: int
) -> dict[str, Any]:
    """Keyword arguments for ``messages.create``."""
    request: dict[str, Any] = {
        "model": model,
        "max_tokens": max_tokens,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
    }
    if system:
        request["system"] = system
    return request


def _body_message(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


def _body_type(body: object) -> str | None:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None


def map_error(error: Exception) -> ProviderError:
    """The ``ProviderError`` for any failure the SDK (or the stream under it) raised."""
    if isinstance(error, ProviderError):
        return error
    if isinstance(error, anthropic.APITimeoutError):
        return timeout_error(error, provider=NAME)
    if isinstance(error, anthropic.APIConnectionError):
        return ProviderError(kind=ErrorKind.CONNECTION, provider=NAME, message=str(error))
    if isinstance(error, anthropic.APIStatusError):
        http_status = error.status_code
        error_type = _body_type(error.body) or ""
        if http_status < 400:
            kind = _KINDS_BY_TYPE.get(error_type, ErrorKind.SERVER)
        elif error_type in ("overloaded_error", "rate_limit_error"):
            kind = _KINDS_BY_TYPE[error_type]
        else:
            kind = kind_for_status(http_status)
        return ProviderError(
            kind=kind,
            provider=NAME,
            message=_body_message(error.body) or error.message,
            # An error event inside a 200 stream has no HTTP status of its own.
            status=http_status if http_status >= 400 else None,
            retry_after=parse_retry_after(error.response.headers),
        )
    if isinstance(error, anthropic.APIError):
        return ProviderError(
            kind=ErrorKind.SERVER, provider=NAME, message=_body_message(error.body) or error.message
        )
    return unmapped_error(error, provider=NAME)


class AnthropicProvider(SdkProvider[anthropic.AsyncAnthropic]):
    """The ``anthropic`` provider: Claude models."""

    name = NAME

    def status(self) -> ProviderStatus:
        return key_status(
            name=NAME,
            key=self._settings.anthropic_api_key,
            key_env=KEY_ENV,
            base_url=self._settings.anthropic_base_url,
            default_model=self._settings.anthropic_model,
        )

    async def _close_client(self, client: anthropic.AsyncAnthropic) -> None:
        await client.close()

    def _make_client(self) -> anthropic.AsyncAnthropic:
        return anthropic.AsyncAnthropic(
            api_key=require_key(self._settings.anthropic_api_key, provider=NAME, key_env=KEY_ENV),
            base_url=self._settings.anthropic_base_url,
            max_retries=0,
            timeout=self._settings.request_timeout,
            # aiohttp under the SDK's httpx API: about half the CPU per request and per event.
            http_client=anthropic.DefaultAioHttpClient(),
        )

    async def list_models(self) -> list[str]:
        async def names() -> list[str]:
            return [model.id async for model in self._client.get().models.list()]

        return await listed_or_defaults(
            names,
            [self._settings.anthropic_model],
            provider=NAME,
            secrets=self._settings.secret_values(),
        )

    async def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        client = self._client.get()
        request = build_request(
            model=model, system=system, messages=messages, max_tokens=max_tokens
        )
        input_tokens = output_tokens = 0
        stop_reason: str | None = None
        try:
            events = await client.messages.create(**request, stream=True)
            async with events:
                async for event in events:
                    if event.type == "message_start":
                        input_tokens = event.message.usage.input_tokens
                        output_tokens = event.message.usage.output_tokens
                    elif event.type == "content_block_delta":
                        if event.delta.type == "text_delta" and event.delta.text:
                            yield TextDelta(event.delta.text)
                    elif event.type == "message_delta":
                        output_tokens = event.usage.output_tokens
                        if event.usage.input_tokens is not None:
                            input_tokens = event.usage.input_tokens
                        stop_reason = event.delta.stop_reason
        except Exception as error:
            raise map_error(error) from error
        yield Finished(Usage(input_tokens=input_tokens, output_tokens=output_tokens), stop_reason)
