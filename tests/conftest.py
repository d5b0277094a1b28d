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
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@pytest.fixture
def settings(fake_llm: FakeLLMServer, tmp_path: Path) -> Settings:
    return fake_settings(fake_llm, tmp_path / "argue-home")


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
