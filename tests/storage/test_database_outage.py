"""The database going away under a running app: every request that needs it is answered 503
with a message to try again (and ``Retry-After``), as JSON for the API and as a page for
people, never a bare 500; which database and why go to the log, without the password; and the
app answers normally again once the database is back. A debate the outage stopped is recorded
failed once the database answers again (not left showing as running with no job), and resumes.

A real outage on PostgreSQL: the test's own database stops taking connections and loses the
ones it had (``ALLOW_CONNECTIONS false``, then ``pg_terminate_backend``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from app.jobs import DATABASE_STOPPED
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
from tests.web.conftest import http_providers, start_duel, wait_for_debate

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


def app_client(database: ThrowawayDatabase, fake_llm: FakeLLMServer, tmp_path: Path) -> TestClient:
    """The app, in one process, on the test's database."""
    settings = fake_settings(fake_llm, tmp_path / "home", database_url=database.url)
    return TestClient(create_app(settings, providers=http_providers(settings)))


def test_requests_during_a_database_outage_are_told_to_try_again_and_work_once_it_is_back(
    database: ThrowawayDatabase,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with app_client(database, fake_llm, tmp_path) as client:
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


def test_a_debate_the_outage_stopped_is_recorded_failed_once_the_database_is_back_and_resumes(
    database: ThrowawayDatabase,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.set_default_token_delay(0.05)
    with (
        app_client(database, fake_llm, tmp_path) as client,
        caplog.at_level(logging.WARNING, logger="app.jobs"),
    ):
        debate_id = start_duel(client)
        take_connections(database, allowed=False)
        try:
            # The run stops at its next write and waits to record why.
            wait_until(lambda: any("does not answer" in r.getMessage() for r in caplog.records))
        finally:
            take_connections(database, allowed=True)
        fake_llm.set_default_token_delay(0.0)

        assert wait_for_debate(client, debate_id) == "failed"
        failed = client.get(f"/api/debates/{debate_id}").json()
        resumed = client.post(f"/api/debates/{debate_id}/resume")
        assert resumed.status_code == 200, resumed.text
        assert wait_for_debate(client, debate_id) == "completed"

    assert failed["status_reason"] == DATABASE_STOPPED
    assert database.name not in failed["status_reason"]


def wait_until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)
