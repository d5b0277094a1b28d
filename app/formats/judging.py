"""Who judges whom, and the warning when a judge shares a provider with a seat it judges.

A model may favour arguments written by its own provider's models (their style, their
habits of reasoning), so a debate says so plainly when a seat that judges runs on the same
provider as a seat it judges: the panel's judge scores all six debaters; the duel's
synthesis is written by its Claude seat, which weighs the Gemini seat's arguments against
its own. The other bias controls (a blind judge, a judge who sees the sides in both orders)
are planned by the panel itself (``app.formats.panel``).

Pure: a spec in, sentences out, for the page, the API, the command line and the reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from app.formats.duel import CLAUDE, GEMINI
from app.formats.panel import CON_DEBATERS, JUDGE, PRO_DEBATERS
from app.spec import DebateSpec, Seat

__all__ = ["Judging", "judging_of", "same_provider_warnings", "seat_warnings"]


@dataclass(frozen=True)
class Judging:
    """A seat that judges (``judge``), what it does (``part``), and the seats it judges."""

    judge: str
    part: str
    judged: tuple[str, ...]


_JUDGING: dict[str, tuple[Judging, ...]] = {
    "panel": (Judging(JUDGE, "the judge", (*PRO_DEBATERS, *CON_DEBATERS)),),
    "duel": (Judging(CLAUDE, "the synthesizer", (GEMINI,)),),
    # The society's agents are peers and a vote decides: nobody judges anybody.
    "society": (),
}


def judging_of(format_name: str) -> tuple[Judging, ...]:
    """The seats that judge others in a format; a format unknown here is a ``KeyError``, so
    a new format must say who judges whom (a test checks every format)."""
    return _JUDGING[format_name]


def same_provider_warnings(spec: DebateSpec) -> tuple[str, ...]:
    """One sentence per judging seat that runs on the provider of a seat it judges."""
    return seat_warnings(spec.format, spec.seats)


def seat_warnings(format_name: str, seats: Iterable[Seat]) -> tuple[str, ...]:
    """``same_provider_warnings`` for seats as saved (a debate's stored spec)."""
    by_role = {seat.role: seat for seat in seats}
    warnings: list[str] = []
    for judging in judging_of(format_name):
        judge = by_role.get(judging.judge)
        if judge is None:
            continue
        alike = [
            seat.label
            for role in judging.judged
            if (seat := by_role.get(role)) is not None and seat.provider == judge.provider
        ]
        if alike:
            warnings.append(
                f"{judge.label} ({judging.part}) runs on {judge.provider}, the same provider "
                f"as {_listed(alike)}, whose arguments it judges: it may favour them."
            )
    return tuple(warnings)


def _listed(labels: list[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    return f"{', '.join(labels[:-1])} and {labels[-1]}"
