"""Readiness: whether the services this process needs answer right now.

The database always counts; Redis counts when ``ARGUE_REDIS_URL`` is set, and is reported
"not configured" otherwise. Each check is one round trip (``SELECT 1``, ``PING``) bounded by
a timeout, and a failure is reported with the service's own message, shortened and with
every secret (the database password, the keys, a Redis password) masked: the answer is for
a load balancer or an operator, and it is served without a credential.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import Settings

CHECK_TIMEOUT = 3.0
MAX_ERROR_CHARS = 300

ServiceStatus = Literal["ok", "error", "not configured"]


@dataclass(frozen=True)
class ServiceCheck:
    status: ServiceStatus
    error: str | None = None


@dataclass(frozen=True)
class Readiness:
    database: ServiceCheck
    redis: ServiceCheck

    @property
    def ready(self) -> bool:
        return all(check.status != "error" for check in (self.database, self.redis))


def redis_url_of(settings: Settings) -> str | None:
    if settings.redis_url is None:
        return None
    return settings.redis_url.get_secret_value() or None


async def check_readiness(settings: Settings, engine: Engine) -> Readiness:
    secrets = settings.secret_values()
    redis_url = redis_url_of(settings)
    database_check = _bounded(lambda: _ping_database(engine), "the database", secrets)
    if redis_url is None:
        database = await database_check
        return Readiness(database=database, redis=ServiceCheck("not configured"))
    database, redis = await asyncio.gather(
        database_check, _bounded(lambda: _ping_redis(redis_url), "Redis", secrets)
    )
    return Readiness(database=database, redis=redis)


async def _bounded(check: Callable[[], None], what: str, secrets: list[str]) -> ServiceCheck:
    # In a worker thread: both clients block. A check that overruns is abandoned to finish
    # on its own; the answer does not wait for it.
    try:
        await asyncio.wait_for(asyncio.to_thread(check), CHECK_TIMEOUT)
    except TimeoutError:
        return ServiceCheck("error", f"{what} did not answer within {CHECK_TIMEOUT:g} s")
    except Exception as error:  # whatever the client raised is the service's answer
        return ServiceCheck("error", error_text(error, secrets))
    return ServiceCheck("ok")


def _ping_database(engine: Engine) -> None:
    with engine.connect() as connection:
        connection.execute(text("SELECT 1"))


def _ping_redis(url: str) -> None:
    try:
        import redis
    except ImportError as error:
        raise RuntimeError("ARGUE_REDIS_URL is set but redis-py is not installed") from error
    client = redis.Redis.from_url(
        url, socket_connect_timeout=CHECK_TIMEOUT, socket_timeout=CHECK_TIMEOUT
    )
    try:
        client.ping()
    finally:
        client.close()


def error_text(error: BaseException, secrets: Iterable[str]) -> str:
    """The client's message for ``error`` (the driver's own for a database error), on one
    line, cut short, secrets masked."""
    cause: BaseException = getattr(error, "orig", None) or error
    message = " ".join(str(cause).split()) or type(cause).__name__
    for secret in sorted(set(secrets), key=len, reverse=True):
        if secret:
            message = message.replace(secret, "***")
    if len(message) > MAX_ERROR_CHARS:
        message = message[: MAX_ERROR_CHARS - 1] + "…"
    return message
