"""What the three hosted-API adapters share: a key that must be set, a status that says so,
one SDK client per event loop, and a model list that falls back to the default."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from pydantic import SecretStr

from app.providers.base import ErrorKind, ProviderError, ProviderStatus

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
