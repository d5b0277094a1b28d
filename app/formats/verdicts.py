"""Reading the labelled answers a format asks for: convergence checks and the judge's scores.

Models, small ones above all, do not follow formats to the letter, so parsing is tolerant
(case, markdown emphasis, bullets, full-width characters, Japanese labels and answers) and
never raises: what cannot be read comes back with ``parsed`` False, and the debate goes on.
Every value returned is JSON-ready, because verdicts are stored with their turn.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "CRITERIA",
    "empty_judgement",
    "parse_convergence",
    "parse_judgement",
]

# The judge's four criteria, in the order of the report's table.
CRITERIA: tuple[str, ...] = (
    "Logical consistency",
    "Specificity of evidence",
    "Rebuttal strength",
    "Originality",
)
_OVERALL = "Overall"

# Full-width letters, digits and marks a Japanese answer may use for grades and labels.
_FULL_WIDTH = str.maketrans("ＡＢＣ０１２３４５６７８９／：．｜", "ABC0123456789/:.|")
_DECORATION = re.compile(r"[*`]|(?<!\w)_+|_+(?!\w)")
_LEADING = re.compile(r"^[\s#>\-•·+]+")


def _clean(line: str) -> str:
    """A line without markdown emphasis, heading marks, bullets or full-width ASCII."""
    line = _DECORATION.sub("", line.translate(_FULL_WIDTH))
    return _LEADING.sub("", line).strip()


# ---------------------------------------------------------------------------- convergence

_CONVERGENCE_LABEL = re.compile(
    r"^(?P<neg>not\s+)?(?P<label>converged|convergence|収束判定|収束)\s*[?？]?\s*"
    r"(?P<sep>[:=\-–—]+)?\s*(?P<value>.*)$",
    re.IGNORECASE,
)
_REASON_LABEL = re.compile(r"^(?:reason|why|理由)\s*[:=\-–—]+\s*(?P<rest>.*)$", re.IGNORECASE)
_BOTH = re.compile(r"^(yes|no|true|false|y|n)\s*(?:[|/]|\bor\b)\s*(yes|no|true|false|y|n)\b")
_ANSWER = re.compile(
    r"^(?P<word>yes|no|true|false|y|n|not\s+converged|converged|agreed?|disagreed?)\b"
    r"[\s.,;!:)\-–—]*(?P<rest>.*)$",
    re.IGNORECASE | re.DOTALL,
)
_JA_ANSWERS: tuple[tuple[str, bool], ...] = (
    ("いいえ", False),
    ("収束していない", False),
    ("未収束", False),
    ("はい", True),
    ("収束している", True),
    ("収束した", True),
)
_TRUE_WORDS = frozenset({"yes", "true", "y", "converged", "agree", "agreed"})


def _answer(value: str) -> tuple[bool | None, str]:
    """(yes/no, the words after it) for the start of ``value``; None when unclear."""
    value = value.strip().lstrip("\"'「『(（[【").strip()
    lowered = value.lower()
    if _BOTH.match(lowered):  # the template echoed back: "yes|no"
        return None, ""
    match = _ANSWER.match(value)
    if match:
        word = re.sub(r"\s+", " ", match["word"].lower())
        return word in _TRUE_WORDS, match["rest"].strip()
    for prefix, meaning in _JA_ANSWERS:
        if value.startswith(prefix):
            return meaning, value[len(prefix) :].lstrip("。、.,:：-—– ").strip()
    return None, ""


def _reason_after(lines: list[str], start: int) -> str:
    return "\n".join(lines[start:]).strip()


def parse_convergence(text: str) -> dict[str, Any]:
    """``{"converged": bool | None, "reason": str, "parsed": bool}`` from a convergence check.

    Looks for a ``CONVERGED: yes|no`` line (any case, bold, "Converged - Yes", 収束: はい),
    then a ``REASON:`` line; without a label, an answer that opens the text ("Yes." "No, …")
    counts. Anything else is unparsed, which the duel treats as not converged.
    """
    raw_lines = text.splitlines()
    lines = [_clean(line) for line in raw_lines]
    converged: bool | None = None
    trailing = ""
    answer_line: int | None = None
    labelled = False
    for index, line in enumerate(lines):
        match = _CONVERGENCE_LABEL.match(line)
        if not match:
            continue
        labelled = True
        value = match["value"].strip()
        if value.strip(".。!！ "):
            converged, trailing = _answer(value)
        elif match["sep"]:
            # "CONVERGED:" with the answer on the next non-empty line.
            following = next((ln for ln in lines[index + 1 :] if ln), "")
            converged, trailing = _answer(following)
        elif match["label"].lower() == "converged":
            converged = match["neg"] is None  # a statement: "Converged." / "Not converged."
        if converged is not None:
            answer_line = index
            break
    if not labelled:
        # No label at all: a bare answer opening the text ("Yes." "No, …") still counts.
        first = next(((i, ln) for i, ln in enumerate(lines) if ln), None)
        if first is not None:
            converged, trailing = _answer(first[1])
            if converged is not None:
                answer_line = first[0]
    reason = ""
    for index, line in enumerate(lines):
        match = _REASON_LABEL.match(line)
        if match:
            rest = [match["rest"], *raw_lines[index + 1 :]]
            reason = "\n".join(rest).strip()
            break
    if not reason:
        reason = trailing.lstrip("-–—:;,. ").strip()
    if not reason:
        others = [ln for i, ln in enumerate(raw_lines) if i != answer_line and ln.strip()]
        reason = "\n".join(others).strip()
    return {"converged": converged, "reason": reason, "parsed": converged is not None}


# ---------------------------------------------------------------------------- judgement

_CRITERION_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (_OVERALL, ("overall", "total", "総合", "総評")),
    ("Logical consistency", ("logic", "論理", "整合")),
    ("Specificity of evidence", ("evidence", "specific", "根拠", "具体")),
    ("Rebuttal strength", ("rebuttal", "counter", "反論", "反駁")),
    ("Originality", ("original", "novel", "独自", "独創")),
)
# A blind judge (``app.formats.judging``) names the sides by the order it was shown them:
# "Side 1" is the side shown first, whichever that was.
_SIDE_MARK = re.compile(r"(?i)(?<![A-Za-z])(pros?|cons?|賛成派?|反対派?|side\s*[12])\s*:")
_SIDE_IN_LABEL = re.compile(r"(?i)(?<![A-Za-z])(pro|con|賛成派?|反対派?|side\s*[12])(?![A-Za-z])")
_PLAIN_LINE = re.compile(r"^(?P<label>[^:|—–]{1,60}?)\s*(?::|—|–|\s-\s)\s*(?P<rest>.*)$")
_GRADE = re.compile(r"^[\s:\-–—(（\[]*(?P<grade>[ABC])(?![A-Za-z])[+\-−]?(?P<rest>.*)$", re.S)
_SCORE = re.compile(r"(\d+(?:\.\d+)?)\s*/\s*10(?!\d)")
_SYNTHESIS_HEADING = re.compile(
    r"^(?:(?:dialectical\s+)?synthesis|止揚(?:的結論|的統合)?|弁証法的(?:統合|結論))"
    r"\s*(?:\([^)]*\)|（[^）]*）)?\s*(?P<colon>:)?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)


def _criterion(label: str) -> str | None:
    lowered = label.lower()
    for name, words in _CRITERION_WORDS:
        if any(word in lowered for word in words):
            return name
    return None


def _other(side: str) -> str:
    return "con" if side == "pro" else "pro"


def _side(word: str, first: str) -> str:
    """``pro`` or ``con`` for a side's name; a blind label by the order shown (``first``)."""
    word = word.lower()
    if word.startswith("side"):
        return first if word.endswith("1") else _other(first)
    return "pro" if word.startswith(("pro", "賛成")) else "con"


