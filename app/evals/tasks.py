"""The questions of an eval: Du et al.'s generated arithmetic, or a JSONL file.

Arithmetic items are ``a+b*c+d-e*f`` with six integers drawn from 0 to 29 by a seeded
generator, so a seed names the same questions on every machine and no data file is needed.

A JSONL file holds one object a line: ``{"question": …, "answer": …}`` (a number or text;
GSM8K's ``… #### 72`` answer form is read as ``72``), or a multiple-choice item with a
``choices`` list and a letter answer (``"B"``). ``--items N`` takes N of them, chosen by
the seed (all of them, in file order, when the file has no more than N).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

AnswerKind = Literal["number", "text", "choice"]

ARITHMETIC = "arithmetic"
ARITHMETIC_MAX = 29
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_GSM8K_ANSWER = re.compile(r"####\s*(.+?)\s*$", re.DOTALL)


class TaskError(ValueError):
    """A task that cannot be read: the message says which line and what is wrong."""


@dataclass(frozen=True)
class Question:
    text: str
    expected: str
    kind: AnswerKind = "text"
    choices: tuple[str, ...] = field(default=())

    def prompt(self) -> str:
        """The question as put to a model (without the closing-form instruction)."""
        if not self.choices:
            return self.text
        options = "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(self.choices))
        return f"{self.text}\n\n{options}"

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "expected": self.expected,
            "kind": self.kind,
            "choices": list(self.choices),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Question:
        return cls(
            text=str(data["text"]),
            expected=str(data["expected"]),
            kind=data.get("kind", "text"),
            choices=tuple(str(c) for c in data.get("choices", ())),
        )


def arithmetic(count: int, seed: int) -> list[Question]:
    """Du et al.'s arithmetic: ``What is the result of a+b*c+d-e*f?``."""
    rng = random.Random(seed)
    questions = []
    for _ in range(count):
        a, b, c, d, e, f = (rng.randint(0, ARITHMETIC_MAX) for _ in range(6))
        value = a + b * c + d - e * f
        questions.append(
            Question(
                text=f"What is the result of {a}+{b}*{c}+{d}-{e}*{f}?",
                expected=str(value),
                kind="number",
            )
        )
    return questions


def load(task: str, *, count: int, seed: int) -> list[Question]:
    """The task's questions: ``arithmetic``, or the path of a JSONL file."""
    if count < 1:
        raise TaskError("--items must be at least 1")
    if task == ARITHMETIC:
        return arithmetic(count, seed)
    path = Path(task)
    if not path.is_file():
        raise TaskError(f"no task {task!r}: give 'arithmetic' or the path of a JSONL file")
    questions = read_jsonl(path)
    if len(questions) <= count:
        return questions
    chosen = sorted(random.Random(seed).sample(range(len(questions)), count))
    return [questions[i] for i in chosen]


def read_jsonl(path: Path) -> list[Question]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise TaskError(f"{path}: cannot be read ({error})") from error
    questions = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError as error:
            raise TaskError(f"{path}:{number}: not JSON ({error})") from error
        questions.append(_question(data, f"{path}:{number}"))
    if not questions:
        raise TaskError(f"{path}: has no questions")
    return questions


def _question(data: Any, where: str) -> Question:
    if not isinstance(data, dict) or "question" not in data or "answer" not in data:
        raise TaskError(f'{where}: each line is an object with "question" and "answer"')
    text, answer = data["question"], data["answer"]
    if not isinstance(text, str) or not text.strip():
        raise TaskError(f"{where}: the question is empty or not text")
    if isinstance(answer, bool) or not isinstance(answer, str | int | float):
        raise TaskError(f"{where}: the answer is a number or text")
    choices = data.get("choices")
    if choices is not None:
        return _choice_question(text, str(answer), choices, where)
    expected = str(answer).strip()
    if match := _GSM8K_ANSWER.search(expected):
        expected = match.group(1).strip()
    if not expected:
        raise TaskError(f"{where}: the answer is empty")
    kind: AnswerKind = "number" if _is_number(expected) else "text"
    return Question(text=text.strip(), expected=expected, kind=kind)


def _choice_question(text: str, answer: str, choices: Any, where: str) -> Question:
    if (
        not isinstance(choices, list)
        or not 2 <= len(choices) <= len(LETTERS)
        or not all(isinstance(choice, str | int | float) for choice in choices)
    ):
        raise TaskError(f"{where}: choices is a list of 2 to {len(LETTERS)} options")
    letter = answer.strip().strip("().").upper()
    if len(letter) != 1 or LETTERS.find(letter) not in range(len(choices)):
        raise TaskError(f"{where}: the answer of a multiple-choice item is a letter of a choice")
    return Question(
        text=text.strip(),
        expected=letter,
        kind="choice",
        choices=tuple(str(choice) for choice in choices),
    )


def _is_number(text: str) -> bool:
    from app.evals.answers import as_number

    return as_number(text) is not None
