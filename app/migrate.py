"""Bringing a database to the newest schema with the Alembic migrations in ``migrations/``.

Every migration runs in one transaction on a connection prepared for its database:

- PostgreSQL: several processes (web nodes, workers) may start at once against one database;
  each takes the same transaction-scoped advisory lock first, so one migrates and the others
  then find the schema current.
- SQLite: a migration that changes a table rebuilds it (copy, drop, rename), and dropping a
  debate that turns point at fails while foreign keys are enforced; they are switched off for
  the migration (SQLite only allows that outside a transaction), the result is checked with
  ``PRAGMA foreign_key_check`` before it commits, and they are switched back on.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from alembic import command
from alembic.config import Config
from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

from app.resources import MIGRATIONS_DIR

# Any number both sides agree on; it names Argue's migration lock among the server's others.
MIGRATION_LOCK_ID = 0x61726775  # "argu"


class BrokenReferences(RuntimeError):
    """A migration left rows pointing at rows that are gone (SQLite, checked before commit)."""


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def migrate(engine: Engine, *, to: str = "head") -> None:
    """Create or upgrade the schema; safe to call on every start."""
    config = alembic_config()
    with migration_connection(engine) as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, to)


def downgrade(engine: Engine, *, to: str) -> None:
    """Step the schema back to revision ``to`` (``-1``: one step), keeping the saved rows."""
    config = alembic_config()
    with migration_connection(engine) as connection:
        config.attributes["connection"] = connection
        command.downgrade(config, to)


@contextmanager
def migration_connection(engine: Engine) -> Iterator[Connection]:
    """A connection inside a transaction, ready for migrations; commits when the block ends."""
    with engine.connect() as connection:
        if connection.dialect.name == "sqlite":
            with _sqlite_foreign_keys_off(connection), connection.begin():
                yield connection
                _check_references(connection)
            return
        with connection.begin():
            if connection.dialect.name == "postgresql":
                lock = text("SELECT pg_advisory_xact_lock(:id)")
                connection.execute(lock, {"id": MIGRATION_LOCK_ID})
            yield connection


@contextmanager
def _sqlite_foreign_keys_off(connection: Connection) -> Iterator[None]:
    connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
    connection.commit()
    try:
        yield
    finally:
        if connection.in_transaction():
            connection.rollback()
        connection.exec_driver_sql("PRAGMA foreign_keys=ON")
        connection.commit()


def _check_references(connection: Connection) -> None:
    broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
    if broken:
        tables = sorted({str(row[0]) for row in broken})
        raise BrokenReferences(
            f"the migration left {len(broken)} rows of {', '.join(tables)} pointing at rows "
            "that are gone, and was stopped before it committed"
        )
