"""Whether a pooled PostgreSQL connection may be handed out as it is, or must be pinged first.

A pool that pings every connection before handing it out (SQLAlchemy's ``pool_pre_ping``,
psycopg_pool's ``check_connection``) pays a round trip to the server for every transaction:
with fifty debates ending and starting at once on a cluster, one statement in six that
PostgreSQL ran was such a ping. But an idle connection in a pool receives nothing from the
server unless something happened to it: a server that shuts down or restarts, a backend ended
with ``pg_terminate_backend``, a proxy that drops an idle connection, each sends an error or
closes the socket, and the socket then has something to read. So a connection that is open,
outside any transaction and has nothing waiting on its socket is handed out at once; any
other is pinged, and replaced if the ping fails. Both of the app's pools check this way: the
engine's (``app.db``) and the debate queue's (``app.debate_queue``).
"""

from __future__ import annotations

import select
from typing import Any

import psycopg
from psycopg.pq import TransactionStatus
from psycopg_pool import AsyncConnectionPool
from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DisconnectionError

_ANYTHING_TO_READ = select.POLLIN | select.POLLPRI | select.POLLERR | select.POLLHUP


def needs_ping(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """True unless ``connection`` is open, idle and has nothing from the server to read."""
    if connection.closed or connection.broken:
        return True
    if connection.info.transaction_status != TransactionStatus.IDLE:
        return True
    poller = select.poll()
    poller.register(connection.fileno(), _ANYTHING_TO_READ)
    return bool(poller.poll(0))


def check_on_checkout(engine: Engine) -> None:
    """Have ``engine``'s pool (made without ``pool_pre_ping``) ping only the connections
    ``needs_ping`` doubts; one whose ping fails is replaced by a new one."""

    def checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if isinstance(dbapi_connection, psycopg.Connection) and needs_ping(dbapi_connection):
            _ping(engine, dbapi_connection)

    event.listen(engine, "checkout", checkout)


def _ping(engine: Engine, dbapi_connection: Any) -> None:
    try:
        engine.dialect.do_ping(dbapi_connection)
    except psycopg.Error as error:
        raise DisconnectionError(f"a pooled connection failed its ping: {error}") from error


async def check_async_connection(connection: psycopg.AsyncConnection[Any]) -> None:
    """psycopg_pool's ``check``: raises if ``connection`` is unusable, the pool then
    replaces it; pings only the connections ``needs_ping`` doubts."""
    if needs_ping(connection):
        await AsyncConnectionPool.check_connection(connection)


def async_pool(**options: Any) -> AsyncConnectionPool:
    """An async pool whose connections are checked by ``check_async_connection`` (any
    ``check`` in ``options`` is replaced: the debate queue's library passes its own pinging
    one)."""
    return AsyncConnectionPool(**{**options, "check": check_async_connection})
