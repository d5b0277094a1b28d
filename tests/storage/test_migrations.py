"""The Alembic chain on SQLite and PostgreSQL alike: from nothing to the newest schema it
builds exactly the tables the models describe, and every revision steps up and back down."""

from __future__ import annotations

import threading

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import SQLModel

import app.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from app.db import make_engine
from app.migrate import alembic_config, downgrade, migrate


def schema_differences(engine: Engine) -> list[object]:
    """What Alembic's autogenerate would add or change to make the database match the models
    (tables, columns, types, nullability, indexes, constraints); empty when they agree."""
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        return list(compare_metadata(context, SQLModel.metadata))


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def step(engine: Engine, direction: str, target: str) -> None:
    if direction == "up":
        migrate(engine, to=target)
    else:
        downgrade(engine, to=target)


def revisions_oldest_first() -> list[str]:
    script = ScriptDirectory.from_config(alembic_config())
    return [revision.revision for revision in reversed(list(script.walk_revisions()))]


def test_migrating_an_empty_database_builds_exactly_the_models_tables(
    empty_engine: Engine,
) -> None:
    migrate(empty_engine)

    tables = set(inspect(empty_engine).get_table_names())
    assert set(SQLModel.metadata.tables) <= tables
    assert schema_differences(empty_engine) == []
    assert current_revision(empty_engine) == revisions_oldest_first()[-1]
    # References are enforced again once migrated (SQLite's are switched off meanwhile).
    with pytest.raises(IntegrityError), empty_engine.begin() as connection:
        connection.execute(text(FIRST_SCHEMA_ROWS[1]))


# A debate and a turn as the first schema saved them, in plain SQL both databases take.
FIRST_SCHEMA_ROWS = (
    "insert into debate (id, topic, slug, format, topic_type, rounds, history, spec_json, "
    "seats_summary, status, input_tokens, output_tokens, created_at) values ('d1', 'Été', 't', "
    "'duel', 'general', 1, false, '{\"topic\": \"Été\"}', '', 'completed', 3, 4, "
    "'2026-01-01 00:00:00')",
    "insert into turn (debate_id, seq, key, role, label, provider, model, phase, round, "
    "status, text, input_tokens, output_tokens, usage_estimated, attempts, latency_ms, "
    "started_at, finished_at) values ('d1', 1, 'k', 'r', 'L', 'openai', 'm', 'opening', 0, "
    "'completed', 'Hi', 1, 1, false, 1, 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00')",
)


def saved_rows(engine: Engine) -> list[tuple[object, ...]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "select debate.topic, turn.text from debate join turn on turn.debate_id = debate.id"
            )
        )
        return [tuple(row) for row in rows]


def test_every_revision_steps_up_and_down_keeping_the_saved_debates(
    empty_engine: Engine,
) -> None:
    revisions = revisions_oldest_first()
    assert revisions[0] == "0001"
    step(empty_engine, "up", "0001")
    with empty_engine.begin() as connection:
        for statement in FIRST_SCHEMA_ROWS:
            connection.execute(text(statement))

    for revision in revisions[1:]:
        step(empty_engine, "up", revision)
        assert current_revision(empty_engine) == revision
        assert saved_rows(empty_engine) == [("Été", "Hi")]
    for expected in reversed(revisions[:-1]):
        step(empty_engine, "down", "-1")
        assert current_revision(empty_engine) == expected
        assert saved_rows(empty_engine) == [("Été", "Hi")]
    step(empty_engine, "down", "-1")
    assert current_revision(empty_engine) is None
    assert set(inspect(empty_engine).get_table_names()) <= {"alembic_version"}

    migrate(empty_engine)
    assert schema_differences(empty_engine) == []


def test_processes_starting_together_on_postgresql_migrate_it_once(
    empty_postgres_url: str,
) -> None:
    """Web nodes and workers start at once against one database: each migrates on start."""
    engines = [make_engine(empty_postgres_url, pool_size=1) for _ in range(4)]
    failures: list[BaseException] = []
    start = threading.Barrier(len(engines))

    def start_up(engine: Engine) -> None:
        start.wait()
        try:
            migrate(engine)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=start_up, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert failures == []
    assert schema_differences(engines[0]) == []
    for engine in engines:
        engine.dispose()
