"""The eval loop against the wire-level fake: scoring, the vote, compute matching, stored
items and their debates, and resuming a run that stopped."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app import store as debate_store
from app.config import Settings
from app.evals import store as eval_store
from app.evals.conditions import get_condition
from app.evals.harness import Harness
from app.evals.summary import summarize
from app.evals.tasks import Question, arithmetic
from app.models import Debate, EvalItem
from app.spec import Seat
from tests.evals.conftest import script_answers, solver_reply
from tests.fakes.llm_server import FakeLLMServer

SOLVER = (Seat(role="solver", label="Solver", provider="openai"),)
DUEL = (
    Seat(role="claude", label="Claude", provider="openai"),
    Seat(role="gemini", label="Gemini", provider="openai"),
)


def new_run(
    engine: Engine, questions: Sequence[Question], conditions: Sequence[str], samples: int = 3
) -> str:
    seats = {"single": SOLVER, "majority": SOLVER, "duel": DUEL}
    with Session(engine) as session:
        run = eval_store.create_run(
            session,
            task="arithmetic",
            seed=0,
            rounds=1,
            samples=samples,
            conditions=conditions,
            seats={name: seats[name] for name in conditions},
            questions=questions,
        )
        session.commit()
        return run.id


def items(engine: Engine, run_id: str) -> list[EvalItem]:
    with Session(engine) as session:
        return eval_store.items_of(session, run_id=run_id)


def test_single_answers_are_scored_and_counted(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    questions = arithmetic(5, seed=1)
    script_answers(fake_llm, questions, [True, True, False, True, False])
    fake_llm.rule(contains=questions[4].text, reply="no idea")  # never reached: first rule wins
    run_id = new_run(eval_engine, questions, ["single"])

    assert asyncio.run(harness.run(run_id)) == "completed"

    saved = items(eval_engine, run_id)
    assert [item.correct for item in saved] == [True, True, False, True, False]
    assert saved[2].answer == str(int(questions[2].expected) + 1)
    [summary] = summarize(["single"], saved)
    assert (summary.items, summary.correct, summary.unparsable, summary.calls) == (5, 3, 0, 5)
    assert round(summary.interval.low, 4) == 0.2307  # Wilson 3/5
    assert len(fake_llm.requests) == 5


def test_a_reply_without_an_answer_is_wrong_and_reported_unparsable(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    questions = arithmetic(2, seed=2)
    fake_llm.rule(contains=questions[0].text, reply="I would rather not say.")
    script_answers(fake_llm, questions[1:], [True])
    run_id = new_run(eval_engine, questions, ["single"])

    asyncio.run(harness.run(run_id))

    first, second = items(eval_engine, run_id)
    assert (first.answer, first.unparsable, first.correct) == (None, True, False)
    assert first.reply == "I would rather not say."
    assert (second.unparsable, second.correct) == (False, True)


def test_the_vote_takes_the_majority_of_k_samples(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    [question] = arithmetic(1, seed=3)
    wrong = str(int(question.expected) + 1)
    for answer in (wrong, question.expected, question.expected, "", question.expected):
        fake_llm.script(provider="openai", reply=solver_reply(answer) if answer else "hmm")
    run_id = new_run(eval_engine, [question], ["majority"], samples=5)

    asyncio.run(harness.run(run_id))

    [item] = items(eval_engine, run_id)
    assert (item.answer, item.correct, item.calls) == (question.expected, True, 5)
    assert item.reply.splitlines()[3] == "Sample 4: (unparsable)"
    assert fake_llm.pending == 0


def test_majority_spends_as_many_calls_as_the_item_s_debate_and_debates_open_in_the_app(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    questions = arithmetic(2, seed=4)
    script_answers(fake_llm, questions, [True, False])
    run_id = new_run(eval_engine, questions, ["single", "majority", "duel"])

    asyncio.run(harness.run(run_id))

    saved = items(eval_engine, run_id)
    assert len(saved) == 6
    by = {(item.item_index, item.condition): item for item in saved}
    with Session(eval_engine) as session:
        for index in range(2):
            duel = by[(index, "duel")]
            debate = debate_store.get_debate(session, debate_id=duel.debate_id or "")
            assert debate is not None and debate.status == "completed"
            turns = debate_store.completed_turns(session, debate_id=debate.id)
            assert duel.calls == len(turns) >= 3  # two openings and a synthesis at least
            assert by[(index, "majority")].calls == len(turns)
            assert duel.answer is not None and debate.synthesis is not None
            assert duel.input_tokens == debate.input_tokens > 0
    calls = sum(item.calls for item in saved)
    assert calls == len(fake_llm.requests)
    assert [by[(i, c)].correct for i in range(2) for c in ("single", "majority", "duel")] == [
        True,
        True,
        True,
        False,
        False,
        False,
    ]


def test_a_stopped_run_resumes_with_only_the_items_not_done(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    questions = arithmetic(4, seed=5)
    fake_llm.rule(contains=questions[2].text, reply="", fault="http_401")
    script_answers(fake_llm, questions, [True] * 4)
    run_id = new_run(eval_engine, questions, ["single"])

    assert asyncio.run(harness.run(run_id)) == "failed"
    assert [item.item_index for item in items(eval_engine, run_id)] == [0, 1]
    with Session(eval_engine) as session:
        run = eval_store.get_run(session, run_id=run_id)
        assert run is not None and run.status == "failed"
        assert "openai failed" in (run.status_reason or "")

    fake_llm.reset()
    script_answers(fake_llm, questions, [True] * 4)
    assert asyncio.run(harness.run(run_id)) == "completed"

    assert [item.item_index for item in items(eval_engine, run_id)] == [0, 1, 2, 3]
    asked = [r.body["messages"][-1]["content"] for r in fake_llm.requests]
    assert len(asked) == 2
    assert questions[2].text in asked[0] and questions[3].text in asked[1]


def test_a_cancelled_run_is_interrupted_and_its_debate_cancelled(
    eval_engine: Engine, settings: Settings, fake_llm: FakeLLMServer, harness: Harness
) -> None:
    [question] = arithmetic(1, seed=6)
    fake_llm.rule(contains=question.text, reply=solver_reply(question.expected), token_delay=0.2)
    run_id = new_run(eval_engine, [question], ["duel"])

    async def cancel_midway() -> None:
        task = asyncio.ensure_future(harness.run(run_id))
        await asyncio.to_thread(fake_llm.wait_for_requests, 1, timeout=10)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(cancel_midway())

    with Session(eval_engine) as session:
        run = eval_store.get_run(session, run_id=run_id)
        assert run is not None and run.status == "interrupted"
        [debate] = session.exec(select(Debate)).all()
        assert debate.status == "cancelled"
    assert items(eval_engine, run_id) == []


def test_a_panel_s_judgement_gives_the_answer(
    harness: Harness, eval_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    [question] = arithmetic(1, seed=7)
    script_answers(fake_llm, [question], [True])
    panel = tuple(
        Seat(role=seat.role, label=seat.label, provider="openai")
        for seat in get_condition("panel").default_seats()
    )
    with Session(eval_engine) as session:
        run = eval_store.create_run(
            session,
            task="arithmetic",
            seed=7,
            rounds=1,
            samples=3,
            conditions=["panel"],
            seats={"panel": panel},
            questions=[question],
        )
        session.commit()
        run_id = run.id

    assert asyncio.run(harness.run(run_id)) == "completed"

    [item] = items(eval_engine, run_id)
    assert (item.answer, item.correct) == (question.expected, True)
    with Session(eval_engine) as session:
        debate = debate_store.get_debate(session, debate_id=item.debate_id or "")
        assert debate is not None and debate.format == "panel"
        assert item.calls == len(debate_store.completed_turns(session, debate_id=debate.id))
