"""Reading an answer back from a reply, and comparing it with the expected one."""

from __future__ import annotations

import pytest

from app.evals.answers import ask, is_correct, parse
from app.evals.tasks import Question


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Work...\nAnswer: 42", "42"),
        ("**Answer:** 42.", "42"),
        ("Answer: 7\nthinking again\nAnswer: 8.", "8"),
        ("So the answer is -465.", "-465"),
        ("The final answer is: $1,234", "$1,234"),
        ("*Answer*: `Paris`", "Paris"),
        ("Answer: \\boxed{12}", "12"),
        ("I cannot tell.", None),
        ("Answer:", None),
    ],
)
def test_the_last_answer_line_is_read_tolerantly(reply: str, expected: str | None) -> None:
    assert parse(reply) == expected


@pytest.mark.parametrize(
    ("expected", "given", "correct"),
    [
        ("1234", "$1,234.0", True),
        ("1234", "1234 dollars", True),
        ("50", "50%", True),
        ("-332", "-332", True),
        ("-332", "332", False),
        ("72", "72.5", False),
        ("Paris", " paris.", True),
        ("Paris", "Lyon", False),
    ],
)
def test_answers_are_compared_after_normalising(expected: str, given: str, correct: bool) -> None:
    kind = "text" if expected.isalpha() else "number"
    question = Question(text="q", expected=expected, kind=kind)  # type: ignore[arg-type]
    assert is_correct(question, given) is correct


@pytest.mark.parametrize(
    ("given", "correct"),
    [("B", True), ("(b)", True), ("B. Paris", True), ("Paris", True), ("A", False)],
)
def test_a_choice_is_its_letter_or_its_text(given: str, correct: bool) -> None:
    question = Question(
        text="Capital of France?", expected="B", kind="choice", choices=("Lyon", "Paris", "Nice")
    )
    assert is_correct(question, given) is correct


def test_no_answer_is_never_correct() -> None:
    assert is_correct(Question(text="q", expected="1", kind="number"), None) is False


def test_the_prompt_lists_the_choices_and_asks_for_the_closing_line() -> None:
    question = Question(text="Capital?", expected="A", kind="choice", choices=("Paris", "Nice"))
    prompt = ask(question)
    assert "A. Paris\nB. Nice" in prompt
    assert prompt.endswith(
        '"Answer: X", where X is the letter of your choice (no other words on that line).'
    )
