"""The database engine and sessions. SQLite runs in WAL mode with a busy timeout so many
debates can write short transactions while pages read."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlmodel import Session, create_engine

from app.config import Settings, get_settings


def make_engine(url: str) -> Engine:
    connect_args: dict[str, Any] = {}
    options: dict[str, Any] = {}
    if url.startswith("sqlite"):
        connect_args = {"check_same_thread": False, "timeout": 30}
        # SQLite connections are cheap file handles; a capped pool only adds a way for the
        # event loop to wait on worker threads that hold every connection.
        options = {"pool_size": 8, "max_overflow": -1}
    engine = create_engine(url, connect_args=connect_args, **options)
    if url.startswith("sqlite"):
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    return make_engine(url)


def get_engine(settings: Settings | None = None) -> Engine:
    settings = settings or get_settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    return engine_for(settings.sqlalchemy_url)


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
