"""Asking for an answer in a fixed closing form, reading it back tolerantly, and scoring it.

Every prompt ends with the instruction to close on a line ``Answer: X``. Reading takes the
last ``Answer:`` in the text (markdown bold, italics and code marks ignored), and failing
that the last "the answer is X"; a trailing period, quotes and a ``\\boxed{}`` are dropped.
Text with neither is unparsable: it counts as wrong and is reported as unparsable.

Comparison is after normalising both sides: spaces trimmed, case folded, ``$`` and ``%``
signs and thousands commas dropped, and numbers compared as numbers (``72.0`` is ``72``).
A numeric answer given with words around one number ("42 apples") is read as that number;
a multiple-choice answer is its letter ("(B)", "B. Paris" and the choice's own text count).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from app.evals.tasks import LETTERS, Question

_MARKUP = re.compile(r"\*\*|__|`|(?<!\w)\*|\*(?!\w)")
_ANSWER_LINE = re.compile(r"answer\s*[:：]\s*(.*)", re.IGNORECASE)
_ANSWER_IS = re.compile(r"the\s+(?:final\s+)?answer\s+is\s*[:：]?\s*(.+)", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CHOICE_LETTER = re.compile(r"^\(?([a-z])\)?(?:[.):\s]|$)", re.IGNORECASE)


def instruction(question: Question) -> str:
    """The closing form asked of every reply that gives the answer."""
    what = "the letter of your choice" if question.kind == "choice" else "only the final answer"
    return (
        f'End your reply with a final line of the form "Answer: X", where X is {what} '
        "(no other words on that line)."
    )


def ask(question: Question) -> str:
    return f"{question.prompt()}\n\n{instruction(question)}"


def parse(text: str) -> str | None:
    """The answer a reply gives, or None when it gives none in a form we read."""
    plain = _MARKUP.sub("", text)
    found: str | None = None
    for line in plain.splitlines():
        matches = list(_ANSWER_LINE.finditer(line))
        if matches:
            found = matches[-1].group(1)
    if found is None or not _clean(found):
        phrases = list(_ANSWER_IS.finditer(plain))
        if phrases:
            found = phrases[-1].group(1).splitlines()[0]
    if found is None:
        return None
    return _clean(found) or None


def _clean(value: str) -> str:
    value = _BOXED.sub(r"\1", value).strip()
    value = value.strip("\"'“”‘’ ")
    return value.rstrip(".。").strip()


def normalise(value: str) -> str:
    value = " ".join(value.strip().casefold().split())
    value = value.replace("$", "").replace("%", "")
    value = _THOUSANDS.sub("", value).strip().rstrip(".").strip()
    number = as_number(value)
    return number if number is not None else value


def as_number(value: str) -> str | None:
    """``value`` as a canonical number (``"72.0"`` → ``"72"``), or None if it is not one."""
    value = _THOUSANDS.sub("", value.strip().replace("$", "").replace("%", "")).rstrip(".")
    if not _NUMBER.fullmatch(value):
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def comparable(question: Question, given: str) -> str:
    """``given`` in the form it is compared (and voted) in, for this question."""
    if question.kind == "choice":
        return _choice_letter(question, given)
    value = normalise(given)
    if question.kind == "number" and as_number(value) is None:
        numbers = _NUMBER.findall(_THOUSANDS.sub("", value))
        if len(numbers) == 1:
            return as_number(numbers[0]) or value
    return value


def _choice_letter(question: Question, given: str) -> str:
    value = given.strip()
    for index, choice in enumerate(question.choices):
        if normalise(choice) == normalise(value):
            return LETTERS[index]
    match = _CHOICE_LETTER.match(value)
    return match.group(1).upper() if match else normalise(value)


def is_correct(question: Question, given: str | None) -> bool:
    if given is None:
        return False
    return comparable(question, given) == comparable(question, question.expected)
