"""The panel's verdict at a glance: the judge's grade per criterion for each side, each
side's overall grade and score, and the side ahead on points.

Read from the judgement turn's stored verdict (``formats.verdicts.parse_judgement``'s shape;
a turn saved without one is parsed from its text). A grade or score the judge's answer did
not let us read is ``None``, shown as "could not be read"; ``readable`` is False when any
part of the answer could not be read. The side ahead is the one with the higher overall
score, or, when a score is missing, the better overall grade; equal marks are even.
Pure: turns in, values out, for the debate page, the HTML report and the Markdown report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

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
    return parse_judgement(turn.text)


def scorecard_of(turns: Iterable[JudgedTurn]) -> Scorecard | None:
    """The scorecard of the last completed judgement among ``turns``; None without one."""
    judged = [turn for turn in turns if turn.phase == "judgement" and turn.status == "completed"]
    if not judged:
        return None
    verdict = judgement_verdict(judged[-1])
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
