"""The registry of conditions: the ways an eval has a question answered.

A condition is one entry: ``single`` (one call to one model), ``majority`` (k independent
calls to that model and a vote) or a debate format (every format ``app.formats`` registers,
under its name), whose synthesis or judgement is read for its ``Answer:`` line. Debates
are ordinary debates, saved and run by the runner, so each one opens in the web app.

Compute-fair majority: for each question, k is the number of model calls the question's
debate used (the first debate condition of the run, as its completed turns count them),
so the vote spends as many calls as the debate did; a run with no debate condition uses
``--samples`` for k.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.formats import formats, get_format
from app.spec import Seat

SOLVER = Seat(role="solver", label="Solver", provider="anthropic")


@dataclass(frozen=True)
class Condition:
    name: str
    summary: str
    format: str | None = None
    votes: bool = False

    @property
    def is_debate(self) -> bool:
        return self.format is not None

    def default_seats(self) -> tuple[Seat, ...]:
        if self.format is None:
            return (SOLVER,)
        return get_format(self.format).default_seats()


CONDITIONS: dict[str, Condition] = {}


def register(condition: Condition) -> Condition:
    CONDITIONS[condition.name] = condition
    return condition


def get_condition(name: str) -> Condition:
    try:
        return CONDITIONS[name]
    except KeyError:
        raise KeyError(f"unknown condition {name!r}; choose from {', '.join(CONDITIONS)}") from None


register(Condition("single", "one call to one model"))
register(
    Condition("majority", "k independent calls and a vote, k = the debate's calls", votes=True)
)
# Every registered format is a way to answer, under its own name.
for _format in formats():
    register(Condition(_format.name, _format.eval_summary, format=_format.name))
