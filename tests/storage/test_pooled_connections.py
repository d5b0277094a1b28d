"""The engine's pooled PostgreSQL connections (``app.pooled_connections``): one the server
ended is replaced before it is handed out, and one in steady use is handed out without a ping
to the server."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.db import make_engine
from app.pooled_connections import needs_ping
from tests.databases import ThrowawayDatabase, _admin_engine


@pytest.fixture
def engine(postgres_database: ThrowawayDatabase) -> Iterator[Engine]:
    made = make_engine(postgres_database.url, pool_size=1)
    yield made
    made.dispose()


@pytest.fixture
def pings(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ping the engine's pool sends, counted as it goes to the server."""
    sent: list[object] = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection: Any) -> bool:
        sent.append(dbapi_connection)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return sent


def backend_pid(engine: Engine) -> int:
    with engine.connect() as connection:
        pid: int = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        return pid


def end_backend(database: ThrowawayDatabase, pid: int) -> None:
    admin = _admin_engine(database.admin_url)
    try:
        with admin.connect() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    finally:
        admin.dispose()


def pooled_driver_connection(engine: Engine) -> psycopg.Connection[Any]:
    """The psycopg connection idle in ``engine``'s pool of one (checked out and back)."""
    raw = engine.raw_connection()
    try:
        connection = raw.driver_connection
        assert isinstance(connection, psycopg.Connection)
        return connection
    finally:
        raw.close()


def wait_for(condition: Any, limit: float = 5.0) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_a_pooled_connection_the_server_ended_is_replaced_before_it_is_handed_out(
    postgres_database: ThrowawayDatabase, engine: Engine, pings: list[object]
) -> None:
    first = backend_pid(engine)
    idle = pooled_driver_connection(engine)
    end_backend(postgres_database, first)
    assert wait_for(lambda: needs_ping(idle)), "the ended connection never showed it"

    second = backend_pid(engine)  # would raise if the dead connection were handed out

    assert second != first
    assert pings == [idle]  # the doubted connection was pinged, and failed


def test_a_connection_in_steady_use_is_handed_out_without_a_ping(
    engine: Engine, pings: list[object]
) -> None:
    pids = {backend_pid(engine) for _ in range(20)}

    assert len(pids) == 1  # the one pooled connection, reused
    assert pings == []


def test_a_connection_is_doubted_inside_a_transaction_and_once_closed(engine: Engine) -> None:
    connection = pooled_driver_connection(engine)
    assert not needs_ping(connection)

    connection.execute("SELECT 1")  # not in autocommit: this opens a transaction
    assert needs_ping(connection)
    connection.rollback()
    assert not needs_ping(connection)

    connection.close()
    assert needs_ping(connection)
