"""Sessions that only read (``app.db.read_scope``): on PostgreSQL they open no transaction on
the server, so a read costs no ``BEGIN`` and ``COMMIT`` round trips; a unit of work still does."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.db import make_engine, read_scope, session_scope
from app.models import Debate
from tests.databases import ThrowawayDatabase


@pytest.fixture
def engine(postgres_database: ThrowawayDatabase) -> Iterator[Engine]:
    made = make_engine(postgres_database.url, pool_size=1)
    yield made
    made.dispose()


def server_transaction(session: Session) -> TransactionStatus:
    driver = session.connection().connection.driver_connection
    assert isinstance(driver, psycopg.Connection)
    return driver.info.transaction_status


def test_a_read_session_on_postgresql_opens_no_transaction(engine: Engine) -> None:
    with read_scope(engine) as session:
        session.exec(select(Debate).limit(1)).all()
        assert server_transaction(session) == TransactionStatus.IDLE

    with session_scope(engine) as session:
        session.exec(select(Debate).limit(1)).all()
        assert server_transaction(session) == TransactionStatus.INTRANS


def test_a_unit_of_work_after_a_read_session_on_the_same_connection_is_a_transaction(
    engine: Engine,
) -> None:
    with read_scope(engine) as session:
        session.exec(select(Debate).limit(1)).all()
    with session_scope(engine) as session:  # the pool's one connection, handed back
        session.exec(select(Debate).limit(1)).all()
        assert server_transaction(session) == TransactionStatus.INTRANS
