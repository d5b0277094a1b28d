"""Gemini through the ``google-genai`` SDK.

Owns the request in the API's JSON form (system instruction apart, the assistant's turns under
the role ``model``), the reading of the streamed chunks into text deltas and usage, and the
mapping of every SDK failure onto ``ProviderError``. The SDK's own retries are off.

The request, its key, base URL, API version, timeout and transport, and its errors stay the
SDK's: the stream comes from the SDK's API client (``client.aio._api_client``), the one its
``generate_content_stream`` calls. Its ``_build_request`` and ``_async_request`` make the
request and raise the same ``APIError`` for a non-2xx status; the response they return reads
the SSE body into each chunk's JSON, and an error inside the stream (a chunk naming an
``error``) is raised as ``APIError`` here, as the client's ``async_request_streamed`` does.
The chunks are read here, for the CPU: ``generate_content_stream`` builds a typed response of
every chunk, seven to eight times what reading the few fields used here costs (``python -m
bench.provider_events`` prints both), and ``async_request_streamed`` turns each chunk back
into JSON text in a pydantic wrapper, to be read again. Unlike the other two SDKs google-genai
has no public raw stream (it refuses ``should_return_http_response`` for streams). That client
is not the SDK's public API: the bound on google-genai's major version in pyproject.toml and
the tests against the fake Gemini API hold it.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from google import genai
from google.genai import errors, types

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
    unmapped_error,
)
from app.providers.resilience import kind_for_status, parse_retry_after

NAME = "gemini"
KEY_ENV = "GEMINI_API_KEY"
KEY_ENV_TEXT = f"{KEY_ENV} (or GOOGLE_API_KEY)"

# Google's status names, for errors that arrive inside a stream without an HTTP status.
_KINDS_BY_STATUS = {
    "UNAUTHENTICATED": ErrorKind.AUTH,
    "PERMISSION_DENIED": ErrorKind.AUTH,
    "NOT_FOUND": ErrorKind.NOT_FOUND,
    "INVALID_ARGUMENT": ErrorKind.BAD_REQUEST,
    "FAILED_PRECONDITION": ErrorKind.BAD_REQUEST,
    "RESOURCE_EXHAUSTED": ErrorKind.RATE_LIMIT,
    "UNAVAILABLE": ErrorKind.OVERLOADED,
    "INTERNAL": ErrorKind.SERVER,
    "DEADLINE_EXCEEDED": ErrorKind.TIMEOUT,
}


def build_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [
        {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
        for m in messages
    ]


def build_request(*, system: str, messages: Sequence[Message], max_tokens: int) -> dict[str, Any]:
    """The body of a ``streamGenerateContent`` request, as the SDK would send it."""
    request: dict[str, Any] = {
        "contents": build_contents(messages),
        "generationConfig": {"maxOutputTokens": max_tokens},
    }
    if system:
        request["systemInstruction"] = {"parts": [{"text": system}], "role": "user"}
    return request


def stream_path(model: str) -> str:
    """The API path of ``model``'s streamed replies, formed as the SDK forms it: ``models/``
    before a bare name. The name is part of the path, so what the SDK refuses in one (``..``,
    ``?``, ``&``) is refused here too, before any request."""
    if not model or any(part in model for part in ("..", "?", "&")):
        raise ProviderError(
            kind=ErrorKind.BAD_REQUEST,
            provider=NAME,
            message=f"{model!r} is not a Gemini model name (no '..', '?' or '&')",
        )
    if not model.startswith(("models/", "tunedModels/")):
        model = f"models/{model}"
    return f"{model}:streamGenerateContent?alt=sse"


def _retry_delay_from_details(details: Any) -> float | None:
    """The ``RetryInfo`` detail Google puts in a 429 body, e.g. ``"retryDelay": "12s"``."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and (match := re.fullmatch(r"([\d.]+)s", delay)):
            return float(match.group(1))
    return None


def _headers(response: Any) -> dict[str, str]:
    headers = getattr(response, "headers", None)
    if headers is None:
        return {}
    return {str(k).lower(): str(v) for k, v in headers.items()}


def map_error(error: Exception) -> ProviderError:
    """The ``ProviderError`` for any failure the SDK (or the stream under it) raised."""
    if isinstance(error, ProviderError):
        return error
    if isinstance(error, errors.APIError):
        status = error.code if isinstance(error.code, int) else None
        kind = _KINDS_BY_STATUS.get(error.status or "") if not status else None
        kind = kind or kind_for_status(status or 0)
        retry_after = parse_retry_after(_headers(error.response))
        if retry_after is None:
            retry_after = _retry_delay_from_details(error.details)
        return ProviderError(
            kind=kind,
            provider=NAME,
            message=error.message or str(error),
            status=status,
            retry_after=retry_after,
        )
    return unmapped_error(error, provider=NAME)


