"""The database going away under a running app: every request that needs it is answered 503
with a message to try again (and ``Retry-After``), as JSON for the API and as a page for
people, never a bare 500; which database and why go to the log, without the password; and the
app answers normally again once the database is back.

A real outage on PostgreSQL: the test's own database stops taking connections and loses the
ones it had (``ALLOW_CONNECTIONS false``, then ``pg_terminate_backend``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.web.app import DATABASE_DOWN, create_app
from tests.conftest import fake_settings
from tests.databases import (
    HOW_TO_START,
    PostgresUnavailable,
    ThrowawayDatabase,
    _admin_engine,
    create_database,
)
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers, start_duel

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def database() -> Iterator[ThrowawayDatabase]:
    try:
        made = create_database()
    except PostgresUnavailable as error:
        pytest.skip(f"{error} — {HOW_TO_START}")
    yield made
    made.drop()


def take_connections(database: ThrowawayDatabase, *, allowed: bool) -> None:
    """Let the database take connections again, or refuse them and end the ones it has."""
    engine = _admin_engine(database.admin_url)
    try:
        with engine.connect() as connection:
            flag = "true" if allowed else "false"
            connection.execute(text(f'ALTER DATABASE "{database.name}" ALLOW_CONNECTIONS {flag}'))
            if not allowed:
                connection.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :name AND pid <> pg_backend_pid()"
                    ),
                    {"name": database.name},
                )
    finally:
        engine.dispose()


def test_requests_during_a_database_outage_are_told_to_try_again_and_work_once_it_is_back(
    database: ThrowawayDatabase,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "home", database_url=database.url)
    with TestClient(create_app(settings, providers=http_providers(settings))) as client:
        debate_id = start_duel(client)
        take_connections(database, allowed=False)
        try:
            with caplog.at_level(logging.WARNING, logger="app.web.app"):
                api = client.get(f"/api/debates/{debate_id}")
                page = client.get(f"/debates/{debate_id}")
                started = client.post("/api/debates", json={"topic": "Tea or coffee"})
        finally:
            take_connections(database, allowed=True)
        back = client.get(f"/api/debates/{debate_id}")

    for response in (api, page, started):
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "5"
        assert database.name not in response.text
    assert api.json() == {"detail": DATABASE_DOWN}
    assert page.headers["content-type"].startswith("text/html")
    assert "try again in a moment" in page.text
    logged = [r.getMessage() for r in caplog.records if r.name == "app.web.app"]
    assert any(database.name in line and "could not be used" in line for line in logged)
    assert back.status_code == 200 and back.json()["id"] == debate_id
