"""What the three hosted-API adapters share: a key that must be set, a status that says so,
one SDK client per event loop, a model list that falls back to the default, and the reading
of failures that are not the API's own errors."""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Generic, TypeVar

import aiohttp
from pydantic import SecretStr

from app.config import Settings
from app.providers.base import ErrorKind, ProviderError, ProviderStatus, redact
from app.providers.resilience import internal_error, transport_error_kind

log = logging.getLogger(__name__)

Client = TypeVar("Client")


def key_status(
    *,
    name: str,
    key: SecretStr | None,
    key_env: str,
    base_url: str | None,
    default_model: str,
) -> ProviderStatus:
    """Configured when the key is set; the reason names the variable and any base URL."""
    if key is None:
        reason = f"{key_env} not set"
    elif base_url:
        reason = f"{key_env} set; using {base_url}"
    else:
        reason = f"{key_env} set"
    return ProviderStatus(
        name=name, configured=key is not None, reason=reason, default_model=default_model
    )


def require_key(key: SecretStr | None, *, provider: str, key_env: str) -> str:
    if key is None:
        raise ProviderError(
            kind=ErrorKind.AUTH, provider=provider, message=f"{key_env} not set", retryable=False
        )
    return key.get_secret_value()


# Every client not yet closed by its owner. A collected SDK client closes itself on whatever
# loop runs then, which fails if it was opened on another, or (an aiohttp session) complains
# of being left open: so an unclosed client (its loop gone, its owner never closing it) is
# kept until the process ends instead.
_UNCLOSED: list[object] = []


class PerLoopClient(Generic[Client]):
    """An SDK client's connection pool belongs to the event loop that opened it, so each
    loop (the server's, a test's, a command's ``asyncio.run``) gets its own client; the owner
    closes it with ``aclose`` before that loop ends."""

    def __init__(
        self, make: Callable[[], Client], close: Callable[[Client], Awaitable[None]]
    ) -> None:
        self._make = make
        self._close = close
        self._client: Client | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> Client:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._make()
            self._loop = loop
            _UNCLOSED.append(self._client)
        return self._client

    async def aclose(self) -> None:
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is not None and loop is asyncio.get_running_loop():
            await self._close(client)
            _UNCLOSED.remove(client)


async def listed_or_defaults(
    list_names: Callable[[], Awaitable[list[str]]],
    defaults: list[str],
    *,
    provider: str,
    secrets: Iterable[str],
) -> list[str]:
    """The provider's own model list, or the defaults when it cannot be had (with a log line
    saying why: without one, a wrong key or URL would look like a short model list)."""
    try:
        names = await list_names()
    except Exception as error:
        # The message only, redacted: some APIs quote the key they refused.
        why = redact(f"{type(error).__name__}: {error}", secrets)
        log.warning("%s: could not list models (%s); showing the default", provider, why)
        return defaults
    return names or defaults


class SdkProvider(ABC, Generic[Client]):
    """Base of the adapters over a hosted API's SDK: their settings and one client per loop,
    closed by ``aclose`` before the loop ends."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._client = PerLoopClient(self._make_client, self._close_client)

    async def aclose(self) -> None:
        await self._client.aclose()

    @abstractmethod
    def _make_client(self) -> Client: ...

    @abstractmethod
    async def _close_client(self, client: Client) -> None: ...


def aiohttp_error(error: BaseException) -> aiohttp.ClientError | None:
    """The aiohttp error behind a failure, if any: google-genai raises aiohttp's errors as
    they are; the anthropic and openai SDKs' aiohttp transport wraps them once or twice."""
    seen: BaseException | None = error
    for _ in range(3):
        if seen is None or isinstance(seen, aiohttp.ClientError):
            return seen
        seen = seen.__cause__
    return None


def timeout_error(error: BaseException, *, provider: str) -> ProviderError:
    """The ``ProviderError`` for an SDK's timeout error (anthropic's and openai's
    ``APITimeoutError``). Their aiohttp transport (some versions) reports every aiohttp
    connection error, timed out or not, as a connect timeout: a refused or dropped connection
    is a connection error, in the SDKs' own words for one."""
    below = aiohttp_error(error)
    if isinstance(below, aiohttp.ClientConnectionError) and not isinstance(below, TimeoutError):
        return ProviderError(
            kind=ErrorKind.CONNECTION, provider=provider, message="Connection error."
        )
    return ProviderError(kind=ErrorKind.TIMEOUT, provider=provider, message=str(error))


def _aiohttp_failure(error: aiohttp.ClientError) -> tuple[ErrorKind, str] | None:
    """The kind and a plain message for a network failure aiohttp reported."""
    if isinstance(error, TimeoutError):  # aiohttp's timeouts are TimeoutErrors too
        return ErrorKind.TIMEOUT, str(error) or "the request timed out"
    if isinstance(error, aiohttp.ClientConnectorError) and not isinstance(
        error, aiohttp.ClientSSLError
    ):
        # Not str(error): that quotes the SSL context's repr.
        why = error.strerror or type(error.os_error).__name__
        return ErrorKind.CONNECTION, f"Cannot connect to host {error.host}:{error.port} [{why}]"
    if isinstance(error, aiohttp.ClientPayloadError):
        # The body broke off (the connection closed mid-response) or its framing was bad.
        detail = getattr(error.__cause__, "message", None)
        reason = detail if isinstance(detail, str) and detail else str(error)
        return ErrorKind.CONNECTION, f"incomplete response: {reason}"
    if isinstance(error, aiohttp.ClientConnectionError):
        return ErrorKind.CONNECTION, str(error) or type(error).__name__
    return None


def unmapped_error(error: Exception, *, provider: str) -> ProviderError:
    """A failure that is not one of the API's errors: a transport failure by its kind; a
    response the SDK could not read (JSON that does not parse or validate: a ``ValueError``),
    which is the server misbehaving; anything else is a bug in the adapter."""
    below = aiohttp_error(error)
    if below is not None and (failure := _aiohttp_failure(below)) is not None:
        return ProviderError(kind=failure[0], provider=provider, message=failure[1])
    if (kind := transport_error_kind(error)) is not None:
        # A bare TimeoutError (google-genai's total timeout over aiohttp) has no words.
        message = str(error) or (
            "the request timed out" if kind is ErrorKind.TIMEOUT else type(error).__name__
        )
        return ProviderError(kind=kind, provider=provider, message=message)
    if isinstance(error, ValueError):
        return ProviderError(
            kind=ErrorKind.SERVER,
            provider=provider,
            message=f"unreadable response: {type(error).__name__}: {error}",
        )
    return internal_error(error, provider=provider)
