"""Who judges whom, and the warning when a judge shares a provider with a seat it judges.

A model may favour arguments written by its own provider's models (their style, their
habits of reasoning), so a debate says so plainly when a seat that judges runs on the same
provider as a seat it judges: the panel's judge scores all six debaters; the duel's
synthesis is written by its Claude seat, which weighs the Gemini seat's arguments against
its own. The other bias controls (a blind judge, a judge who sees the sides in both orders)
are planned by the panel itself (``app.formats.panel``).

Each format says who judges whom (``Format.judging``). Pure: a spec in, sentences out, for
the page, the API, the command line and the reports.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from app.formats import Judging, get_format
from app.spec import DebateSpec, Seat

if TYPE_CHECKING:
    from app.models import Debate

__all__ = ["Judging", "judge_warnings", "judging_of", "same_provider_warnings", "seat_warnings"]


def judging_of(format_name: str) -> tuple[Judging, ...]:
    """The seats that judge others in a format: its own ``judging``; every format must say
    (``app.formats.Format``)."""
    return get_format(format_name).judging


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


def judge_warnings(debate: Debate) -> tuple[str, ...]:
    """The warnings for a debate's seats as saved (its reports'); none for a debate
    saved before its seats were kept (its turns do not say which seat judges)."""
    seats = tuple(
        Seat(
            role=str(seat.get("role") or ""),
            label=str(seat.get("label") or seat.get("role") or ""),
            provider=str(seat.get("provider") or ""),
        )
        for seat in debate.spec_json.get("seats") or ()
        if isinstance(seat, dict)
    )
    return seat_warnings(debate.format, seats) if seats else ()


def _listed(labels: list[str]) -> str:
    if len(labels) == 1:
        return labels[0]
    return f"{', '.join(labels[:-1])} and {labels[-1]}"
