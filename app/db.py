"""The database engine and sessions, on SQLite (the default) or PostgreSQL.

- SQLite runs in WAL mode with a busy timeout so many debates can write short transactions
  while pages read. Its built-in ``lower()`` folds ASCII letters only; it is replaced by
  Python's, so a case-insensitive search (``ILIKE`` on PostgreSQL, ``lower() LIKE lower()``
  here) matches "ÉTÉ" to "été" on both databases alike.
- PostgreSQL is reached through psycopg 3 with a bounded pool: ``pool_size`` connections kept,
  as many more while busy, each checked before use (a restarted server leaves dead
  connections behind; ``app.pooled_connections`` tells them without a round trip) and
  renewed after half an hour (so proxies that drop idle connections never hand back a closed
  one). Connecting gives up after ``CONNECT_TIMEOUT`` seconds, so a server that is down fails
  a request instead of hanging it.

Times are stored as UTC on both (``sqlmodel``'s ``UTCDateTime``: ``timestamptz`` on
PostgreSQL), whatever the server's time zone.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, create_engine

from app import database_url, pooled_connections
from app.config import Settings, get_settings

DEFAULT_POOL_SIZE = 10
CONNECT_TIMEOUT = 10
RECYCLE_SECONDS = 1800


def make_engine(url: str, *, pool_size: int = DEFAULT_POOL_SIZE) -> Engine:
    """An engine for ``url`` (any form ``app.database_url`` accepts)."""
    url = database_url.for_sqlalchemy(url)
    if database_url.backend_of(url) == "postgresql":
        return _postgresql_engine(url, pool_size)
    return _sqlite_engine(url)


def _sqlite_engine(url: str) -> Engine:
    # SQLite connections are cheap file handles; a capped pool only adds a way for the
    # event loop to wait on worker threads that hold every connection. Kept: more than the
    # threads that use them at once (app.threads), so none is opened and set up again.
    engine = create_engine(
        url,
        connect_args={"check_same_thread": False, "timeout": 30},
        pool_size=16,
        max_overflow=-1,
    )
    event.listen(engine, "connect", _configure_sqlite)
    return engine


def _postgresql_engine(url: str, pool_size: int) -> Engine:
    engine = create_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=RECYCLE_SECONDS,
        pool_timeout=30,
        connect_args={"connect_timeout": CONNECT_TIMEOUT, "application_name": "argue"},
    )
    pooled_connections.check_on_checkout(engine)
    return engine


def _configure_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
    dbapi_connection.create_function("lower", 1, _unicode_lower, deterministic=True)


def _unicode_lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


@lru_cache(maxsize=8)
def engine_for(url: str, pool_size: int = DEFAULT_POOL_SIZE) -> Engine:
    return make_engine(url, pool_size=pool_size)


def get_engine(settings: Settings | None = None) -> Engine:
    settings = settings or get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return engine_for(settings.sqlalchemy_url, settings.database_pool_size)


def database_failure(error: BaseException, settings: Settings | None = None) -> str | None:
    """What to tell a person when ``error`` is the database refusing or failing to answer
    (server down, wrong password, file locked): the database with its password masked and
    the driver's own words; None when ``error`` is anything else."""
    if not isinstance(error, OperationalError):
        return None
    settings = settings or get_settings()
    reason = " ".join(str(error.orig or error).split())
    for secret in settings.secret_values():
        if secret:
            reason = reason.replace(secret, "***")
    return f"the database {settings.database_label} could not be used: {reason}"


@contextmanager
def read_scope(engine: Engine) -> Iterator[Session]:
    """A session that only reads. On PostgreSQL each of its statements runs on its own, so
    reading costs no ``BEGIN`` and ``COMMIT`` round trips: under PostgreSQL's default
    isolation (read committed) each statement of a transaction sees its own snapshot anyway.
    On SQLite it is a transaction, whose snapshot the reads share at no cost."""
    with Session(_reading(engine), expire_on_commit=False) as session:
        yield session


@lru_cache(maxsize=16)
def _reading(engine: Engine) -> Engine:
    if engine.dialect.name != "postgresql":
        return engine
    return engine.execution_options(isolation_level="AUTOCOMMIT")


@contextmanager
def session_scope(engine: Engine) -> Iterator[Session]:
    """A short unit of work: commit on success, roll back on error."""
    with Session(engine, expire_on_commit=False) as session:
        try:
            yield session
            session.commit()
        except BaseException:
            session.rollback()
            raise
