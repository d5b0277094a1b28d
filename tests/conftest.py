"""Fixtures shared by every test: a clean environment, settings in a temporary data folder,
a migrated database, an event hub, and the wire-level fake LLM server."""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app.config import Settings
from app.db import make_engine
from app.events import EventHub
from app.migrate import migrate
from tests.databases import BACKENDS, HOW_TO_START, PostgresUnavailable, ThrowawayDatabase
from tests.databases import create_database as create_postgres_database
from tests.fakes.llm_server import FakeLLMServer

# Set by .ci/run: there, a test that would skip fails instead, so a missing service, package
# or permission cannot pass CI unnoticed. Read at import, before any fixture clears ARGUE_*.
NO_SKIP = os.environ.get("ARGUE_TESTS_NO_SKIP") == "1"

PROVIDER_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    "GOOGLE_GENAI_API_VERSION",
    "GOOGLE_GENAI_USE_VERTEXAI",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_LOCATION",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never see the machine's keys, endpoints or Argue settings."""
    import os

    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("ARGUE_"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARGUE_HOME", str(tmp_path / "argue-home"))
    from app.config import get_settings

    get_settings.cache_clear()


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def fake_llm(fake_llm_server: FakeLLMServer) -> Iterator[FakeLLMServer]:
    """The shared fake server, with no scripts, rules or recorded requests left over."""
    fake_llm_server.reset()
    fake_llm_server.set_default_token_delay(0.0)
    yield fake_llm_server
    fake_llm_server.reset()


def fake_settings(server: FakeLLMServer, home: Path, **overrides: object) -> Settings:
    """Settings with all three HTTP providers pointed at the fake server."""
    values: dict[str, object] = {
        "home": home,
        "ANTHROPIC_API_KEY": "test-anthropic-key",
        "ANTHROPIC_BASE_URL": server.anthropic_base_url,
        "GEMINI_API_KEY": "test-gemini-key",
        "GOOGLE_GEMINI_BASE_URL": server.gemini_base_url,
        "OPENAI_API_KEY": "test-openai-key",
        "OPENAI_BASE_URL": server.openai_base_url,
        "retry_base_delay": 0.01,
        "retry_max_delay": 0.05,
        "stall_timeout": 5.0,
        "request_timeout": 30.0,
        # The calls stay in the test's process; tests/web/test_provider_worker.py runs them
        # in the worker, as a server with two cores does by default.
        "provider_worker": False,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


# -- the database: SQLite by default; SQLite and PostgreSQL for tests marked both_databases --


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "both_databases: run the test on SQLite and on PostgreSQL (a throwaway database, "
        "tests/databases.py); its PostgreSQL run skips when no server answers",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "database_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "both_databases"
    ):
        metafunc.parametrize("database_backend", BACKENDS, indirect=True)


@pytest.fixture
def database_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: the database this test's settings point at."""
    backend: str = getattr(request, "param", "sqlite")
    return backend


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[ThrowawayDatabase]:
    """One migrated throwaway PostgreSQL database for the whole session, dropped at its end."""
    try:
        database = create_postgres_database()
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL is not reachable ({error}): {HOW_TO_START}")
    try:
        yield database
    finally:
        database.drop()


@pytest.fixture
def database_url(
    database_backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> str | None:
    """The PostgreSQL URL this test runs on, emptied for it and also set as
    ARGUE_DATABASE_URL (for what reads the environment: the CLI); None on SQLite."""
    if database_backend != "postgresql":
        return None
    database: ThrowawayDatabase = request.getfixturevalue("postgres_database")
    database.empty()
    monkeypatch.setenv("ARGUE_DATABASE_URL", database.url)
    from app.config import get_settings

    get_settings.cache_clear()
    return database.url


@pytest.fixture
def settings(fake_llm: FakeLLMServer, tmp_path: Path, database_url: str | None) -> Settings:
    return fake_settings(fake_llm, tmp_path / "argue-home", database_url=database_url)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.sqlalchemy_url)
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def hub() -> EventHub:
    return EventHub()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()
    if NO_SKIP and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped, and ARGUE_TESTS_NO_SKIP=1 forbids skips: {reason}"
