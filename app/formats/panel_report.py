"""The panel's reports: the seed's Phase 4 final report (``3_report/final_report.md``, also
the panel's finals) and its workspace files (``1_claims/<role>.md``,
``2_summaries/{pro,con}_summary.md``), in the topic's language. Pure: a debate and its turns
in, text out.

Loaded when a panel's report is first asked for, not with the planner: the report reads
scorecards and judge warnings, which read the planner's names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date as Date
from datetime import datetime
from typing import TYPE_CHECKING, Any

from app.formats.followups import FOLLOWUP
from app.formats.judging import judge_warnings
from app.formats.language import JAPANESE, detect_language
from app.formats.markdown import nest_headings, one_line, workspace_name
from app.formats.panel import CON_DEBATERS, PRO_DEBATERS, SUMMARIZERS, SWAP_JUDGEMENT
from app.scorecard import Mark, scorecard_of

if TYPE_CHECKING:
    from app.models import Debate, Turn

__all__ = [
    "PANEL_CLAIM_ROLES",
    "claim_markdown",
    "extract_thesis",
    "final_report_markdown",
    "summary_markdown",
    "workspace_files",
]

PANEL_CLAIM_ROLES = (*PRO_DEBATERS, *CON_DEBATERS)
_PANEL_SUMMARY_FILES = {SUMMARIZERS["pro"]: "pro_summary.md", SUMMARIZERS["con"]: "con_summary.md"}


def claim_markdown(turn: Turn) -> str:
    """``1_claims/<role>.md``: in the seed each debater writes its own file, so it is the
    claim's text itself."""
    return turn.text.strip() + "\n"


def summary_markdown(turn: Turn) -> str:
    """``2_summaries/<side>_summary.md``: the summarizer's text itself, as in the seed."""
    return turn.text.strip() + "\n"


@dataclass(frozen=True)
class _Words:
    """The report's fixed words in one language."""

    title: str
    topic: str
    date: str
    workspace: str
    claims: str
    thesis: str
    failed: str
    summaries: str
    pro_summary: str
    con_summary: str
    evaluation: str
    criterion: str
    pro: str
    con: str
    overall: str
    unscored: str
    synthesis: str
    no_synthesis: str
    synthesis_in_answer: str  # format with {evaluation}
    criteria: dict[str, str]
    quoted_topic: str  # format with {topic}
    overall_cell: str  # format with {grade} and {score}
    ahead: str  # format with {side}, {first} and {second}
    even: str  # format with {score}


_EN = _Words(
    title="Debate report",
    topic="Topic",
    date="Date",
    workspace="Workspace",
    claims="1. Claims",
    thesis="Thesis",
    failed="this turn failed",
    summaries="2. Summaries",
    pro_summary="Pro summary",
    con_summary="Con summary",
    evaluation="3. Evaluation",
    criterion="Criterion",
    pro="Pro",
    con="Con",
    overall="Overall",
    unscored="The judge's scores could not be read; its answer follows.",
    synthesis="4. Synthesis",
    no_synthesis="(no synthesis: the judge did not finish)",
    synthesis_in_answer="(the judge wrote no separate synthesis: its answer is under {evaluation})",
    criteria={
        "logical consistency": "Logical consistency",
        "specificity of evidence": "Specificity of evidence",
        "rebuttal strength": "Rebuttal strength",
        "originality": "Originality",
    },
    quoted_topic="{topic}",
    overall_cell="{grade} ({score})",
    ahead="**Ahead on points**: {side} ({first} to {second})",
    even="**Ahead on points**: neither ({score} each)",
)
_JA = _Words(
    title="討論レポート",
    topic="テーマ",
    date="実行日時",
    workspace="ワークスペース",
    claims="1. 各討論者の主張",
    thesis="要旨",
    failed="このターンは失敗しました",
    summaries="2. 要約",
    pro_summary="賛成派の要約",
    con_summary="反対派の要約",
    evaluation="3. 評価",
    criterion="評価軸",
    pro="賛成派",
    con="反対派",
    overall="総合",
    unscored="審判の採点を読み取れませんでした。審判の回答を以下に示します。",
    synthesis="4. 止揚的結論",
    no_synthesis="（結論なし：審判が完了しませんでした）",
    synthesis_in_answer="（審判は独立した結論を書いていません。回答は「{evaluation}」にあります）",
    criteria={
        "logical consistency": "論理的整合性",
        "specificity of evidence": "根拠の具体性",
        "rebuttal strength": "反論への対応力",
        "originality": "独自性",
    },
    quoted_topic="「{topic}」",
    overall_cell="{grade}（{score}）",
    ahead="**得点で優勢**: {side}（{first} 対 {second}）",
    even="**得点で優勢**: なし（両者 {score}）",
)
_SEAT_NAMES = {"claude": "Claude", "gemini": "Gemini", "codex": "Codex"}


