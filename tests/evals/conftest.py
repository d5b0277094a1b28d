"""Fixtures for the eval tests: a harness whose every seat is the fake OpenAI endpoint, and
scripted solvers that answer the arithmetic questions right or wrong by rule."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from sqlalchemy.engine import Engine

from app.config import Settings
from app.db import make_engine
from app.evals.harness import Harness
from app.evals.tasks import Question
from app.migrate import migrate
from app.pricing import bundled_table
from app.providers.registry import build_provider
from tests.cli.conftest import argue, fake, home  # noqa: F401 (the CLI's fixtures, shared)
from tests.fakes.llm_server import FakeLLMServer


@pytest.fixture
def eval_engine(engine: Engine) -> Engine:
    """The migrated test database, which holds the eval tables (migration 0004)."""
    return engine


@pytest.fixture
def harness(eval_engine: Engine, settings: Settings) -> Harness:
    return Harness(
        engine=eval_engine,
        settings=settings,
        providers={"openai": build_provider("openai", settings)},
        prices=bundled_table(),
    )


@pytest.fixture
def cli_home(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """The command line's database (in ARGUE_HOME), with the eval tables, for checking it."""
    request.getfixturevalue("home")  # ARGUE_HOME set by the CLI tests' fixture
    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.sqlalchemy_url)
    migrate(engine)
    yield engine
    engine.dispose()


def solver_reply(answer: str) -> str:
    """A reply that reads as an agreeing convergence check and closes on an answer, so the
    same rule serves every turn of a duel and every sample of a vote."""
    return f"Working it out step by step.\nCONVERGED: yes\nREASON: settled\n**Answer:** {answer}."


def script_answers(
    server: FakeLLMServer, questions: Sequence[Question], right: Sequence[bool]
) -> None:
    """Question i is answered correctly when ``right[i]``, else off by one."""
    for question, is_right in zip(questions, right, strict=True):
        given = question.expected if is_right else str(int(question.expected) + 1)
        server.rule(contains=question.text, reply=solver_reply(given))
