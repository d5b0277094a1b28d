"""OpenAI and every OpenAI-compatible server, through Chat Completions and the ``openai`` SDK.

The same adapter serves api.openai.com and local servers (Ollama, llama.cpp server, vLLM,
LM Studio) at ``OPENAI_BASE_URL``. Those accept any key, but the SDK requires one, so the
user sets ``OPENAI_API_KEY=anything``. Owns the request shape, the reading of the data-only
SSE chunks into text deltas and usage (estimated when the server reports none), and the
mapping of every SDK failure onto ``ProviderError``. The SDK's own retries are off, and
requests go over its aiohttp transport (``DefaultAioHttpClient``), cheaper than its default.

The request, its auth, timeouts and HTTP errors stay the SDK's: its raw streaming response
(``with_streaming_response``) raises the same ``APIStatusError`` for a non-2xx status. The
chunks are read here from the raw SSE body (``app.providers.sse``), as the SDK's stream reads
them, for the CPU: it builds a typed object of every chunk, five to ten times what reading
the few fields used here costs (``python -m bench.provider_events`` prints both).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import openai

from app.providers.base import (
    ErrorKind,
    Finished,
    Message,
    ProviderError,
    ProviderStatus,
    TextDelta,
    Usage,
    estimate_tokens,
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

NAME = "openai"
KEY_ENV = "OPENAI_API_KEY"
# How long the rest of a body is read after ``[DONE]`` (the SDK's own wait).
DRAIN_SECONDS = 0.1


def build_request(
    *,
    model: str,
    system: str,
    messages: Sequence[Message],
    max_tokens: int,
    official: bool,
) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` (streaming, usage requested).

    OpenAI's newer models reject ``max_tokens`` and want ``max_completion_tokens``; many
    compatible servers know only ``max_tokens``. So the official endpoint gets the new name.
    """
    chat: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    chat += [{"role": m.role, "content": m.content} for m in messages]
    request: dict[str, Any] = {
        "model": model,
        "messages": chat,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request["max_completion_tokens" if official else "max_tokens"] = max_tokens
    return request


def is_official(base_url: str | None) -> bool:
    """Whether requests go to OpenAI itself rather than to a compatible server."""
    return not base_url or "api.openai.com" in base_url


def estimate_usage(*, system: str, messages: Sequence[Message], reply: str) -> Usage:
    prompt = estimate_tokens(system) + sum(estimate_tokens(m.content) for m in messages)
    return Usage(input_tokens=prompt, output_tokens=estimate_tokens(reply), estimated=True)


def _body_message(body: object) -> str | None:
    # The SDK hands over the inner "error" object of {"error": {...}} as the body.
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return None


async def _drain(rest: AsyncIterator[bytes]) -> None:
    """Read what is left of a body after ``[DONE]`` for a moment, as the SDK does, so that
    its connection can be used again; a server that keeps the body open is not waited on."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(DRAIN_SECONDS):
            async for _ in rest:
                pass


def _stream_error(error: object) -> ProviderError:
    """An error object inside a 200 stream, mapped as the SDK's ``APIError`` for it was."""
    message = _body_message(error) or "An error occurred during streaming"
    return ProviderError(kind=ErrorKind.SERVER, provider=NAME, message=message)


@dataclass
class _ChatTally:
    """What a stream's chunks said so far: their text, the usage (if the server sends it),
    why it stopped, and whether ``[DONE]`` came."""

    text: list[str] = field(default_factory=list)
    usage: Usage | None = None
    stop_reason: str | None = None
    done: bool = False

    def read_events(self, events: Iterable[tuple[str | None, str]]) -> Iterator[str]:
        """The text of ``events`` (their names and data, from ``SseParser``), as the SDK's
        stream reads them: an ``error`` object stops the stream; ``[DONE]`` ends it (what
        follows is not read); every other event with data is a chunk."""
        for _, data in events:
            if not data:
                continue
            if data.startswith("[DONE]"):
                self.done = True
                return
            chunk = json.loads(data)  # a ValueError maps as unreadable
            if isinstance(chunk, dict) and chunk.get("error"):
                raise _stream_error(chunk["error"])
            if text := self.read(chunk):
                yield text

    def read(self, chunk: Any) -> str | None:
        """The text ``chunk`` (a decoded chat chunk) brings, if any; its usage noted."""
        try:
            if (usage := chunk.get("usage")) is not None:
                self.usage = Usage(
                    input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"]
                )
            for choice in chunk["choices"][:1]:
                if reason := choice.get("finish_reason"):
                    self.stop_reason = reason
                if text := choice["delta"].get("content"):
                    if not isinstance(text, str):
                        raise TypeError(f"its content is a {type(text).__name__}")
                    self.text.append(text)
                    return text
        except (AttributeError, KeyError, TypeError) as error:
            # A shape this code does not expect is a bug here, as it was when the SDK's
            # objects lacked the attribute read.
            raise AttributeError(
                f"a chat chunk of an unexpected shape: {type(error).__name__}: {error}"
            ) from error
        return None


def map_error(error: Exception) -> ProviderError:
    """The ``ProviderError`` for any failure the SDK (or the stream under it) raised."""
    if isinstance(error, ProviderError):
        return error
    if isinstance(error, openai.APITimeoutError):
        return timeout_error(error, provider=NAME)
    if isinstance(error, openai.APIConnectionError):
        return ProviderError(kind=ErrorKind.CONNECTION, provider=NAME, message=str(error))
    if isinstance(error, openai.APIStatusError):
        return ProviderError(
            kind=kind_for_status(error.status_code),
            provider=NAME,
            message=_body_message(error.body) or error.message,
            status=error.status_code,
            retry_after=parse_retry_after(error.response.headers),
        )
    if isinstance(error, openai.APIError):
        # An error object inside a 200 stream.
        return ProviderError(
            kind=ErrorKind.SERVER, provider=NAME, message=_body_message(error.body) or error.message
        )
    return unmapped_error(error, provider=NAME)


class OpenAIProvider(SdkProvider[openai.AsyncOpenAI]):
    """The ``openai`` provider: OpenAI's models or any OpenAI-compatible server."""

    name = NAME

    def status(self) -> ProviderStatus:
        settings = self._settings
        status = key_status(
            name=NAME,
            key=settings.openai_api_key,
            key_env=KEY_ENV,
            base_url=settings.openai_base_url,
            default_model=settings.openai_model,
        )
        if settings.openai_api_key is None and settings.openai_base_url:
            reason = (
                f"OPENAI_BASE_URL is {settings.openai_base_url} but {KEY_ENV} is not set "
                f"(local servers accept any key: set {KEY_ENV}=anything)"
            )
            return replace(status, reason=reason)
        return status

    async def _close_client(self, client: openai.AsyncOpenAI) -> None:
        await client.close()

    def _make_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=require_key(self._settings.openai_api_key, provider=NAME, key_env=KEY_ENV),
            base_url=self._settings.openai_base_url,
            max_retries=0,
            timeout=self._settings.request_timeout,
            # aiohttp under the SDK's httpx API: less CPU per request and per chunk.
            http_client=openai.DefaultAioHttpClient(),
        )

    async def list_models(self) -> list[str]:
        async def names() -> list[str]:
            return [model.id async for model in self._client.get().models.list()]

        return await listed_or_defaults(
            names,
            [self._settings.openai_model],
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
            model=model,
            system=system,
            messages=messages,
            max_tokens=max_tokens,
            official=is_official(self._settings.openai_base_url),
        )
        tally = _ChatTally()
        parser = SseParser()
        try:
            async with client.chat.completions.with_streaming_response.create(
                **request
            ) as response:
                pieces = response.iter_bytes()
                async for piece in pieces:
                    for text in tally.read_events(parser.feed(piece)):
                        yield TextDelta(text)
                    if tally.done:
                        await _drain(pieces)
                        break
        except ProviderError:
            raise
        except Exception as error:
            raise map_error(error) from error
        usage = tally.usage or estimate_usage(
            system=system, messages=messages, reply="".join(tally.text)
        )
        yield Finished(usage, tally.stop_reason)
