"""Exported Markdown: what a finished debate becomes as files and downloads.

Everything here is pure: a debate and its turns in, text (or archive bytes) out. No I/O and
no clock: a report's date is a parameter (a transcript shows when its debate began), so the
same inputs give the same bytes. Writing the files under the data folder is ``app.files``'
job.

What each output holds (the seeds' outputs: the duel's finals and history, the panel's
Phase 4 report and workspace):

- finals (``finals/<slug>.md``): for a duel, the header block and the synthesis, exactly as
  the seed shows. A panel has no finals in its seed; its finals is the final report, so every
  debate has one "finals" download.
- history (``history/<slug>-<type>-<stamp>.md``, the ``transcript.md`` download): a header
  (topic, format, type, date, status, rounds, each seat's ``provider:model``), then a
  ``## Round N`` heading per round and each message under ``### Round N · <phase> · <Seat>
  (<provider:model>)``. For a duel the messages are the exchange the seed keeps in
  ``conversation_history``: the openings, then each round's rebuttal and response. The seed
  analysis (a tool's output fed into the openings), the convergence checks (Claude's private
  evaluation) and the synthesis (already the finals) are not messages. For a panel every turn
  is a message: claims, summaries, the judgement.
- plan (``plans/<name>.md``, the ``plan.md`` download): a plan duel's synthesis under a header
  with its topic, date and the debate it came from.
- Follow-up questions (asked after the debate; ``app.formats.followups``) close both the
  finals and the transcript: each question, quoted, then every seat's answer. In the
  transcript each question is a ``## Follow-up N`` section after the debate's rounds.
- Failed turns are never content; in a transcript they appear as a one-line failure notice.
- A model's own Markdown headings are shifted below the heading that holds its text (never
  inside code), so a reply's "## Plan" cannot read as a section of the report around it.
- panel workspace: ``1_claims/<role>.md``, ``2_summaries/{pro,con}_summary.md``,
  ``3_report/final_report.md``, downloadable as one zip under
  ``debate_YYYYMMDD_HHMMSS_<id>/``.
"""

from __future__ import annotations

import io
import random
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import date as Date
from functools import lru_cache
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from app.endings import ended_early_note
from app.formats.followups import FOLLOWUP, followup_number
from app.formats.judging import seat_warnings
from app.formats.language import JAPANESE, detect_language
from app.formats.panel import SWAP_JUDGEMENT
from app.models import Debate, Turn
from app.pricing import ModelUse, PriceTable, bundled_table, money, total
from app.scorecard import Mark, scorecard_of
from app.spec import Seat

__all__ = [
    "DUEL_MESSAGE_PHASES",
    "PANEL_CLAIM_ROLES",
    "WORKSPACE_FOLDERS",
    "claim_markdown",
    "extract_thesis",
    "file_slug",
    "final_report_markdown",
    "finals_filename",
    "finals_markdown",
    "history_filename",
    "plan_markdown",
    "summary_markdown",
    "transcript_markdown",
    "whimsical_name",
    "workspace_files",
    "workspace_name",
    "workspace_zip",
]

DUEL_MESSAGE_PHASES = ("opening", "rebuttal", "response")
PANEL_CLAIM_ROLES = (
    "pro_claude",
    "pro_gemini",
    "pro_codex",
    "con_claude",
    "con_gemini",
    "con_codex",
)
_PANEL_SUMMARY_FILES = {"pro_summarizer": "pro_summary.md", "con_summarizer": "con_summary.md"}
_PANEL_PHASE_ORDER = ("claim", "summary", "judgement", SWAP_JUDGEMENT)
_PANEL_ROLE_ORDER = (*PANEL_CLAIM_ROLES, "pro_summarizer", "con_summarizer", "judge")
_SOCIETY_PHASE_ORDER = ("answer", "update")
_SOCIETY_ROLE_ORDER = tuple(f"agent_{number}" for number in range(1, 33))
_DUEL_ROLE_ORDER = ("claude", "gemini")


