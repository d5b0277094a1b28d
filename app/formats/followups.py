"""Follow-up questions: once a debate has ended, a person may ask a question about it, and
seats chosen by the format answer it with the debate in view. Pure planning shared by the
formats: a format says which seats answer and in which part, what its record of the debate
is and what it concluded; this module plans the answers from the questions asked
(``spec.followups``) and the turns already done.

Turns, by key, after every turn of the debate itself:

    q<n>.followup.<role>     n = 1, 2 …: the answering seats answer question n together (in
                             parallel), each blind to the others' answers to it; question
                             n + 1 waits for every answer to n, and sees them.

Question n's answers carry round ``last round of the debate + n``, so they read after it.

What a prompt carries of the debate is bounded (``RECORD_BUDGET_CHARS``, about 6,000 tokens):
the conclusion always (itself cut to ``CONCLUSION_CHARS``), then the earlier follow-ups and
the debate's turns, newest first, as far as they fit; the prompt says how many turns were
left out. Each piece is cut to ``ENTRY_CHARS`` first, so one long turn cannot crowd out the
rest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.formats import prompts
from app.formats.language import Language
from app.spec import CompletedTurn, DebateSpec, Message, TurnPlan

__all__ = [
    "FOLLOWUP",
    "Answerer",
    "Entry",
    "followup_key",
    "followup_number",
    "plan_followups",
]

FOLLOWUP = "followup"
RECORD_BUDGET_CHARS = 24_000
CONCLUSION_CHARS = 8_000
ENTRY_CHARS = 6_000
_CUT_MARK = "\n\n[… cut for length]"


@dataclass(frozen=True)
class Answerer:
    """A seat that answers follow-ups: its role and its label, and a sentence saying what
    it was in the debate (``prompts.followup_part_*``)."""

    role: str
    label: str
    part: str


@dataclass(frozen=True)
class Entry:
    """One piece of the debate as a follow-up prompt shows it."""

    heading: str
    text: str


def followup_key(number: int, role: str) -> str:
    return f"q{number}.{FOLLOWUP}.{role}"


_KEY = re.compile(rf"q(?P<number>[0-9]{{1,6}})\.{FOLLOWUP}\.")


def followup_number(key: str) -> int | None:
    """The question a follow-up answer's key answers (``q2.followup.judge`` -> 2)."""
    match = _KEY.match(key)
    return int(match.group("number")) if match else None


def plan_followups(
    spec: DebateSpec,
    done: tuple[CompletedTurn, ...],
    *,
    answerers: Sequence[Answerer],
    record: Sequence[Entry],
    conclusion: str,
    language: Language,
) -> list[TurnPlan]:
    """The answers still missing to the first question not fully answered; [] when every
    question asked has all its answers (or none was asked)."""
    if not spec.followups:
        return []
    by_key = {turn.key: turn for turn in done}
    last_round = max((turn.round for turn in done if turn.phase != FOLLOWUP), default=0)
    earlier: list[Entry] = []
    for number, question in enumerate(spec.followups, start=1):
        answers = {seat.role: by_key.get(followup_key(number, seat.role)) for seat in answerers}
        missing = [seat for seat in answerers if answers[seat.role] is None]
        if missing:
            request = _request(spec, record, conclusion, earlier, number, question)
            return [
                TurnPlan(
                    key=followup_key(number, seat.role),
                    role=seat.role,
                    phase=FOLLOWUP,
                    round=last_round + number,
                    system=prompts.followup_system(
                        me=seat.label, part=seat.part, language=language
                    ),
                    messages=(Message(role="user", content=request),),
                )
                for seat in missing
            ]
        earlier += [
            Entry(f"Question {number}: {_cut(_one_line(question), 300)} · {seat.label}", turn.text)
            for seat in answerers
            if (turn := answers[seat.role]) is not None
        ]
    return []


def _request(
    spec: DebateSpec,
    record: Sequence[Entry],
    conclusion: str,
    earlier: Sequence[Entry],
    number: int,
    question: str,
) -> str:
    budget = RECORD_BUDGET_CHARS
    kept_earlier, _ = _newest_that_fit(earlier, budget)
    budget -= sum(_size(entry) for entry in kept_earlier)
    kept_record, left_out = _newest_that_fit(record, budget)
    return prompts.followup_request(
        topic=spec.topic,
        record=[(entry.heading, entry.text) for entry in kept_record],
        left_out=left_out,
        conclusion=_cut(conclusion, CONCLUSION_CHARS),
        earlier=[(entry.heading, entry.text) for entry in kept_earlier],
        number=number,
        question=question,
    )


def _newest_that_fit(entries: Sequence[Entry], budget: int) -> tuple[list[Entry], int]:
    """The newest entries (each cut to ``ENTRY_CHARS``) whose sizes fit ``budget``, in their
    order, and how many older ones were left out."""
    kept: list[Entry] = []
    used = 0
    for entry in reversed(entries):
        cut = Entry(entry.heading, _cut(entry.text, ENTRY_CHARS))
        if used + _size(cut) > budget:
            break
        kept.append(cut)
        used += _size(cut)
    kept.reverse()
    return kept, len(entries) - len(kept)


def _size(entry: Entry) -> int:
    return len(entry.heading) + len(entry.text)


def _cut(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + _CUT_MARK


def _one_line(text: str) -> str:
    return " ".join(text.split())