@dataclass
class _ChunkTally:
    """What a stream's chunks said so far: the usage the last of them reported, and why the
    reply stopped."""

    input_tokens: int = 0
    output_tokens: int = 0
    stop_reason: str | None = None

    def read(self, chunk: Any) -> str:
        """The answer text of one chunk (its JSON, read); thought summaries are not part of
        the answer. Its usage and finish reason are noted."""
        try:
            if usage := chunk.get("usageMetadata"):
                self.input_tokens = usage.get("promptTokenCount") or self.input_tokens
                # Gemini bills its thinking as output.
                self.output_tokens = (usage.get("candidatesTokenCount") or 0) + (
                    usage.get("thoughtsTokenCount") or 0
                ) or self.output_tokens
            for candidate in (chunk.get("candidates") or ())[:1]:
                if reason := candidate.get("finishReason"):
                    self.stop_reason = str(reason)
                parts = (candidate.get("content") or {}).get("parts") or ()
                return "".join(_text(part) for part in parts if not part.get("thought"))
        except (AttributeError, KeyError, TypeError) as error:
            # A shape this code does not expect is a bug here, as it was when the SDK's
            # objects lacked the attribute read.
            raise AttributeError(
                f"a Gemini chunk of an unexpected shape: {type(error).__name__}: {error}"
            ) from error
        return ""


async def _raise_stream_error(chunk: dict[str, Any], response: Any) -> None:
    """An error sent inside the stream, raised as the SDK raises it (one without a numeric
    code as a plain ``APIError``, its status naming the kind). An error that is not an
    object is the server's failure, shown as it came: the SDK would fail reading it."""
    error = chunk["error"]
    if not isinstance(error, dict):
        raise ProviderError(
            kind=ErrorKind.SERVER,
            provider=NAME,
            message=f"an error inside the stream: {str(error)[:500]}",
        )
    code = error.get("code")
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if isinstance(code, int) and code:
        await errors.APIError.raise_error_async(code, chunk, response)
    raise errors.APIError(0, chunk, response)


def _text(part: dict[str, Any]) -> str:
    text = part.get("text") or ""
    if not isinstance(text, str):
        raise TypeError(f"a part's text is a {type(text).__name__}")
    return text


class GeminiProvider(SdkProvider[genai.Client]):
    """The ``gemini`` provider: Google's Gemini models."""

    name = NAME

    def status(self) -> ProviderStatus:
        return key_status(
            name=NAME,
            key=self._settings.gemini_api_key,
            key_env=KEY_ENV_TEXT,
            base_url=self._settings.gemini_base_url,
            default_model=self._settings.gemini_model,
        )

    async def _close_client(self, client: genai.Client) -> None:
        await client.aio.aclose()

    def _make_client(self) -> genai.Client:
        key = require_key(self._settings.gemini_api_key, provider=NAME, key_env=KEY_ENV_TEXT)
        options = types.HttpOptions(
            base_url=self._settings.gemini_base_url,
            timeout=int(self._settings.request_timeout * 1000),  # milliseconds
            # One attempt: no tenacity retries and no hidden sleeps on connection errors.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        return genai.Client(api_key=key, vertexai=False, http_options=options)

    async def list_models(self) -> list[str]:
        async def names() -> list[str]:
            return [
                (model.name or "").removeprefix("models/")
                async for model in await self._client.get().aio.models.list()
                if model.name
                and (not model.supported_actions or "generateContent" in model.supported_actions)
            ]

        return await listed_or_defaults(
            names,
            [self._settings.gemini_model],
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
        request = build_request(system=system, messages=messages, max_tokens=max_tokens)
        path = stream_path(model)
        api = self._client.get().aio._api_client
        tally = _ChunkTally()
        try:
            response = await api._async_request(
                http_request=api._build_request("post", path, request), stream=True
            )
            # An async generator, typed as an iterator: closing it releases the connection
            # when the reading stops early.
            segments = cast(AsyncGenerator[Any, None], response.async_segments())
            async with contextlib.aclosing(segments) as chunks:
                async for chunk in chunks:
                    if isinstance(chunk, dict) and "error" in chunk:
                        await _raise_stream_error(chunk, response)
                    if text := tally.read(chunk):
                        yield TextDelta(text)
        except Exception as error:
            raise map_error(error) from error
        usage = Usage(input_tokens=tally.input_tokens, output_tokens=tally.output_tokens)
        yield Finished(usage, tally.stop_reason)
