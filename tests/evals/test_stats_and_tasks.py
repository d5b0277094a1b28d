"""Wilson intervals, the vote, and the tasks' questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.evals.stats import vote, wilson
from app.evals.tasks import TaskError, arithmetic, load


@pytest.mark.parametrize(
    ("successes", "trials", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (50, 100, 0.4038, 0.5962),
        (81, 100, 0.7222, 0.8749),
    ],
)
def test_wilson_intervals_match_the_published_figures(
    successes: int, trials: int, low: float, high: float
) -> None:
    interval = wilson(successes, trials)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)


def test_no_trials_means_nothing_is_known() -> None:
    assert (wilson(0, 0).low, wilson(0, 0).high) == (0.0, 1.0)


def test_the_vote_takes_the_most_given_and_breaks_ties_by_first_given() -> None:
    assert vote(["3", None, "4", "4"]) == "4"
    assert vote(["5", "4", "4", "5"]) == "5"
    assert vote([None, None]) is None


def test_arithmetic_is_du_et_al_s_expression_seeded_and_correct() -> None:
    first, again, other = arithmetic(20, 7), arithmetic(20, 7), arithmetic(20, 8)
    assert first == again != other
    for question in first:
        expression = question.text.removeprefix("What is the result of ").removesuffix("?")
        numbers = [int(n) for n in expression.replace("*", "+").replace("-", "+").split("+")]
        assert len(numbers) == 6 and all(0 <= n <= 29 for n in numbers)
        assert int(question.expected) == eval(expression)


def test_a_jsonl_file_gives_numeric_text_gsm8k_and_choice_questions(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    rows = [
        {"question": "2+2?", "answer": 4},
        {"question": "Capital of France?", "answer": "Paris"},
        {"question": "Janet has ...", "answer": "She sells 16 - 3 - 4 = 9 eggs.\n#### 18"},
        {"question": "Pick", "choices": ["x", "y"], "answer": "b"},
    ]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n\n")
    questions = load(str(path), count=10, seed=0)
    assert [(q.expected, q.kind) for q in questions] == [
        ("4", "number"),
        ("Paris", "text"),
        ("18", "number"),
        ("B", "choice"),
    ]


def test_items_are_a_seeded_sample_of_a_longer_file(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps({"question": f"q{i}", "answer": i}) for i in range(50)))
    picked = load(str(path), count=5, seed=3)
    assert len(picked) == 5 and picked == load(str(path), count=5, seed=3)
    assert picked != load(str(path), count=5, seed=4)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", ":1: not JSON"),
        ('{"question": "q"}', 'with "question" and "answer"'),
        ('{"question": "q", "choices": ["a", "b"], "answer": "C"}', "a letter of a choice"),
    ],
)
def test_a_bad_line_is_named_with_what_is_wrong(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(TaskError, match=message):
        load(str(path), count=3, seed=0)