def _split_sides(cell: str, first: str) -> list[tuple[str | None, str]]:
    """``"Pro: A — x  Con: B — y"`` → [("pro", "A — x"), ("con", "B — y")]; unmarked → None."""
    marks = list(_SIDE_MARK.finditer(cell))
    if not marks:
        return [(None, cell)]
    parts: list[tuple[str | None, str]] = []
    for index, mark in enumerate(marks):
        end = marks[index + 1].start() if index + 1 < len(marks) else len(cell)
        parts.append((_side(mark[1], first), cell[mark.end() : end].strip(" ;,、")))
    return parts


def _read_cell(body: str) -> tuple[str | None, str, float | None]:
    """(grade, one-line reason, score out of 10) from ``"A — reason"`` or ``"A (8.0/10)"``."""
    score_match = _SCORE.search(body)
    score = float(score_match[1]) if score_match else None
    match = _GRADE.match(body)
    if not match:
        return None, body.strip(), score
    reason = _SCORE.sub("", match["rest"]) if score_match else match["rest"]
    reason = reason.strip().lstrip("-–—:,;.、。 ").strip()
    if reason and reason[0] in "(（" and reason[-1] in ")）":  # "A (clear and consistent)"
        reason = reason[1:-1].strip()
    return match["grade"], reason, score


