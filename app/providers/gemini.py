"""Gemini through the ``google-genai`` SDK's ``generate_content_stream``.

Owns the request shape (system instruction apart, the assistant's turns under the role
``model``), the reading of the streamed responses into text deltas and usage, and the mapping
of every SDK failure onto ``ProviderError``. The SDK's own retries are off.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from typing import Any

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


# The request in the SDK's dict forms, not its pydantic types: the SDK validates typed objects
# over again and deep-copies a typed config, which costs more than building them from dicts.
# The same request goes on the wire for less of the SDK's CPU per call: a fifth less with
# one message, nearly half with seven.


def build_contents(messages: Sequence[Message]) -> list[types.ContentDict]:
    return [
        {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
        for m in messages
    ]


def build_config(*, system: str, max_tokens: int) -> types.GenerateContentConfigDict:
    config: types.GenerateContentConfigDict = {"max_output_tokens": max_tokens}
    if system:
        config["system_instruction"] = system
    return config


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


def _text_of(chunk: types.GenerateContentResponse) -> str:
    """The answer text in a chunk; thought summaries are not part of the answer."""
    if not chunk.candidates or chunk.candidates[0].content is None:
        return ""
    parts = chunk.candidates[0].content.parts or []
    return "".join(p.text for p in parts if p.text and not p.thought)


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
        client = self._client.get()
        input_tokens = output_tokens = 0
        stop_reason: str | None = None
        try:
            chunks = await client.aio.models.generate_content_stream(
                model=model,
                contents=build_contents(messages),
                config=build_config(system=system, max_tokens=max_tokens),
            )
            async with contextlib.AsyncExitStack() as stack:
                if hasattr(chunks, "aclose"):
                    stack.push_async_callback(chunks.aclose)
                async for chunk in chunks:
                    if usage := chunk.usage_metadata:
                        input_tokens = usage.prompt_token_count or input_tokens
                        # Gemini bills its thinking as output.
                        output_tokens = (usage.candidates_token_count or 0) + (
                            usage.thoughts_token_count or 0
                        ) or output_tokens
                    if chunk.candidates and chunk.candidates[0].finish_reason:
                        stop_reason = str(chunk.candidates[0].finish_reason.value)
                    if text := _text_of(chunk):
                        yield TextDelta(text)
        except Exception as error:
            raise map_error(error) from error
        yield Finished(Usage(input_tokens=input_tokens, output_tokens=output_tokens), stop_reason)