# ---------------------------------------------------------------- names


def file_slug(debate: Debate) -> str:
    """The slug files are named by. A topic with no ASCII letters (a Japanese topic) slugs to
    ""; such a debate falls back to ``debate-<id>`` so its files still have a name."""
    return debate.slug or f"debate-{debate.id}"


def finals_filename(slug: str) -> str:
    return f"{slug}.md"


def history_filename(slug: str, topic_type: str, when: datetime) -> str:
    return f"{slug}-{topic_type}-{when:%Y%m%dT%H%M%S}.md"


def workspace_name(debate: Debate) -> str:
    """``debate_YYYYMMDD_HHMMSS_<id>``: like the seed, named by when the debate began (Phase 0
    creates the workspace), and by the debate's id, so two panels begun in the same second
    never share a folder and re-exporting a debate names the same workspace."""
    return f"debate_{debate.created_at:%Y%m%d_%H%M%S}_{debate.id}"


# Short lists: 30 × 30 × 30 = 27,000 names is plenty for one person's plans folder.
_ADJECTIVES = (
    "amber", "brave", "breezy", "bright", "calm", "clever", "cosmic", "curious", "dapper",
    "eager", "fuzzy", "gentle", "giddy", "golden", "humble", "jolly", "lively", "lucky",
    "mellow", "misty", "nimble", "plucky", "quiet", "rustic", "snappy", "sunny", "swift",
    "tidy", "velvet", "witty",
)  # fmt: skip
_GERUNDS = (
    "baking", "bouncing", "building", "chasing", "dancing", "drifting", "dreaming", "fishing",
    "floating", "gliding", "hiking", "humming", "juggling", "knitting", "leaping", "marching",
    "mending", "painting", "planting", "rolling", "rowing", "sailing", "singing", "skating",
    "sketching", "spinning", "tinkering", "wandering", "whistling", "weaving",
)  # fmt: skip
_NOUNS = (
    "acorn", "badger", "beacon", "canyon", "comet", "falcon", "fern", "harbor", "heron",
    "island", "kettle", "lantern", "maple", "meadow", "nebula", "otter", "owl", "pebble",
    "pine", "quill", "river", "saddle", "sparrow", "teapot", "thistle", "tortoise", "walrus",
    "willow", "wombat", "zephyr",
)  # fmt: skip
_NAME_ATTEMPTS = 50


def whimsical_name(existing: set[str], rng: random.Random) -> str:
    """An ``<adjective>-<gerund>-<noun>`` plan name not in ``existing`` (names without
    ``.md``). After a few unlucky draws, a numeric suffix guarantees a fresh name."""
    name = ""
    for _ in range(_NAME_ATTEMPTS):
        name = f"{rng.choice(_ADJECTIVES)}-{rng.choice(_GERUNDS)}-{rng.choice(_NOUNS)}"
        if name not in existing:
            return name
    suffix = 2
    while f"{name}-{suffix}" in existing:
        suffix += 1
    return f"{name}-{suffix}"


# ---------------------------------------------------------------- duel


def finals_markdown(debate: Debate, turns: Sequence[Turn] = (), *, date: Date) -> str:
    """The finals file. Duel: the seed's exact block. Panel: the final report (needs turns)."""
    if debate.format == "panel":
        return final_report_markdown(debate, turns, date=date) + _followups_finals(debate, turns)
    if debate.format == "society":
        return _society_finals(debate, turns, date=date) + _followups_finals(debate, turns)
    converged = "yes" if debate.converged else "no"
    return (
        f"# Argue: {debate.topic}\n"
        f"**Type**: {debate.topic_type}  **Rounds**: {debate.rounds_run or 0}"
        f"  **Converged**: {converged}\n"
        f"**Date**: {date:%Y-%m-%d}\n"
        "\n"
        "## Synthesis\n"
        "\n"
        f"{_nest_headings((debate.synthesis or '').strip(), under=2)}\n"
    ) + _followups_finals(debate, turns)


