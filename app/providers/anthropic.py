"""Claude through Anthropic's Messages API, streamed with the official ``anthropic`` SDK.

Owns the request shape (system apart, user/assistant turns), the reading of the SSE events
into text deltas and usage, and the mapping of every SDK failure onto ``ProviderError``.
The SDK's own retries are off: ``resilience`` retries.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anthropic

from app.config import Settings
from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
)
from app.providers.resilience import (
    kind_for_status,
    parse_retry_after,
    transport_error_kind,
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
        return ProviderError(kind=ErrorKind.TIMEOUT, provider=NAME, message=str(error))
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
    if (transport := transport_error_kind(error)) is not None:
        return ProviderError(
            kind=transport, provider=NAME, message=str(error) or type(error).__name__
        )
    # A response the SDK could not read (a malformed event): the server misbehaved.
    return ProviderError(
        kind=ErrorKind.SERVER,
        provider=NAME,
        message=f"unreadable response: {type(error).__name__}: {error}",
    )


class AnthropicProvider:
    """The ``anthropic`` provider: Claude models."""

    name = NAME

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client: anthropic.AsyncAnthropic | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def status(self) -> ProviderStatus:
        settings = self._settings
        if settings.anthropic_api_key is None:
            reason = f"{KEY_ENV} not set"
        elif settings.anthropic_base_url:
            reason = f"{KEY_ENV} set; using {settings.anthropic_base_url}"
        else:
            reason = f"{KEY_ENV} set"
        return ProviderStatus(
            name=NAME,
            configured=settings.anthropic_api_key is not None,
            reason=reason,
            default_model=settings.anthropic_model,
        )

    def _get_client(self) -> anthropic.AsyncAnthropic:
        key = self._settings.anthropic_api_key
        if key is None:
            raise ProviderError(
                kind=ErrorKind.AUTH, provider=NAME, message=f"{KEY_ENV} not set", retryable=False
            )
        # An SDK client's connection pool belongs to one event loop; make one per loop.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = anthropic.AsyncAnthropic(
                api_key=key.get_secret_value(),
                base_url=self._settings.anthropic_base_url,
                max_retries=0,
                timeout=self._settings.request_timeout,
            )
            self._client_loop = loop
        return self._client

    async def list_models(self) -> list[str]:
        defaults = [self._settings.anthropic_model]
        try:
            client = self._get_client()
            names = [model.id async for model in client.models.list()]
        except Exception:
            return defaults
        return names or defaults

    async def stream(
        self,
        *,
        model: str,
        system: str,
        messages: Sequence[Message],
        max_tokens: int,
    ) -> AsyncIterator[TextDelta | Finished]:
        client = self._get_client()
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
