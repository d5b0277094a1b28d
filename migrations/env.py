"""Alembic environment: migrates the database named by the caller or by Argue's settings,
SQLite or PostgreSQL (``app.db.make_engine`` takes either form of URL)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

import app.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from app.config import get_settings
from app.db import make_engine
from app.migrate import migration_connection

target_metadata = SQLModel.metadata


def run_migrations() -> None:
    connection = context.config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = context.config.get_main_option("sqlalchemy.url") or get_settings().sqlalchemy_url
    engine = make_engine(url)
    with migration_connection(engine) as conn:
        _run(conn)
    engine.dispose()


def _run(connection: object) -> None:
    # SQLite cannot ALTER most things in place; batch mode rebuilds tables there instead.
    # On PostgreSQL batch mode emits plain ALTER TABLE statements, in one transaction.
    context.configure(
        connection=connection,  # type: ignore[arg-type]
        target_metadata=target_metadata,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


run_migrations()