def transcript_markdown(
    debate: Debate, turns: Sequence[Turn], prices: PriceTable | None = None
) -> str:
    """The history file: a header saying which debate it is (and what it cost), then every
    message under a heading naming its round, phase and seat, grouped by round, each with
    its cost. Costs are at ``prices`` (the bundled list prices when None); a model with no
    price costs "unknown", never 0."""
    prices = prices or bundled_table()
    debated = [turn for turn in turns if turn.phase != FOLLOWUP]
    if debate.format == "panel":
        chosen = _ordered(debated, _PANEL_PHASE_ORDER, _PANEL_ROLE_ORDER, by_round=True)
    elif debate.format == "society":
        messages = [turn for turn in debated if turn.phase in _SOCIETY_PHASE_ORDER]
        chosen = _ordered(messages, _SOCIETY_PHASE_ORDER, _SOCIETY_ROLE_ORDER, by_round=True)
    else:
        messages = [turn for turn in debated if turn.phase in DUEL_MESSAGE_PHASES]
        chosen = _ordered(messages, DUEL_MESSAGE_PHASES, _DUEL_ROLE_ORDER, by_round=True)
    parts = [f"{_transcript_header(debate, turns)}\n{_cost_line(turns, prices)}"]
    current_round: int | None = None
    for turn in chosen:
        if turn.round != current_round:
            current_round = turn.round
            parts.append(f"## Round {turn.round}")
        parts.append(_message(turn) + _turn_cost(turn, prices))
    for number, question, answers in _followups(debate, turns):
        parts += [f"## Follow-up {number}", _quoted(question), *map(_message, answers)]
    return "\n\n".join(parts) + "\n"


def _society_finals(debate: Debate, turns: Sequence[Turn], *, date: Date) -> str:
    """The society's report: the question, the majority answer with its agreement (the
    synthesis states both), and each agent's answer of the last round."""
    answered = [turn for turn in turns if turn.phase in _SOCIETY_PHASE_ORDER]
    last = max((turn.round for turn in answered if turn.status == "completed"), default=0)
    finals = _ordered([turn for turn in answered if turn.round == last], (), _SOCIETY_ROLE_ORDER)
    parts = [
        f"# Argue: {debate.topic}\n"
        f"**Format**: society  **Rounds**: {debate.rounds_run or 0}\n"
        f"**Date**: {date:%Y-%m-%d}",
        f"## Question\n\n{_quoted(debate.topic)}",
        f"## Final answer\n\n{(debate.synthesis or '').strip()}",
        f"## Last answers (round {last})",
        *(_message(turn) for turn in finals),
    ]
    return "\n\n".join(parts) + "\n"


def _followups(debate: Debate, turns: Sequence[Turn]) -> list[tuple[int, str, list[Turn]]]:
    """Each question asked of the debate, with its answers (latest attempt per seat, in
    the order they were saved)."""
    asked = [str(item.get("question", "")) for item in debate.followups or ()]
    answers: dict[int, dict[str, Turn]] = {}
    for turn in sorted(turns, key=lambda t: t.seq or 0):
        number = followup_number(turn.key) if turn.phase == FOLLOWUP else None
        if number is not None:
            answers.setdefault(number, {})[turn.role] = turn
    return [
        (number, question, list(answers.get(number, {}).values()))
        for number, question in enumerate(asked, start=1)
    ]


def _quoted(text: str) -> str:
    """A person's question as a Markdown quote: shown as written, never read as headings."""
    return "\n".join(f"> {line}".rstrip() for line in text.strip().splitlines() or [""])


