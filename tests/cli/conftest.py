"""Fixtures for the command-line tests: ``argue`` driven in-process with its output captured,
every HTTP provider pointed at the wire-level fake server, and a quick retry policy."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from app.cli.main import main
from app.config import Settings
from app.db import make_engine
from tests.fakes.llm_server import FakeLLMServer

# The duel's two seats on the fake OpenAI endpoint: one adapter, scripted by one queue.
DUEL_SEATS = ("--seat", "claude=openai", "--seat", "gemini=openai")
CONVERGENCE_ASK = "Answer in exactly this form"
SYNTHESIS_ASK = "Write the final synthesis"


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


Argue = Callable[..., CliResult]


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, database_url: str | None) -> Path:
    """The data folder (the root conftest already points ARGUE_HOME here); the database is
    in it, or, for a test marked both_databases, also the PostgreSQL one in
    ARGUE_DATABASE_URL."""
    path = tmp_path / "argue-home"
    monkeypatch.setenv("ARGUE_HOME", str(path))
    return path


@pytest.fixture
def fake(fake_llm: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, home: Path) -> FakeLLMServer:
    """OpenAI and Anthropic configured against the fake server; Gemini left unconfigured."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ARGUE_OPENAI_MODEL", "gpt-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    monkeypatch.setenv("ARGUE_RETRY_BASE_DELAY", "0.01")
    monkeypatch.setenv("ARGUE_RETRY_MAX_DELAY", "0.02")
    monkeypatch.setenv("ARGUE_STALL_TIMEOUT", "10")
    return fake_llm


@pytest.fixture
def argue(capsys: pytest.CaptureFixture[str]) -> Argue:
    """Run ``argue ARGS…`` in this process; its exit code and what it printed."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main(list(args))
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def db(home: Path) -> Iterator[Engine]:
    """The same database the commands use, for checking what they saved."""
    engine = make_engine(Settings().sqlalchemy_url)
    yield engine
    engine.dispose()


def script_agreement(server: FakeLLMServer) -> None:
    """Every convergence check says yes and the synthesis agrees; other turns get the
    server's default reply."""
    server.rule(contains=SYNTHESIS_ASK, reply="Agreed position: SQLite is enough for one box.")
    server.rule(contains=CONVERGENCE_ASK, reply="CONVERGED: yes\nREASON: nothing left to counter")
