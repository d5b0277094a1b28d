"""Claude through Anthropic's Messages API, streamed with the official ``anthropic`` SDK.

Owns the request shape (system apart, user/assistant turns), the reading of the SSE events
into text deltas and usage, and the mapping of every SDK failure onto ``ProviderError``.
The SDK's own retries are off: ``resilience`` retries. Requests go over the SDK's aiohttp
transport (``DefaultAioHttpClient``), which costs far less CPU than its default one.

The request, its auth, timeouts and HTTP errors stay the SDK's: its raw streaming response
(``with_streaming_response``) raises the same ``APIStatusError`` for a non-2xx status. The
events, though, are read here from the raw SSE body, for the CPU each one costs: the SDK's
stream decodes every event and builds typed (pydantic) objects of all of it, about a fifth of
the provider worker's CPU under load when each event carries one token, to read two fields.
``SseParser`` splits the body into events as the SDK's decoder does; an ``error`` event
becomes the ``ProviderError`` the SDK's ``APIStatusError`` for it was mapped to; the ``async
with`` over the response releases the connection however the stream ends (cancelled, closed
early, failed).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
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
from app.providers.sse import SseParser

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


def _status_error(
    http_status: int, body: object, fallback: str, headers: Mapping[str, str]
) -> ProviderError:
    """An HTTP error, or (``http_status`` below 400) an error event inside a 2xx stream."""
    error_type = _body_type(body) or ""
    if http_status < 400:
        kind = _KINDS_BY_TYPE.get(error_type, ErrorKind.SERVER)
    elif error_type in ("overloaded_error", "rate_limit_error"):
        kind = _KINDS_BY_TYPE[error_type]
    else:
        kind = kind_for_status(http_status)
    return ProviderError(
        kind=kind,
        provider=NAME,
        message=_body_message(body) or fallback,
        # An error event inside a 200 stream has no HTTP status of its own.
        status=http_status if http_status >= 400 else None,
        retry_after=parse_retry_after(headers),
    )


def _error_event(data: str, http_status: int, headers: Mapping[str, str]) -> ProviderError:
    """An ``error`` event in the stream, read as the SDK's stream reads one (its data as JSON
    if it parses, else as text) and mapped as its ``APIStatusError`` for it would be."""
    body: object = data
    try:
        body = json.loads(data)
        fallback = f"{body}"
    except Exception:
        fallback = data or f"Error code: {http_status}"
    return _status_error(http_status, body, fallback, headers)


@dataclass
class _Tally:
    """What a stream's events said so far besides their text: usage and why it stopped."""

    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None

    def read(self, event: Any) -> str | None:
        """The text ``event`` (a decoded event's data) brings, if any; its usage noted."""
        kind = None
        try:
            kind = event.get("type")
            if kind == "content_block_delta":
                delta = event["delta"]
                return delta.get("text") if delta.get("type") == "text_delta" else None
            if kind == "message_start":
                usage = event["message"]["usage"]
                self.input_tokens = usage.get("input_tokens")
                self.output_tokens = usage.get("output_tokens")
            elif kind == "message_delta":
                usage = event["usage"]
                self.output_tokens = usage.get("output_tokens")
                if usage.get("input_tokens") is not None:
                    self.input_tokens = usage["input_tokens"]
                self.stop_reason = event["delta"].get("stop_reason")
        except (AttributeError, KeyError, TypeError) as error:
            # A shape this code does not expect is a bug here, as it was when the SDK's
            # objects lacked the attribute read.
            raise AttributeError(
                f"a {kind!r} event of an unexpected shape: {type(error).__name__}: {error}"
            ) from error
        return None

    def finished(self) -> Finished:
        usage = Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)
        return Finished(usage, self.stop_reason)


def map_error(error: Exception) -> ProviderError:
    """The ``ProviderError`` for any failure the SDK (or the stream under it) raised."""
    if isinstance(error, ProviderError):
        return error
    if isinstance(error, anthropic.APITimeoutError):
        return timeout_error(error, provider=NAME)
    if isinstance(error, anthropic.APIConnectionError):
        return ProviderError(kind=ErrorKind.CONNECTION, provider=NAME, message=str(error))
    if isinstance(error, anthropic.APIStatusError):
        return _status_error(error.status_code, error.body, error.message, error.response.headers)
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
        tally = _Tally()
        parser = SseParser()
        try:
            async with client.messages.with_streaming_response.create(
                **request, stream=True
            ) as response:
                async for chunk in response.iter_bytes():
                    for name, data in parser.feed(chunk):
                        # As the SDK's stream: an error event stops it; an event without a
                        # name, a ping or one without data is passed over; the rest are read
                        # by the type their data names.
                        if name == "error":
                            raise _error_event(data, response.status_code, response.headers)
                        if name is None or name == "ping" or not data:
                            continue
                        # A ValueError maps as unreadable, as before.
                        if text := tally.read(json.loads(data)):
                            yield TextDelta(text)
        except ProviderError:
            raise
        except Exception as error:
            raise map_error(error) from error
        yield tally.finished()