def _followups_finals(debate: Debate, turns: Sequence[Turn]) -> str:
    """The finals' closing section: each follow-up question and its answers ("" if none)."""
    asked = _followups(debate, turns)
    if not asked:
        return ""
    parts = ["", "## Follow-up questions"]
    for number, question, answers in asked:
        parts += [f"### Question {number}", _quoted(question)]
        for turn in answers:
            heading = f"#### {_one_line(_seat_name(turn))} ({_model_of(turn.provider, turn.model)})"
            if turn.status == "completed":
                parts.append(f"{heading}\n\n{_nest_headings(turn.text.strip(), under=4)}")
            else:
                reason = _one_line(turn.error_message or turn.error_kind or "no reply")
                parts.append(f"{heading}\n\n_(this answer failed: {reason})_")
    return "\n\n".join(parts) + "\n"


def _transcript_header(debate: Debate, turns: Sequence[Turn]) -> str:
    status = debate.status
    if debate.status_reason:
        status += f" ({_one_line(debate.status_reason)})"
    lines = [
        f"# Argue transcript: {_one_line(debate.topic)}",
        "",
        f"- **Topic**: {_one_line(debate.topic)}",
        f"- **Format**: {debate.format} · **Type**: {debate.topic_type}",
        f"- **Date**: {_utc(debate.created_at)}",
        f"- **Status**: {status}",
        f"- **Rounds**: {_rounds(debate)}",
        *_seat_list(debate, turns),
        *(f"- **Warning**: {_one_line(warning)}" for warning in judge_warnings(debate)),
    ]
    return "\n".join(lines)


def judge_warnings(debate: Debate) -> tuple[str, ...]:
    """``app.formats.judging``'s warnings for the debate's seats as saved; none for a debate
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


def _cost_line(turns: Sequence[Turn], prices: PriceTable) -> str:
    """The whole debate's cost (every turn's, including any not shown below), as a header
    line: "at least" the priced part when a model has no price."""
    uses = [ModelUse(t.provider, t.model, t.input_tokens, t.output_tokens) for t in turns]
    spent = total(prices, uses)
    dated = f" as of {prices.as_of}" if prices.as_of else ""
    return f"- **Cost**: {spent.text} at list prices{dated}"


def _turn_cost(turn: Turn, prices: PriceTable) -> str:
    """A completed turn's cost line; a failed call reported no usage, so it has none."""
    if turn.status != "completed":
        return ""
    cost = prices.cost(
        provider=turn.provider,
        model=turn.model,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
    )
    tokens = f"{turn.input_tokens:,} in / {turn.output_tokens:,} out tokens"
    return f"\n\n_Cost: {money(cost)} · {tokens}_"


def _message(turn: Turn) -> str:
    heading = f"### Round {turn.round} · {turn.phase} · {_one_line(_seat_name(turn))}"
    heading += f" ({_model_of(turn.provider, turn.model)})"
    if turn.status == "completed":
        body = f"{heading}\n\n{_nest_headings(turn.text.strip(), under=3)}"
        note = ended_early_note(turn.ended_early, output_tokens=turn.output_tokens)
        return f"{body}\n\n_({note})_" if note else body
    reason = turn.error_message or turn.error_kind or "no reply"
    return f"{heading}\n\n_(this turn failed: {_one_line(reason)})_"


def _seat_name(turn: Turn) -> str:
    return turn.label or turn.role.replace("_", " ").title()


def _model_of(provider: str, model: str | None) -> str:
    return f"{provider}:{model}" if model else f"{provider} (its default model)"


