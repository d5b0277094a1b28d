"""The databases tests run on: SQLite in each test's data folder, or PostgreSQL in a throwaway
database made once per test session (``argue_test_<random>``), migrated to the newest schema,
emptied before each test that uses it and dropped at the end.

The server is the one at 127.0.0.1:5432 with trust authentication, as user ``postgres`` or
``root``; ``ARGUE_TESTS_POSTGRES_URL`` names another (any database on it: the throwaway ones
are made beside it). The throwaway database's time zone is set to one that is not UTC and
not a whole hour off it, so a time stored without its zone would show.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url

from app.db import make_engine
from app.migrate import migrate

BACKENDS = ("sqlite", "postgresql")
ADMIN_URL_ENV = "ARGUE_TESTS_POSTGRES_URL"
DEFAULT_ADMIN_URLS = (
    "postgresql+psycopg://postgres@127.0.0.1:5432/postgres",
    "postgresql+psycopg://root@127.0.0.1:5432/postgres",
)
# Read at import, before the autouse fixture clears every ARGUE_* variable.
ADMIN_URLS = (os.environ[ADMIN_URL_ENV],) if os.environ.get(ADMIN_URL_ENV) else DEFAULT_ADMIN_URLS
OFFSET_ZONE = "Asia/Kathmandu"  # UTC+05:45
HOW_TO_START = (
    "start PostgreSQL on 127.0.0.1:5432 with trust authentication for user postgres or root "
    "(Debian: `apt-get install postgresql && pg_ctlcluster 15 main start`; Docker: `docker run "
    "-d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15`), or set "
    f"{ADMIN_URL_ENV}=postgresql://user@host:port/postgres for a user that may create databases"
)


class PostgresUnavailable(Exception):
    """No PostgreSQL server could be reached to make a throwaway database on."""


@dataclass
class ThrowawayDatabase:
    """A database of its own on the test server, dropped by ``drop``."""

    name: str
    url: str
    admin_url: str
    _tables: list[str] = field(default_factory=list)

    def empty(self) -> None:
        """Delete every row of every table but Alembic's, and restart the id sequences."""
        engine = make_engine(self.url, pool_size=1)
        try:
            with engine.begin() as connection:
                # A connection some earlier test left inside a transaction would hold the
                # tables: fail with a message rather than wait for ever.
                connection.execute(text("SET LOCAL lock_timeout = '10s'"))
                tables = self._tables or _app_tables(connection)
                self._tables = tables
                quoted = ", ".join(f'"{name}"' for name in tables)
                connection.execute(text(f"TRUNCATE {quoted} RESTART IDENTITY CASCADE"))
        finally:
            engine.dispose()

    def drop(self) -> None:
        drop_database(self.admin_url, self.name)


def _app_tables(connection: object) -> list[str]:
    rows = connection.execute(  # type: ignore[attr-defined]
        text(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
            "AND tablename <> 'alembic_version' ORDER BY tablename"
        )
    )
    return [row[0] for row in rows]


def _admin_engine(admin_url: str) -> Engine:
    engine = make_engine(admin_url, pool_size=1)
    return engine.execution_options(isolation_level="AUTOCOMMIT")  # type: ignore[return-value]


def create_database(*, migrated: bool = True) -> ThrowawayDatabase:
    """A new empty database on the first server that answers; raises ``PostgresUnavailable``
    saying what each tried URL answered."""
    failures = []
    for admin_url in ADMIN_URLS:
        name = f"argue_test_{secrets.token_hex(5)}"
        try:
            engine = _admin_engine(admin_url)
            try:
                with engine.connect() as connection:
                    connection.execute(text(f'CREATE DATABASE "{name}"'))
                    connection.execute(
                        text(f"ALTER DATABASE \"{name}\" SET timezone TO '{OFFSET_ZONE}'")
                    )
            finally:
                engine.dispose()
        except Exception as error:  # any failure to reach or use the server: try the next
            shown = make_url(admin_url).render_as_string(hide_password=True)
            failures.append(f"{shown}: {str(error).splitlines()[0]}")
            continue
        url = make_url(admin_url).set(database=name).render_as_string(hide_password=False)
        database = ThrowawayDatabase(name=name, url=url, admin_url=admin_url)
        if migrated:
            engine = make_engine(url, pool_size=1)
            try:
                migrate(engine)
            finally:
                engine.dispose()
        return database
    raise PostgresUnavailable("; ".join(failures))


def drop_database(admin_url: str, name: str) -> None:
    engine = _admin_engine(admin_url)
    try:
        with engine.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


@contextmanager
def statements_sent(engine: Engine, verb: str) -> Iterator[list[str]]:
    """The statements beginning with ``verb`` (``SELECT``, ``UPDATE``…) that ``engine``
    sends while this is open."""
    statements: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith(verb):
            statements.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield statements
    finally:
        event.remove(engine, "before_cursor_execute", record)
