"""``argue eval`` on the command line: the table, the JSON, seats, bad requests, and
``--resume``."""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.evals.tasks import arithmetic
from app.models import EvalItem, EvalRun
from tests.cli.conftest import Argue
from tests.evals.conftest import script_answers
from tests.fakes.llm_server import FakeLLMServer


def test_the_table_has_a_row_per_condition_with_its_interval(
    fake: FakeLLMServer,
    argue: Argue,
    cli_home: Engine,
) -> None:
    questions = arithmetic(3, seed=0)
    script_answers(fake, questions, [True, False, True])

    result = argue(
        "eval",
        "arithmetic",
        "--items",
        "3",
        "--seed",
        "0",
        "--conditions",
        "single,duel",
        "--provider",
        "openai",
        "--rounds",
        "1",
    )

    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1].split() == [
        "condition",
        "accuracy",
        "95%",
        "interval",
        "items",
        "unparsable",
        "tokens",
        "cost",
        "s/item",
    ]
    single = next(line for line in lines if line.startswith("single"))
    assert single.split()[1:6] == ["66.7%", "20.8%", "–", "93.9%", "3"]
    assert any(line.startswith("duel") for line in lines)
    assert "[3/3] duel:" in result.err


def test_json_output_and_a_seat_moved_to_another_provider(
    fake: FakeLLMServer,
    argue: Argue,
    cli_home: Engine,
) -> None:
    questions = arithmetic(2, seed=1)
    script_answers(fake, questions, [True, True])

    result = argue(
        "eval",
        "arithmetic",
        "--items",
        "2",
        "--seed",
        "1",
        "--conditions",
        "single,majority",
        "--provider",
        "openai",
        "--seat",
        "solver=anthropic:claude-test",
        "--samples",
        "3",
        "--json",
    )

    assert result.code == 0, result.err
    data = json.loads(result.out)
    by = {row["condition"]: row for row in data["conditions"]}
    assert (by["single"]["correct"], by["majority"]["calls"]) == (2, 6)
    assert by["majority"]["interval_95"][1] == 1.0
    assert data["seats"]["single"][0]["provider"] == "anthropic"
    assert {r.provider for r in fake.requests} == {"anthropic"}
    assert {r.model for r in fake.requests} == {"claude-test"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("arithmetic", "--conditions", "single,chorus"), "unknown condition chorus"),
        (("arithmetic", "--seat", "judge=openai"), "no seat judge here"),
        (("arithmetic", "--items", "0"), "--items must be between"),
        (("missing.jsonl",), "no task 'missing.jsonl'"),
        (("--resume", "abcdef"), "no eval run 'abcdef'"),
    ],
)
def test_a_bad_request_says_what_to_change(
    fake: FakeLLMServer,
    argue: Argue,
    cli_home: Engine,
    args: tuple[str, ...],
    message: str,
) -> None:
    result = argue("eval", *args, "--provider", "openai")
    assert result.code == 2
    assert message in result.err


def test_resume_continues_with_the_items_not_done(
    fake: FakeLLMServer,
    argue: Argue,
    cli_home: Engine,
) -> None:
    questions = arithmetic(3, seed=2)
    fake.rule(contains=questions[1].text, reply="", fault="http_401")
    script_answers(fake, questions, [True] * 3)
    first = argue(
        "eval",
        "arithmetic",
        "--items",
        "3",
        "--seed",
        "2",
        "--conditions",
        "single",
        "--provider",
        "openai",
    )
    assert first.code == 1
    with Session(cli_home) as session:
        run = session.exec(select(EvalRun)).one()
        assert run.status == "failed"
    assert f"argue eval --resume {run.id}" in first.err

    fake.reset()
    script_answers(fake, questions, [True] * 3)
    second = argue("eval", "--resume", run.id[:6])

    assert second.code == 0, second.err
    assert len(fake.requests) == 2
    with Session(cli_home) as session:
        indexes = [item.item_index for item in session.exec(select(EvalItem)).all()]
    assert sorted(indexes) == [0, 1, 2]