def _utc(moment: datetime) -> str:
    """A stored time as UTC; SQLite gives times back without their zone, and they are UTC."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _rounds(debate: Debate) -> str:
    run = debate.rounds_run or 0
    # A duel runs up to its rounds; a panel's three phases are its rounds, with no cap to show.
    return f"{run} of {debate.rounds}" if debate.format == "duel" else str(run)


def _seat_list(debate: Debate, turns: Sequence[Turn]) -> list[str]:
    """``- **Seats**:`` and one line per seat: its label and ``provider:model``. A seat left
    on its provider's default model shows the model its turns ran on."""
    used = {turn.role: turn for turn in sorted(turns, key=lambda t: t.seq or 0)}
    seats = [seat for seat in debate.spec_json.get("seats") or () if isinstance(seat, dict)]
    lines = []
    for seat in seats:
        role = str(seat.get("role") or "")
        model = seat.get("model") or (used[role].model if role in used else None)
        label = _one_line(str(seat.get("label") or role))
        lines.append(f"  - {label}: {_model_of(str(seat.get('provider') or '?'), model)}")
    if not seats:  # saved before seats were kept: name them from the turns
        ordered = _ordered(turns, (), (*_DUEL_ROLE_ORDER, *_PANEL_ROLE_ORDER))
        for role in dict.fromkeys(turn.role for turn in ordered):
            turn = used[role]
            lines.append(
                f"  - {_one_line(_seat_name(turn))}: {_model_of(turn.provider, turn.model)}"
            )
    return ["- **Seats**:", *lines] if lines else ["- **Seats**: —"]


# ---------------------------------------------------------------- plan


def plan_markdown(debate: Debate, turns: Sequence[Turn] = (), *, date: Date) -> str:
    """``plans/<name>.md``: the plan a plan duel agreed on, with what it is about, when, and
    the debate it came from, so the file reads on its own where it is handed over."""
    converged = "yes" if debate.converged else "no"
    origin = (
        f"{debate.id} ({debate.format} · {debate.topic_type} · {_rounds(debate)} rounds"
        f" · converged: {converged})"
    )
    synthesis = (debate.synthesis or "").strip()
    body = _nest_headings(synthesis, under=2) if synthesis else "_(no plan: no synthesis)_"
    lines = [
        f"# Argue plan: {_one_line(debate.topic)}",
        "",
        f"- **Topic**: {_one_line(debate.topic)}",
        f"- **Date**: {date:%Y-%m-%d}",
        f"- **From debate**: {origin}",
        *_seat_list(debate, turns),
        "",
        "## Plan",
        "",
        body,
    ]
    return "\n".join(lines) + "\n"


def _ordered(
    turns: Iterable[Turn],
    phases: Sequence[str],
    roles: Sequence[str],
    *,
    by_round: bool = False,
) -> list[Turn]:
    """Turns in reading order. Turns of one step run in parallel and complete in any order,
    so completion order (``seq``) only breaks ties after round, phase and seat."""

    def rank(values: Sequence[str], value: str) -> int:
        return values.index(value) if value in values else len(values)

    def key(turn: Turn) -> tuple[int, int, int, int]:
        round_key = turn.round if by_round else 0
        return (round_key, rank(phases, turn.phase), rank(roles, turn.role), turn.seq or 0)

    return sorted(turns, key=key)


# ---------------------------------------------------------------- panel


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
        *(f"**Warning**: {_one_line(warning)}" for warning in judge_warnings(debate)),
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
            body = _nest_headings(turn.text.strip(), under=3)
        else:
            body = _failure(words, turn)
        blocks.append(f"### {title}\n\n{body}")
    return "\n\n".join(blocks)


# What may stand before a heading's ``#`` marks on its line: indentation, and inside a quote
# or a list item, the ``>`` and list markers that hold it.
_CONTAINER_PREFIX = r"(?:[ \t]*(?:>[ \t]?|(?:[-*+]|\d{1,9}[.)])[ \t]+))*[ \t]*"
_ATX_MARKS = re.compile(rf"^({_CONTAINER_PREFIX})#{{1,6}}(?=[ \t]|$)")
_CONTAINER = re.compile(_CONTAINER_PREFIX)
_SETEXT_MARKUP = frozenset({"=", "-"})
_DEEPEST_HEADING = 6


@lru_cache(maxsize=1)
def _markdown() -> MarkdownIt:
    # The same reading of Markdown as the debate page's: a line the page shows as a heading
    # is a heading here, and a line in a code block never is.
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


