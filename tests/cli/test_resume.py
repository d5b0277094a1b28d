"""A debate that failed in ``argue run`` says how to resume, and ``argue resume`` runs only
the turns that never completed."""

from __future__ import annotations

import re

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.models import Debate, Turn
from tests.cli.conftest import DUEL_SEATS, Argue
from tests.fakes.llm_server import FakeLLMServer


def _turns(db: Engine, debate_id: str) -> list[Turn]:
    with Session(db) as session:
        query = select(Turn).where(Turn.debate_id == debate_id).order_by(col(Turn.seq))
        return list(session.exec(query).all())


def _debate(db: Engine, debate_id: str) -> Debate:
    with Session(db) as session:
        debate = session.get(Debate, debate_id)
        assert debate is not None
        return debate


def _debate_id(output: str) -> str:
    match = re.search(r"^Debate ([0-9a-f]+) ", output, re.MULTILINE)
    assert match, output
    return match.group(1)


@pytest.fixture
def failed_debate(
    fake: FakeLLMServer, argue: Argue, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, str]:
    """A duel whose first call meets a 500 with no retry left: one opening fails, the other
    completes. Its id and what ``argue run`` printed."""
    monkeypatch.setenv("ARGUE_RETRY_MAX_ATTEMPTS", "1")
    fake.script(provider="openai", fault="http_500", error_message="The GPU caught fire")
    result = argue("run", "a topic", "--rounds", "2", *DUEL_SEATS)
    assert result.code == 1, result.out + result.err
    return _debate_id(result.out), result.out


def test_a_failed_run_prints_the_provider_message_and_how_to_resume(
    failed_debate: tuple[str, str], db: Engine
) -> None:
    debate_id, out = failed_debate

    assert "failed (server 500): The GPU caught fire" in out
    assert f"resume with: argue resume {debate_id}" in out
    assert _debate(db, debate_id).status == "failed"


def test_resume_runs_only_the_unfinished_turns(
    failed_debate: tuple[str, str], fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    debate_id, _ = failed_debate
    before = _turns(db, debate_id)
    kept = [turn for turn in before if turn.status == "completed"]
    assert [turn.phase for turn in kept] == ["opening"]
    requests_before = len(fake.requests)

    result = argue("resume", debate_id)

    assert result.code == 0, result.out + result.err
    assert "1 completed turn(s) kept" in result.out
    after = _turns(db, debate_id)
    assert all(turn.status == "completed" for turn in after)
    # The opening that had completed was not asked for again: same row, same text.
    again = next(turn for turn in after if turn.key == kept[0].key)
    assert (again.id, again.text, again.finished_at) == (
        kept[0].id,
        kept[0].text,
        kept[0].finished_at,
    )
    # One call per turn still missing: the failed opening, rebuttal, response, check, synthesis.
    assert len(fake.requests) - requests_before == len(after) - 1 == 5
    assert "══ Synthesis" in result.out
    assert _debate(db, debate_id).status == "completed"
    assert _debate(db, debate_id).outputs is not None


def test_a_completed_debate_is_not_resumed(fake: FakeLLMServer, argue: Argue) -> None:
    debate_id = _debate_id(argue("run", "a topic", "--rounds", "1", *DUEL_SEATS).out)
    requests_before = len(fake.requests)

    result = argue("resume", debate_id)

    assert result.code == 1
    assert f"debate {debate_id} is completed; nothing to resume" in result.err
    assert len(fake.requests) == requests_before


def test_resuming_an_unknown_debate_exits_1(fake: FakeLLMServer, argue: Argue) -> None:
    result = argue("resume", "nosuchdebate")

    assert result.code == 1
    assert "no debate 'nosuchdebate'" in result.err
