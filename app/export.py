"""Exported Markdown: what a finished debate becomes as files and downloads.

Everything here is pure: a debate and its turns in, text (or archive bytes) out. No I/O and
no clock: a report's date is a parameter (a transcript shows when its debate began), so the
same inputs give the same bytes. Writing the files under the data folder is ``app.files``'
job.

What each output holds. The format decides what is its own (``app.formats``: its finals
builder, which phases are transcript messages, whether it hands over a plan, its workspace);
this module holds what every debate shares, and asks the format for the rest, never its name.

- finals (``finals/<slug>.md``): the format's own. A duel's is the header block and the
  synthesis, exactly as its seed shows; a panel's is its final report
  (``app.formats.panel_report``); a society's, the majority answer and the last answers.
  Every debate has one "finals" download.
- history (``history/<slug>-<type>-<stamp>.md``, the ``transcript.md`` download): a header
  (topic, format, type, date, status, rounds, each seat's ``provider:model``), then a
  ``## Round N`` heading per round and each message under ``### Round N · <phase> · <Seat>
  (<provider:model>)``: the turns of the phases the format's layout calls messages, in its
  phase order, seats in its seat order. For a duel these are the exchange the seed keeps in
  ``conversation_history`` (the openings, then each round's rebuttal and response: not the
  seed analysis, the private convergence checks or the synthesis, already the finals); for a
  panel every turn: claims, summaries, the judgement.
- plan (``plans/<name>.md``, the ``plan.md`` download): when the format hands the synthesis
  over as a plan (a plan duel), the synthesis under a header with its topic, date and the
  debate it came from.
- Follow-up questions (asked after the debate; ``app.formats.followups``) close both the
  finals and the transcript: each question, quoted, then every seat's answer. In the
  transcript each question is a ``## Follow-up N`` section after the debate's rounds.
- Failed turns are never content; in a transcript they appear as a one-line failure notice.
- A model's own Markdown headings are shifted below the heading that holds its text (never
  inside code), so a reply's "## Plan" cannot read as a section of the report around it.
- workspace: a format's folder of files (the panel's ``1_claims/<role>.md``,
  ``2_summaries/{pro,con}_summary.md``, ``3_report/final_report.md``), downloadable as one
  zip under ``debate_YYYYMMDD_HHMMSS_<id>/``.
"""

from __future__ import annotations

import io
import random
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from datetime import date as Date

from app.formats import Format, get_format
from app.formats.followups import FOLLOWUP, followup_number
from app.formats.judging import judge_warnings
from app.formats.markdown import (
    model_of,
    nest_headings,
    one_line,
    quoted,
    reading_order,
    seat_name,
    turn_message,
    workspace_name,
)
from app.formats.panel_report import (
    claim_markdown,
    extract_thesis,
    final_report_markdown,
    summary_markdown,
)
from app.models import Debate, Turn
from app.pricing import ModelUse, PriceTable, bundled_table, money, total