def _nest_headings(text: str, *, under: int) -> str:
    """Shift a model's own headings below the heading (level ``under``) that holds its text,
    keeping their relative levels and stopping at level 6, so a reply's "## Core Claims" does
    not read as a section of the document around it. Code blocks are left alone; underlined
    headings become ``#`` headings, since underlines only make levels 1 and 2."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    tokens = _markdown().parse("\n".join(lines))
    headings = [
        (token, tokens[index + 1].content)
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.map is not None
    ]
    if not headings:
        return text
    shift = max(0, under + 1 - min(_level(token) for token, _ in headings))
    if shift == 0:
        return text
    # From the last heading up: rewriting an underlined heading removes lines below it.
    for token, content in reversed(headings):
        start, end = token.map or (0, 0)
        marks = "#" * min(_level(token) + shift, _DEEPEST_HEADING)
        if token.markup in _SETEXT_MARKUP:
            lines[start:end] = [_setext_as_atx(lines[start], content, marks)]
        else:
            lines[start] = _ATX_MARKS.sub(rf"\g<1>{marks}", lines[start], count=1)
    return "\n".join(lines)


def _level(heading: Token) -> int:
    return int(heading.tag.removeprefix("h"))


def _setext_as_atx(first_line: str, content: str, marks: str) -> str:
    """An underlined heading as one ``#`` line, kept inside the quote or list that held it.
    A trailing ``#`` is escaped so it is not read as the closing marks."""
    prefix = match.group(0) if (match := _CONTAINER.match(first_line)) else ""
    title = " ".join(content.split("\n"))
    if title.endswith("#"):
        title = title[:-1] + "\\#"
    return f"{prefix}{marks} {title}"


def _failure(words: _Words, turn: Turn) -> str:
    reason = _one_line(turn.error_message or turn.error_kind or "")
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
        written = _nest_headings(read, under=2) if read else _debate_synthesis(words, debate)
        return evaluation + table, synthesis + written
    answer = judge.text.strip()
    scores = _before_synthesis(answer, read) if read else None
    if scores is not None:
        shown, written = scores, _nest_headings(read, under=2)
    else:
        # A synthesis read from the answer is in it; the debate's synthesis usually is the
        # answer itself (the judge wrote none apart), and is printed only if it is not.
        shown = answer
        other = (debate.synthesis or "").strip()
        if not read and other and other not in answer:
            written = _nest_headings(other, under=2)
        else:
            written = words.synthesis_in_answer.format(evaluation=words.evaluation)
    unscored = words.unscored + (f"\n\n{_nest_headings(shown, under=2)}" if shown else "")
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
        return _nest_headings(debate.synthesis.strip(), under=2)
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
    return _one_line(text).replace("|", "\\|")


def _one_line(text: str) -> str:
    return " ".join(text.split())


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


WORKSPACE_FOLDERS = ("1_claims", "2_summaries", "3_report")
_ZipTime = tuple[int, int, int, int, int, int]
_ZIP_EPOCH: _ZipTime = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can carry


def _zip_time(when: datetime) -> _ZipTime:
    stamp: _ZipTime = (when.year, when.month, when.day, when.hour, when.minute, when.second)
    return max(stamp, _ZIP_EPOCH)


def workspace_zip(debate: Debate, turns: Sequence[Turn], *, date: Date) -> bytes:
    """The workspace as one zip under ``debate_YYYYMMDD_HHMMSS_<id>/``. Every entry carries
    the workspace's own time and fixed permissions, so the same debate zips to the same
    bytes."""
    top = workspace_name(debate)
    stamp = _zip_time(debate.created_at)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for folder in ("", *(f"{name}/" for name in WORKSPACE_FOLDERS)):
            entry = zipfile.ZipInfo(f"{top}/{folder}", date_time=stamp)
            entry.external_attr = (0o40755 << 16) | 0x10  # a directory, drwxr-xr-x
            archive.writestr(entry, b"")
        for path, content in workspace_files(debate, turns, date=date).items():
            entry = zipfile.ZipInfo(f"{top}/{path}", date_time=stamp)
            entry.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, content.encode("utf-8"))
    return buffer.getvalue()
