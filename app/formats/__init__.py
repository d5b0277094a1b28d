"""Debate formats: pure planners. A format never calls a model, a database or the network.

Each format module exposes a ``FORMAT`` object satisfying ``Format``; ``get_format`` finds it.
"""

from __future__ import annotations

from typing import Any, Protocol

from app.spec import CompletedTurn, DebateSpec, Outcome, Seat, TurnPlan


class Format(Protocol):
    name: str

    def default_seats(self) -> tuple[Seat, ...]:
        """Every role of the format with its default provider (model None = default)."""
        ...

    def plan(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> list[TurnPlan]:
        """The next turns to run together; [] when the debate is over. Once the debate
        itself is done, the answers to its follow-up questions (``spec.followups``,
        planned with ``app.formats.followups``)."""
        ...

    def verdict(self, plan: TurnPlan, text: str) -> dict[str, Any] | None:
        """The structured reading of a finished turn's text, for phases that have one."""
        ...

    def outcome(self, spec: DebateSpec, done: tuple[CompletedTurn, ...]) -> Outcome:
        """Rounds run, convergence and the synthesis text of a finished debate."""
        ...


def get_format(name: str) -> Format:
    if name == "duel":
        from app.formats.duel import FORMAT as duel

        return duel
    if name == "panel":
        from app.formats.panel import FORMAT as panel

        return panel
    if name == "society":
        from app.formats.society import FORMAT as society

        return society
    raise KeyError(f"unknown format {name!r}")