def final_report_markdown(debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
    """``3_report/final_report.md``: topic, date, each claim's thesis, both side summaries,
    the evaluation table and the synthesis, in the topic's language. A ``datetime`` date
    also shows the time, like the seed's 実行日時."""
    # The debaters' language, from the same detector their prompts use: a Chinese topic
    # (Han without kana) is not Japanese. Only Japanese has its own report words.
    words = _JA if detect_language(debate.topic) == JAPANESE else _EN
    by_role = _last_by_role(turns)
    when = f"{date:%Y-%m-%d %H:%M}" if isinstance(date, datetime) else f"{date:%Y-%m-%d}"
    parts = [
        f"# {words.title}: {debate.topic}\n\n"
        f"**{words.topic}**: {words.quoted_topic.format(topic=debate.topic)}\n\n"
        f"**{words.date}**: {when} / **{words.workspace}**: {workspace_name(debate)}/",
        *(f"**Warning**: {one_line(warning)}" for warning in judge_warnings(debate)),
        _claims_section(words, by_role),
        _summaries_section(words, by_role),
        *_judgement_sections(words, debate, by_role.get("judge")),
    ]
    if debate.spec_json.get("blind_judge"):
        parts[-2] += (
            "\n\n**Blind judge**: the judge saw the sides as Side 1 and Side 2 and the "
            f"debaters by number; its marks are read back to {words.pro} and {words.con}."
        )
    agreement = _agreement(words, by_role.get("judge"), _swapped_judgement(turns))
    if agreement:
        parts[-2] += f"\n\n{agreement}"
    return "\n\n".join(parts) + "\n"


def _swapped_judgement(turns: Iterable[Turn]) -> Turn | None:
    """The judgement made with the sides shown the other way round (latest completed)."""
    swapped = [t for t in turns if t.phase == SWAP_JUDGEMENT and t.status == "completed"]
    return max(swapped, key=lambda t: t.seq or 0) if swapped else None


def _agreement(words: _Words, judge: Turn | None, swapped: Turn | None) -> str:
    """Whether the judge, shown the sides in both orders, put the same side ahead; the table
    above is the first judgement's."""
    if judge is None or swapped is None or judge.status != "completed":
        return ""
    card = scorecard_of([judge, swapped])
    sentence = card.agreement_sentence(pro=words.pro, con=words.con) if card else None
    return f"**Judged twice, sides swapped**: {sentence}" if sentence else ""


def _last_by_role(turns: Iterable[Turn]) -> dict[str, Turn]:
    """One turn per role of the debate itself (not its follow-up answers): the latest
    attempt, preferring a completed one."""
    chosen: dict[str, Turn] = {}
    for turn in sorted(turns, key=lambda t: t.seq or 0):
        if turn.phase in (FOLLOWUP, SWAP_JUDGEMENT):  # the second judgement is shown apart
            continue
        current = chosen.get(turn.role)
        if current is None or turn.status == "completed" or current.status != "completed":
            chosen[turn.role] = turn
    return chosen


def _claim_heading(words: _Words, role: str) -> str:
    side, _, seat = role.partition("_")
    side_name = words.pro if side == "pro" else words.con
    return f"### {side_name} · {_SEAT_NAMES.get(seat, seat.title())}"


def _claims_section(words: _Words, by_role: dict[str, Turn]) -> str:
    blocks = [f"## {words.claims}"]
    for role in PANEL_CLAIM_ROLES:
        turn = by_role.get(role)
        if turn is None:
            continue
        if turn.status == "completed":
            body = f"**{words.thesis}**: {extract_thesis(turn.text)}"
        else:
            body = _failure(words, turn)
        blocks.append(f"{_claim_heading(words, role)}\n\n{body}")
    return "\n\n".join(blocks)


def _summaries_section(words: _Words, by_role: dict[str, Turn]) -> str:
    blocks = [f"## {words.summaries}"]
    for role, title in (
        ("pro_summarizer", words.pro_summary),
        ("con_summarizer", words.con_summary),
    ):
        turn = by_role.get(role)
        if turn is None:
            continue
        if turn.status == "completed":
            body = nest_headings(turn.text.strip(), under=3)
        else:
            body = _failure(words, turn)
        blocks.append(f"### {title}\n\n{body}")
    return "\n\n".join(blocks)


def _failure(words: _Words, turn: Turn) -> str:
    reason = one_line(turn.error_message or turn.error_kind or "")
    return f"_({words.failed}: {reason})_" if reason else f"_({words.failed})_"


def _judgement_sections(words: _Words, debate: Debate, judge: Turn | None) -> tuple[str, str]:
    """The report's sections "3. Evaluation" and "4. Synthesis". Each part of the judge's
    answer is printed once: when its scores cannot be read, its answer stands under the
    evaluation and only a synthesis it wrote apart from the scores is under the synthesis."""
    evaluation = f"## {words.evaluation}\n\n"
    synthesis = f"## {words.synthesis}\n\n"
    if judge is None or judge.status != "completed":
        return evaluation + words.no_synthesis, synthesis + _debate_synthesis(words, debate)
    verdict = judge.verdict or {}
    criteria = verdict.get("criteria")
    read = str(verdict.get("synthesis") or "").strip()
    if verdict.get("parsed", True) and isinstance(criteria, list) and criteria:
        table = _score_table(words, criteria, verdict.get("overall")) + _ahead(words, judge)
        written = nest_headings(read, under=2) if read else _debate_synthesis(words, debate)
        return evaluation + table, synthesis + written
    answer = judge.text.strip()
    scores = _before_synthesis(answer, read) if read else None
    if scores is not None:
        shown, written = scores, nest_headings(read, under=2)
    else:
        # A synthesis read from the answer is in it; the debate's synthesis usually is the
        # answer itself (the judge wrote none apart), and is printed only if it is not.
        shown = answer
        other = (debate.synthesis or "").strip()
        if not read and other and other not in answer:
            written = nest_headings(other, under=2)
        else:
            written = words.synthesis_in_answer.format(evaluation=words.evaluation)
    unscored = words.unscored + (f"\n\n{nest_headings(shown, under=2)}" if shown else "")
    return evaluation + unscored, synthesis + written


def _ahead(words: _Words, judge: Turn) -> str:
    """The line under the table naming the side ahead on the judge's overall marks."""
    card = scorecard_of([judge])
    leader = card.leader if card is not None else None
    if card is None or leader is None:
        return ""
    pro, con = (_mark(card.pro_overall), _mark(card.con_overall))
    if leader == "even":
        return "\n\n" + words.even.format(score=pro)
    side, first, second = (words.pro, pro, con) if leader == "pro" else (words.con, con, pro)
    return "\n\n" + words.ahead.format(side=side, first=first, second=second)


def _mark(mark: Mark) -> str:
    return mark.score_text or _cell(mark.grade or "—")


def _before_synthesis(answer: str, synthesis: str) -> str | None:
    """The judge's answer without its synthesis and the heading or label that introduced it
    (the synthesis was read from the answer's end), or None when the synthesis cannot be
    found there."""
    lines = answer.split("\n")
    for start in range(len(lines) - 1, -1, -1):
        tail = "\n".join(lines[start:]).strip()
        if not tail.endswith(synthesis):
            continue
        if tail != synthesis:
            return "\n".join(lines[:start]).strip()  # "Synthesis: …" on the line itself
        labelled = [index for index in range(start) if lines[index].strip()]
        return "\n".join(lines[: labelled[-1] if labelled else start]).strip()
    return None


def _score_table(words: _Words, criteria: list[Any], overall: Any) -> str:
    rows = [
        f"| {words.criterion} | {words.pro} | {words.con} |",
        "|---|---|---|",
    ]
    for item in criteria:
        if not isinstance(item, dict):
            continue
        rows.append(
            f"| {_cell(_criterion_name(words, item.get('name')))}"
            f" | {_graded(item.get('pro_grade'), item.get('pro_reason'))}"
            f" | {_graded(item.get('con_grade'), item.get('con_reason'))} |"
        )
    if isinstance(overall, dict):
        rows.append(
            f"| {words.overall}"
            f" | {_overall(words, overall.get('pro_grade'), overall.get('pro_score'))}"
            f" | {_overall(words, overall.get('con_grade'), overall.get('con_score'))} |"
        )
    return "\n".join(rows)


def _debate_synthesis(words: _Words, debate: Debate) -> str:
    if debate.synthesis and debate.synthesis.strip():
        return nest_headings(debate.synthesis.strip(), under=2)
    return words.no_synthesis


def _criterion_name(words: _Words, name: Any) -> str:
    """Known criteria in the report's language; a name the judge invented passes through."""
    text = str(name or "").strip()
    normal = re.sub(r"[\s_-]+", " ", text.lower())
    return words.criteria.get(normal, text)


def _graded(grade: Any, reason: Any) -> str:
    grade_text = _cell(str(grade or "").strip()) or "—"
    reason_text = _cell(str(reason or "").strip())
    return f"{grade_text} — {reason_text}" if reason_text else grade_text


def _overall(words: _Words, grade: Any, score: Any) -> str:
    grade_text = _cell(str(grade or "").strip()) or "—"
    if isinstance(score, int | float) and not isinstance(score, bool):
        return words.overall_cell.format(grade=grade_text, score=f"{float(score):.1f}/10")
    return grade_text


def _cell(text: str) -> str:
    """Keep a table row one row: no line breaks, no bare pipes."""
    return one_line(text).replace("|", "\\|")


_THESIS_LINE = re.compile(
    r"^(?:thesis|要旨)"  # the keyword
    r"(?:\s*[(（][^)）]*[)）])?"  # an optional gloss: "Thesis (要旨)"
    r"\s*(?:\*\*|__)?\s*"  # the end of bold around the keyword
    r"(?:[:：]\s*(?:\*\*|__)?\s*(?P<rest>.*))?$",
    re.IGNORECASE,
)
_LINE_LEAD = re.compile(r"^[\s#>*_-]*")


def extract_thesis(text: str) -> str:
    """A claim's thesis, found tolerantly: a line ``Thesis: …`` / ``要旨: …`` (bold, heading
    or list item), or the paragraph under a ``Thesis``/``要旨`` heading; failing both, the
    claim's first paragraph that is not a heading."""
    lines = text.strip().splitlines()
    for index, line in enumerate(lines):
        match = _THESIS_LINE.match(_LINE_LEAD.sub("", line).strip())
        if match is None:
            continue
        rest = _strip_emphasis(match.group("rest") or "")
        if rest:
            return rest
        following = _paragraph(lines[index + 1 :])
        if following:
            return following
    return _paragraph(lines)


def _paragraph(lines: Sequence[str]) -> str:
    """The first run of non-blank, non-heading lines, joined into one line."""
    collected: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            if collected:
                break
            continue
        collected.append(_strip_emphasis(stripped.lstrip(">").strip()))
    return " ".join(part for part in collected if part)


def _strip_emphasis(text: str) -> str:
    text = text.strip()
    for mark in ("**", "__"):
        if text.startswith(mark) and text.endswith(mark) and len(text) > 2 * len(mark):
            text = text[len(mark) : -len(mark)].strip()
    return text


def workspace_files(debate: Debate, turns: Sequence[Turn], *, date: Date) -> dict[str, str]:
    """The seed's workspace as relative path -> content. Only completed claims and summaries
    have files (a failed debater left nothing to read); the report always exists."""
    by_role = _last_by_role(turns)
    files: dict[str, str] = {}
    for role in PANEL_CLAIM_ROLES:
        turn = by_role.get(role)
        if turn is not None and turn.status == "completed":
            files[f"1_claims/{role}.md"] = claim_markdown(turn)
    for role, filename in _PANEL_SUMMARY_FILES.items():
        turn = by_role.get(role)
        if turn is not None and turn.status == "completed":
            files[f"2_summaries/{filename}"] = summary_markdown(turn)
    files["3_report/final_report.md"] = final_report_markdown(debate, turns, date=date)
    return files
