"""``argue followup`` asks a completed debate a question and shows the answers as they come;
``argue rerun`` runs a debate again with a seat changed, linked to the original."""

from __future__ import annotations

import re

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.models import Debate, Turn
from tests.cli.conftest import DUEL_SEATS, Argue, script_agreement
from tests.fakes.llm_server import FakeLLMServer


def _debate_id(output: str) -> str:
    match = re.search(r"^Debate ([0-9a-f]+) ", output, re.MULTILINE)
    assert match, output
    return match.group(1)


def _debate(db: Engine, debate_id: str) -> Debate:
    with Session(db) as session:
        debate = session.get(Debate, debate_id)
        assert debate is not None
        return debate


def _turns(db: Engine, debate_id: str) -> list[Turn]:
    with Session(db) as session:
        query = select(Turn).where(Turn.debate_id == debate_id).order_by(col(Turn.seq))
        return list(session.exec(query).all())


def _completed_duel(fake: FakeLLMServer, argue: Argue) -> str:
    script_agreement(fake)
    result = argue("run", "SQLite or Postgres?", "--rounds", "1", *DUEL_SEATS)
    assert result.code == 0, result.out + result.err
    return _debate_id(result.out)


def test_followup_streams_the_answers_and_saves_them_with_the_debate(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    debate_id = _completed_duel(fake, argue)
    fake.rule(contains="Follow-up question 1", reply="CLI-ANSWER: Postgres once you shard.")

    result = argue("followup", debate_id[:6], "What", "if", "we", "shard?")

    assert result.code == 0, result.out + result.err
    assert "Question: What if we shard?" in result.out
    assert result.out.count("CLI-ANSWER: Postgres once you shard.") >= 2
    assert "Answered by Claude, Gemini" in result.out
    answers = [t for t in _turns(db, debate_id) if t.phase == "followup"]
    assert sorted(t.key for t in answers) == ["q1.followup.claude", "q1.followup.gemini"]
    assert _debate(db, debate_id).status == "completed"
    assert _debate(db, debate_id).followups[0]["question"] == "What if we shard?"  # type: ignore[index]
    shown = argue("show", debate_id).out
    assert "Follow-up 1: What if we shard?" in shown
    assert shown.index("Follow-up 1:") < shown.index("CLI-ANSWER")


def test_followup_refuses_an_empty_question_and_a_failed_debate(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    debate_id = _completed_duel(fake, argue)
    empty = argue("followup", debate_id, "  ")
    fake.script(provider="openai", fault="http_401", error_message="bad key", times=3)
    failed = argue("run", "Another topic", "--rounds", "1", *DUEL_SEATS)
    failed_id = _debate_id(failed.out)

    refused = argue("followup", failed_id, "Why?")

    assert empty.code == 2 and "the question is empty" in empty.err
    assert refused.code == 1
    assert "resume it first" in refused.err and f"argue resume {failed_id}" in refused.err
    assert _debate(db, failed_id).followups is None


def test_rerun_changes_one_seat_and_links_to_the_original(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    debate_id = _completed_duel(fake, argue)

    result = argue("rerun", debate_id, "--seat", "gemini=anthropic:claude-test")

    assert result.code == 0, result.out + result.err
    rerun_id = _debate_id(result.out)
    assert f"re-run of {debate_id}" in result.out
    original, rerun = _debate(db, debate_id), _debate(db, rerun_id)
    assert rerun.rerun_of == debate_id and rerun.status == "completed"
    assert (rerun.topic, rerun.format, rerun.rounds) == (
        original.topic,
        original.format,
        original.rounds,
    )
    seats = {seat["role"]: seat for seat in rerun.spec_json["seats"]}
    assert (seats["gemini"]["provider"], seats["gemini"]["model"]) == ("anthropic", "claude-test")
    assert seats["claude"]["provider"] == "openai"
    assert {t.provider for t in _turns(db, rerun_id) if t.role == "gemini"} == {"anthropic"}
    assert f"Re-run of: {debate_id}" in argue("show", rerun_id).out


def test_rerun_refuses_a_seat_the_debate_does_not_have(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    debate_id = _completed_duel(fake, argue)

    result = argue("rerun", debate_id, "--seat", "judge=openai")

    assert result.code == 2
    assert "duel has no seat judge" in result.err
    with Session(db) as session:
        assert session.exec(select(Debate).where(Debate.rerun_of == debate_id)).first() is None
