"""The panel's verdict at a glance: the judge's grade per criterion for each side, each
side's overall grade and score, and the side ahead on points.

Read from the judgement turn's stored verdict (``formats.verdicts.parse_judgement``'s shape;
a turn saved without one is parsed from its text). A grade or score the judge's answer did
not let us read is ``None``, shown as "could not be read"; ``readable`` is False when any
part of the answer could not be read. The side ahead is the one with the higher overall
score, or, when a score is missing, the better overall grade; equal marks are even.

A judge asked to judge twice with the sides shown in the other order (the panel's
``swap_judge``) leaves a second verdict: the scorecard stays the first judgement's (the sides
in their usual order, pro first), the second is kept beside it (``second``) and
``agreement_sentence`` says whether both put the same side ahead, with both sets of scores.
Pure: turns in, values out, for the debate page, the HTML report and the Markdown report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

from app.formats.panel import SWAP_JUDGEMENT
from app.formats.verdicts import CRITERIA, parse_judgement

__all__ = ["UNREAD", "Mark", "ScoreRow", "Scorecard", "scorecard_of"]

UNREAD = "could not be read"
Leader = Literal["pro", "con", "even"]
_GRADES = ("A", "B", "C")


class JudgedTurn(Protocol):
    """What is read from a turn: a saved row and the page's view of one both fit."""

    @property
    def phase(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def verdict(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Mark:
    """One side's mark on one line of the table; ``grade`` None when it could not be read."""

    grade: str | None
    reason: str = ""
    score: float | None = None

    @property
    def score_text(self) -> str:
        return "" if self.score is None else f"{self.score:.1f}/10"


@dataclass(frozen=True)
class ScoreRow:
    criterion: str
    pro: Mark
    con: Mark


@dataclass(frozen=True)
class Scorecard:
    rows: tuple[ScoreRow, ...]
    pro_overall: Mark
    con_overall: Mark
    readable: bool
    # The same judge's verdict with the sides shown the other way round (con first), if asked.
    second: Scorecard | None = None

    @property
    def anything_read(self) -> bool:
        marks = [self.pro_overall, self.con_overall]
        marks += [mark for row in self.rows for mark in (row.pro, row.con)]
        return any(mark.grade is not None or mark.score is not None for mark in marks)

    @property
    def leader(self) -> Leader | None:
        """The side ahead on points; None when the overall marks could not be read."""
        pro, con = self.pro_overall, self.con_overall
        if pro.score is not None and con.score is not None:
            return _compare(pro.score, con.score)
        if pro.grade in _GRADES and con.grade in _GRADES:
            # A is best: a lower index is a higher mark.
            return _compare(-_GRADES.index(str(pro.grade)), -_GRADES.index(str(con.grade)))
        return None

    def leader_sentence(self, *, pro: str = "Pro", con: str = "Con") -> str:
        """``Pro is ahead: 8.0/10 to 6.5/10``, ``Even: 7.0/10 each``, or that it could
        not be read."""
        leader = self.leader
        if leader is None:
            return f"The side ahead {UNREAD}."
        marks = (_shown(self.pro_overall), _shown(self.con_overall))
        if leader == "even":
            return f"Even: {marks[0]} each."
        side, first, second = (pro, *marks) if leader == "pro" else (con, *reversed(marks))
        return f"{side} is ahead: {first} to {second}."

    def agreement_sentence(self, *, pro: str = "Pro", con: str = "Con") -> str | None:
        """Whether the two judgements (pro shown first, then con shown first) put the same
        side ahead, with both scores; None when the judge judged once."""
        second = self.second
        if second is None:
            return None
        names = {"pro": pro, "con": con}
        scores = (
            f"{pro} shown first: {pro} {_shown(self.pro_overall)}, {con} "
            f"{_shown(self.con_overall)}; {con} shown first: {pro} "
            f"{_shown(second.pro_overall)}, {con} {_shown(second.con_overall)}"
        )
        first_leader, second_leader = self.leader, second.leader
        if first_leader is None or second_leader is None:
            return f"Whether the two judgements agree {UNREAD} ({scores})."
        if first_leader == second_leader:
            agreed = (
                "even in both" if first_leader == "even" else f"{names[first_leader]} ahead in both"
            )
            return f"The two judgements agree: {agreed} ({scores})."

        def ahead(leader: Leader) -> str:
            return "even" if leader == "even" else f"{names[leader]} ahead"

        return (
            f"The two judgements disagree: {ahead(first_leader)} with {pro} shown first, "
            f"{ahead(second_leader)} with {con} shown first ({scores})."
        )


def _compare(pro: float, con: float) -> Leader:
    if pro == con:
        return "even"
    return "pro" if pro > con else "con"


def _shown(mark: Mark) -> str:
    return mark.score_text or str(mark.grade or UNREAD)


def judgement_verdict(turn: JudgedTurn) -> dict[str, Any]:
    verdict = turn.verdict
    if isinstance(verdict, dict) and isinstance(verdict.get("criteria"), list):
        return verdict
    return parse_judgement(turn.text, first="con" if turn.phase == SWAP_JUDGEMENT else "pro")


def _last_completed(turns: list[JudgedTurn], phase: str) -> JudgedTurn | None:
    judged = [turn for turn in turns if turn.phase == phase and turn.status == "completed"]
    return judged[-1] if judged else None


def scorecard_of(turns: Iterable[JudgedTurn]) -> Scorecard | None:
    """The scorecard of the last completed judgement among ``turns``; None without one.
    A completed judgement with the sides swapped is attached as its ``second``."""
    turns = list(turns)
    judged = _last_completed(turns, "judgement")
    if judged is None:
        return None
    swapped = _last_completed(turns, SWAP_JUDGEMENT)
    card = _card(judgement_verdict(judged))
    if swapped is None:
        return card
    return replace(card, second=_card(judgement_verdict(swapped)))


def _card(verdict: dict[str, Any]) -> Scorecard:
    given = {
        str(item.get("name")): item
        for item in verdict.get("criteria") or ()
        if isinstance(item, dict)
    }
    rows = tuple(
        ScoreRow(
            criterion=name,
            pro=_mark(given.get(name, {}), "pro"),
            con=_mark(given.get(name, {}), "con"),
        )
        for name in CRITERIA
    )
    overall = verdict.get("overall")
    overall = overall if isinstance(overall, dict) else {}
    return Scorecard(
        rows=rows,
        pro_overall=_overall(overall, "pro"),
        con_overall=_overall(overall, "con"),
        readable=bool(verdict.get("parsed")),
    )


def _mark(item: dict[str, Any], side: str) -> Mark:
    return Mark(
        grade=_grade(item.get(f"{side}_grade")), reason=str(item.get(f"{side}_reason") or "")
    )


def _overall(overall: dict[str, Any], side: str) -> Mark:
    score = overall.get(f"{side}_score")
    number = (
        float(score) if isinstance(score, int | float) and not isinstance(score, bool) else None
    )
    return Mark(grade=_grade(overall.get(f"{side}_grade")), score=number)


def _grade(value: Any) -> str | None:
    text = str(value or "").strip()
    return text or None