def _score_line(line: str, first: str) -> tuple[str, dict[str, str]] | None:
    """A criterion row as (criterion, {side: cell}), or None for any other line."""
    if "|" in line:
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        label, rest = cells[0], cells[1:]
        mark = _SIDE_MARK.search(label)
        if mark:  # "Overall — Pro: A 8/10 | Con: B 6/10": the first side shares the label cell
            label, rest = label[: mark.start()], [label[mark.start() :], *rest]
    else:
        match = _PLAIN_LINE.match(line)
        if not match:
            return None
        label, rest = match["label"], [match["rest"]]
    if len(label) > 60:
        return None
    name = _criterion(label)
    if name is None:
        return None
    label_side = _SIDE_IN_LABEL.search(label)
    sides: dict[str, str] = {}
    for position, cell in enumerate(rest):
        for side, body in _split_sides(cell, first):
            if side is None:
                if label_side and len(rest) == 1:
                    side = _side(label_side[1], first)
                elif position < 2 and len(rest) >= 2:
                    # a table: criterion | the side shown first | the other
                    side = (first, _other(first))[position]
            if side is not None and body and side not in sides:
                sides[side] = body
    return (name, sides) if sides else None


def empty_judgement() -> dict[str, Any]:
    """The judgement shape with nothing read yet."""
    return {
        "criteria": [
            {"name": name, "pro_grade": None, "pro_reason": "", "con_grade": None, "con_reason": ""}
            for name in CRITERIA
        ],
        "overall": {"pro_grade": None, "pro_score": None, "con_grade": None, "con_score": None},
        "synthesis": "",
        "parsed": False,
    }


def parse_judgement(text: str, *, first: str = "pro") -> dict[str, Any]:
    """The judge's scores and synthesis.

    ``{"criteria": [{"name", "pro_grade", "pro_reason", "con_grade", "con_reason"} ×4],
    "overall": {"pro_grade", "pro_score", "con_grade", "con_score"}, "synthesis": str,
    "parsed": bool}``. Reads ``Criterion | Pro: A — reason | Con: B — reason`` rows, markdown
    tables (criterion | pro | con) and one-side lines (``Originality (Con): A — …``), in
    English or Japanese, then everything under a ``SYNTHESIS`` / 止揚 heading. ``parsed`` is
    True only when every grade, both scores and the synthesis were found; what was found is
    returned either way. ``first`` is the side the judge was shown first: unmarked table
    columns follow that order, and a blind judge's "Side 1"/"Side 2" are read back as it.
    """
    result = empty_judgement()
    rows = {row["name"]: row for row in result["criteria"]}
    overall = result["overall"]
    raw_lines = text.splitlines()
    synthesis_at: int | None = None
    for index, raw in enumerate(raw_lines):
        line = _clean(raw)
        heading = _SYNTHESIS_HEADING.match(line)
        # A heading is short, or introduces its text with a colon ("Synthesis: …").
        if heading and (heading["colon"] or not heading["rest"]):
            synthesis_at = index
            result["synthesis"] = "\n".join([heading["rest"], *raw_lines[index + 1 :]]).strip()
            break
        found = _score_line(line, first)
        if found is None:
            continue
        name, sides = found
        for side, cell in sides.items():
            grade, reason, score = _read_cell(cell)
            if name == _OVERALL:
                if overall[f"{side}_grade"] is None and grade is not None:
                    overall[f"{side}_grade"] = grade
                if overall[f"{side}_score"] is None and score is not None:
                    overall[f"{side}_score"] = score
            elif rows[name][f"{side}_grade"] is None and grade is not None:
                rows[name][f"{side}_grade"] = grade
                rows[name][f"{side}_reason"] = reason
    complete_rows = all(
        row["pro_grade"] is not None and row["con_grade"] is not None for row in rows.values()
    )
    complete_overall = all(value is not None for value in overall.values())
    result["parsed"] = bool(
        complete_rows and complete_overall and synthesis_at is not None and result["synthesis"]
    )
    return result
