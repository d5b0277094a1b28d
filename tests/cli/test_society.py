"""``argue run --format society``: the agents answer, update, and the majority is saved."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.models import Debate
from tests.cli.conftest import Argue
from tests.fakes.llm_server import FakeLLMServer

QUESTION = "What is 17 * 3?"
SEATS = ("--seat", "agent_1=anthropic", "--seat", "agent_2=openai", "--seat", "agent_3=openai")


def test_run_format_society_saves_the_majority_answer_and_its_agreement(
    fake: FakeLLMServer, argue: Argue, db: Engine, home: Path
) -> None:
    fake.rule(contains=QUESTION, provider="anthropic", reply="Thinking.\nAnswer: 50")
    fake.rule(contains=QUESTION, provider="openai", reply="Seventeen threes.\nAnswer: 51")

    result = argue("run", "--format", "society", "--rounds", "1", QUESTION, *SEATS)

    assert result.code == 0, result.err
    with Session(db) as session:
        debates = session.exec(select(Debate)).all()
    assert len(debates) == 1
    assert debates[0].format == "society"
    assert debates[0].synthesis == "Final answer: 51 (2 of 3 agents agree).\n\nAnswer: 51"
    finals = list((home / "finals").glob("*.md"))
    assert len(finals) == 1
    assert "Final answer: 51 (2 of 3 agents agree)." in finals[0].read_text()


def test_run_format_society_without_rounds_runs_two_update_rounds_as_du_et_al(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    fake.rule(contains=QUESTION, provider="anthropic", reply="Answer: 51")
    fake.rule(contains=QUESTION, provider="openai", reply="Answer: 51")

    result = argue("run", "--format", "society", QUESTION, *SEATS)

    assert result.code == 0, result.err
    with Session(db) as session:
        [debate] = session.exec(select(Debate)).all()
    assert debate.rounds == 2
    assert debate.rounds_run == 3  # the first answers, then two rounds of updates