__all__ = [
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


# ---------------------------------------------------------------- names


def file_slug(debate: Debate) -> str:
    """The slug files are named by. A topic with no ASCII letters (a Japanese topic) slugs to
    ""; such a debate falls back to ``debate-<id>`` so its files still have a name."""
    return debate.slug or f"debate-{debate.id}"


def finals_filename(slug: str) -> str:
    return f"{slug}.md"


def history_filename(slug: str, topic_type: str, when: datetime) -> str:
    return f"{slug}-{topic_type}-{when:%Y%m%dT%H%M%S}.md"


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


# ---------------------------------------------------------------- finals and transcript


def finals_markdown(debate: Debate, turns: Sequence[Turn] = (), *, date: Date) -> str:
    """The finals file: the format's own (a duel's header block and synthesis, a panel's
    final report, …), then the follow-up questions and their answers."""
    fmt = get_format(debate.format)
    return fmt.finals_markdown(debate, turns, date=date) + _followups_finals(debate, turns)


def transcript_markdown(
    debate: Debate, turns: Sequence[Turn], prices: PriceTable | None = None
) -> str:
    """The history file: a header saying which debate it is (and what it cost), then every
    message under a heading naming its round, phase and seat, grouped by round, each with
    its cost. The format's layout says which phases are messages and in which order. Costs
    are at ``prices`` (the bundled list prices when None); a model with no price costs
    "unknown", never 0."""
    prices = prices or bundled_table()
    fmt = get_format(debate.format)
    phases = fmt.layout.message_phases
    messages = [turn for turn in turns if turn.phase in phases and turn.phase != FOLLOWUP]
    chosen = reading_order(messages, phases, _role_order(debate, fmt), by_round=True)
    parts = [f"{_transcript_header(debate, fmt, turns)}\n{_cost_line(turns, prices)}"]
    current_round: int | None = None
    for turn in chosen:
        if turn.round != current_round:
            current_round = turn.round
            parts.append(f"## Round {turn.round}")
        parts.append(turn_message(turn) + _turn_cost(turn, prices))
    for number, question, answers in _followups(debate, turns):
        parts += [f"## Follow-up {number}", quoted(question), *map(turn_message, answers)]
    return "\n\n".join(parts) + "\n"


def _role_order(debate: Debate, fmt: Format) -> tuple[str, ...]:
    """Seats in the format's own order, then any further seats the debate had."""
    saved = [seat.get("role") for seat in debate.spec_json.get("seats") or ()]
    defaults = [seat.role for seat in fmt.default_seats()]
    return tuple(dict.fromkeys([*defaults, *(str(role) for role in saved if role)]))


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


def _followups_finals(debate: Debate, turns: Sequence[Turn]) -> str:
    """The finals' closing section: each follow-up question and its answers ("" if none)."""
    asked = _followups(debate, turns)
    if not asked:
        return ""
    parts = ["", "## Follow-up questions"]
    for number, question, answers in asked:
        parts += [f"### Question {number}", quoted(question)]
        for turn in answers:
            heading = f"#### {one_line(seat_name(turn))} ({model_of(turn.provider, turn.model)})"
            if turn.status == "completed":
                parts.append(f"{heading}\n\n{nest_headings(turn.text.strip(), under=4)}")
            else:
                reason = one_line(turn.error_message or turn.error_kind or "no reply")
                parts.append(f"{heading}\n\n_(this answer failed: {reason})_")
    return "\n\n".join(parts) + "\n"


def _transcript_header(debate: Debate, fmt: Format, turns: Sequence[Turn]) -> str:
    status = debate.status
    if debate.status_reason:
        status += f" ({one_line(debate.status_reason)})"
    lines = [
        f"# Argue transcript: {one_line(debate.topic)}",
        "",
        f"- **Topic**: {one_line(debate.topic)}",
        f"- **Format**: {debate.format} · **Type**: {debate.topic_type}",
        f"- **Date**: {_utc(debate.created_at)}",
        f"- **Status**: {status}",
        f"- **Rounds**: {_rounds(debate, fmt)}",
        *_seat_list(debate, fmt, turns),
        *(f"- **Warning**: {one_line(warning)}" for warning in judge_warnings(debate)),
    ]
    return "\n".join(lines)


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


def _utc(moment: datetime) -> str:
    """A stored time as UTC; SQLite gives times back without their zone, and they are UTC."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%d %H:%M} UTC"


def _rounds(debate: Debate, fmt: Format) -> str:
    run = debate.rounds_run or 0
    limit = fmt.round_limit(debate.rounds)
    return f"{run} of {limit}" if limit is not None else str(run)


def _seat_list(debate: Debate, fmt: Format, turns: Sequence[Turn]) -> list[str]:
    """``- **Seats**:`` and one line per seat: its label and ``provider:model``. A seat left
    on its provider's default model shows the model its turns ran on."""
    used = {turn.role: turn for turn in sorted(turns, key=lambda t: t.seq or 0)}
    seats = [seat for seat in debate.spec_json.get("seats") or () if isinstance(seat, dict)]
    lines = []
    for seat in seats:
        role = str(seat.get("role") or "")
        model = seat.get("model") or (used[role].model if role in used else None)
        label = one_line(str(seat.get("label") or role))
        lines.append(f"  - {label}: {model_of(str(seat.get('provider') or '?'), model)}")
    if not seats:  # saved before seats were kept: name them from the turns
        ordered = reading_order(turns, (), _role_order(debate, fmt))
        for role in dict.fromkeys(turn.role for turn in ordered):
            turn = used[role]
            lines.append(f"  - {one_line(seat_name(turn))}: {model_of(turn.provider, turn.model)}")
    return ["- **Seats**:", *lines] if lines else ["- **Seats**: —"]


# ---------------------------------------------------------------- plan


def plan_markdown(debate: Debate, turns: Sequence[Turn] = (), *, date: Date) -> str:
    """``plans/<name>.md``: the plan a plan duel agreed on, with what it is about, when, and
    the debate it came from, so the file reads on its own where it is handed over."""
    fmt = get_format(debate.format)
    converged = "yes" if debate.converged else "no"
    origin = (
        f"{debate.id} ({debate.format} · {debate.topic_type} · {_rounds(debate, fmt)} rounds"
        f" · converged: {converged})"
    )
    synthesis = (debate.synthesis or "").strip()
    body = nest_headings(synthesis, under=2) if synthesis else "_(no plan: no synthesis)_"
    lines = [
        f"# Argue plan: {one_line(debate.topic)}",
        "",
        f"- **Topic**: {one_line(debate.topic)}",
        f"- **Date**: {date:%Y-%m-%d}",
        f"- **From debate**: {origin}",
        *_seat_list(debate, fmt, turns),
        "",
        "## Plan",
        "",
        body,
    ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- workspace


def workspace_files(debate: Debate, turns: Sequence[Turn], *, date: Date) -> dict[str, str]:
    """The format's workspace as relative path -> content; {} for a format without one."""
    workspace = get_format(debate.format).workspace
    return dict(workspace.files(debate, turns, date)) if workspace is not None else {}


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
    workspace = get_format(debate.format).workspace
    folders = workspace.folders if workspace is not None else ()
    stamp = _zip_time(debate.created_at)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for folder in ("", *(f"{name}/" for name in folders)):
            entry = zipfile.ZipInfo(f"{top}/{folder}", date_time=stamp)
            entry.external_attr = (0o40755 << 16) | 0x10  # a directory, drwxr-xr-x
            archive.writestr(entry, b"")
        for path, content in workspace_files(debate, turns, date=date).items():
            entry = zipfile.ZipInfo(f"{top}/{path}", date_time=stamp)
            entry.external_attr = 0o100644 << 16  # a regular file, rw-r--r--
            entry.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(entry, content.encode("utf-8"))
    return buffer.getvalue()
