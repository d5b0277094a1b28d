"""What the three hosted-API adapters share: a key that must be set, a status that says so,
one SDK client per event loop, a model list that falls back to the default, and the reading
of failures that are not the API's own errors."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from pydantic import SecretStr

from app.config import Settings
from app.providers.base import ErrorKind, ProviderError, ProviderStatus
from app.providers.resilience import transport_error_kind

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
# loop runs then, which fails if it was opened on another: so an unclosed client (its loop
# gone, its owner never closing it) is kept until the process ends instead.
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
    list_names: Callable[[], Awaitable[list[str]]], defaults: list[str]
) -> list[str]:
    """The provider's own model list, or the defaults when it cannot be had."""
    try:
        names = await list_names()
    except Exception:
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


def unmapped_error(error: Exception, *, provider: str) -> ProviderError:
    """A failure that is not one of the API's errors: a transport failure by its kind, or a
    response the SDK could not read (a malformed event), which is the server misbehaving."""
    if (kind := transport_error_kind(error)) is not None:
        return ProviderError(
            kind=kind, provider=provider, message=str(error) or type(error).__name__
        )
    return ProviderError(
        kind=ErrorKind.SERVER,
        provider=provider,
        message=f"unreadable response: {type(error).__name__}: {error}",
    )
