"""What the debate page shows, as plain values: turns grouped by round and phase (titled and
ordered by the debate's format, ``app.formats.Layout``), downloads, controls. Built from the
database's turns and the hub's live turns; the same values feed the full page and the
fragments the stream sends, so both always render alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from app.endings import ended_early_note
from app.events import LiveTurn
from app.formats import Format, get_format
from app.formats.followups import FOLLOWUP
from app.formats.judging import same_provider_warnings
from app.models import ACTIVE_STATUSES, Debate, Turn
from app.providers.base import estimate_tokens
from app.scorecard import Scorecard, scorecard_of
from app.spec import DebateSpec, Seat
from app.status import RESUMABLE_STATUSES, DebateStatus

# Follow-up answers come after any format's own phases (``app.formats.followups``).
FOLLOWUP_TITLE = "Follow-up answers"
RESUMABLE = RESUMABLE_STATUSES
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def dom_id(key: str) -> str:
    """A turn key (``r2.rebuttal.claude``) as a fragment of an element id (no CSS escapes)."""
    return _UNSAFE_ID.sub("-", key)


@dataclass(frozen=True)
class TurnView:
    key: str
    role: str
    label: str
    provider: str
    model: str
    phase: str
    round: int
    status: str  # live | completed | failed
    text: str = ""
    verdict: dict[str, Any] | None = None
    error_kind: str | None = None
    error_message: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    usage_estimated: bool = False
    latency_ms: int = 0
    attempts: int = 1
    ended_early: str | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def id(self) -> str:
        return dom_id(self.key)

    @property
    def waiting(self) -> bool:
        """Live, and its seat has not written a first token yet (a local model writes
        parallel turns one after another: the later ones wait)."""
        return self.status == "live" and not self.text

    @property
    def approximate_tokens(self) -> int:
        """The live text's length in tokens, roughly (static/argue.js counts alike)."""
        return estimate_tokens(self.text)

    @property
    def ended_early_note(self) -> str | None:
        return ended_early_note(self.ended_early, output_tokens=self.output_tokens)

    @property
    def group_id(self) -> str:
        return group_id(self.round, self.phase)


def group_title(format: str, round: int, phase: str) -> str:
    """The heading of a group of turns, as the format's layout titles it."""
    if phase == FOLLOWUP:
        return FOLLOWUP_TITLE
    return get_format(format).layout.group_title(round, phase)


def group_id(round: int, phase: str) -> str:
    return f"g-{round}-{dom_id(phase)}"


@dataclass(frozen=True)
class GroupView:
    id: str
    round: int
    phase: str
    title: str
    round_heading: int | None  # a round number to head this group with, or None
    turns: tuple[TurnView, ...] = field(default=())


@dataclass(frozen=True)
class Download:
    name: str
    url: str
    label: str


def turn_from_row(turn: Turn) -> TurnView:
    return TurnView(
        key=turn.key,
        role=turn.role,
        label=turn.label,
        provider=turn.provider,
        model=turn.model,
        phase=turn.phase,
        round=turn.round,
        status=turn.status,
        text=turn.text,
        verdict=turn.verdict,
        error_kind=turn.error_kind,
        error_message=turn.error_message,
        input_tokens=turn.input_tokens,
        output_tokens=turn.output_tokens,
        usage_estimated=turn.usage_estimated,
        latency_ms=turn.latency_ms,
        attempts=turn.attempts,
        ended_early=turn.ended_early,
        started_at=turn.started_at,
        finished_at=turn.finished_at,
    )


def turn_from_completed(data: Mapping[str, Any]) -> TurnView | None:
    """The turn as its ``turn_completed`` event carries it, or None when the event carries
    no text (one written before events carried the saved turn: read the row instead)."""
    text = data.get("text")
    if not isinstance(text, str):
        return None
    return replace(
        turn_from_live(data, text),
        status="completed",
        verdict=data.get("verdict"),
        input_tokens=int(data.get("input_tokens", 0)),
        output_tokens=int(data.get("output_tokens", 0)),
        usage_estimated=bool(data.get("usage_estimated", False)),
        latency_ms=int(data.get("latency_ms", 0)),
        attempts=int(data.get("attempts", 1)),
        ended_early=data.get("ended_early"),
        started_at=parse_moment(data.get("started_at")),
        finished_at=parse_moment(data.get("finished_at")),
    )


def parse_moment(value: Any) -> datetime | None:
    """An ISO 8601 time from an event; None for anything else (a newer producer's, say)."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def turn_from_live(info: Mapping[str, Any], text: str = "") -> TurnView:
    return TurnView(
        key=str(info["key"]),
        role=str(info.get("role", "")),
        label=str(info.get("label", "")),
        provider=str(info.get("provider", "")),
        model=str(info.get("model", "")),
        phase=str(info.get("phase", "")),
        round=int(info.get("round", 0)),
        status="live",
        text=text,
    )


def merge_turns(
    rows: Iterable[Turn], live: Iterable[LiveTurn], *, include_live: bool
) -> list[TurnView]:
    """The turns to show. A turn live in the snapshot is shown live, as of the snapshot, even
    when its row has completed since: the stream continues from the snapshot's last event, so
    it replays that turn's later text into the live turn, then its completion, which swaps in
    the finished turn. Shown completed, the replayed text would have nowhere to go. A live
    turn also wins over an earlier failed attempt with the same key."""
    by_key: dict[str, TurnView] = {row.key: turn_from_row(row) for row in rows}
    if include_live:
        for turn in live:
            by_key[turn.key] = turn_from_live(turn.info, turn.text)
    return list(by_key.values())


def shows_round_heading(format: str, round: int, phase: str) -> bool:
    """Whether the format's layout puts this group under a "Round N" heading."""
    return get_format(format).layout.shows_round_heading(round, phase)


def group_turns(
    turns: Sequence[TurnView], *, format: str, seat_order: Sequence[str]
) -> list[GroupView]:
    """Turns in groups of one round and phase (parallel turns share a group), in debate
    order; inside a group, in seat order."""
    layout = get_format(format).layout
    rank = {role: index for index, role in enumerate(seat_order)}
    groups: dict[tuple[int, str], list[TurnView]] = {}
    for turn in turns:
        groups.setdefault((turn.round, turn.phase), []).append(turn)
    # A closing phase (the duel's synthesis) closes the debate whatever round number it
    # carries; follow-up answers come after it.
    ordered = sorted(
        groups,
        key=lambda pair: (
            pair[1] == FOLLOWUP,
            layout.closes(pair[1]),
            pair[0],
            layout.rank(pair[1]),
        ),
    )
    views: list[GroupView] = []
    seen_rounds: set[int] = set()
    for round, phase in ordered:
        heading = None
        if shows_round_heading(format, round, phase) and round not in seen_rounds:
            heading = round
            seen_rounds.add(round)
        members = sorted(groups[(round, phase)], key=lambda t: (rank.get(t.role, 99), t.key))
        views.append(
            GroupView(
                id=group_id(round, phase),
                round=round,
                phase=phase,
                title=group_title(format, round, phase),
                round_heading=heading,
                turns=tuple(members),
            )
        )
    return views


def as_utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; every one the app stores is UTC."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


@dataclass(frozen=True)
class Progress:
    """Where a debate is: the step being run, since when, and roughly how long is left.

    ``remaining_seconds`` is an estimate, or None when there is nothing to base one on: the
    rounds still allowed times the average length of a round after the first (the first holds
    only the openings, shorter than a later round's exchange), plus one average step for the
    closing turn. A duel may converge early, so it is an upper bound as much as a guess.
    """

    step: str | None  # "Round 2 of up to 4 · Rebuttal", "Phase 2 · Summaries" …
    started_at: datetime | None
    as_of: datetime
    remaining_seconds: int | None
    finished_at: datetime | None = None

    @property
    def elapsed_seconds(self) -> int:
        if self.started_at is None:
            return 0
        end = self.finished_at or self.as_of
        return max(0, int((end - self.started_at).total_seconds()))

    @property
    def elapsed_text(self) -> str:
        return duration_text(self.elapsed_seconds)

    @property
    def remaining_text(self) -> str:
        return duration_text(self.remaining_seconds or 0)

    @staticmethod
    def epoch_ms(moment: datetime | None) -> int:
        return int(moment.timestamp() * 1000) if moment is not None else 0


def duration_text(seconds: int) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min`` (static/argue.js writes the same)."""
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def progress_of(
    debate: Debate, groups: Sequence[GroupView], *, now: datetime | None = None
) -> Progress:
    """The progress shown in the page's header, from the groups of turns on the page."""
    now = now or datetime.now(UTC)
    begun = debate.started_at or debate.created_at
    finished = debate.finished_at if debate.status not in ACTIVE_STATUSES else None
    return Progress(
        step=_step_title(debate, groups[-1]) if groups else None,
        started_at=as_utc(begun) if begun else None,
        as_of=now,
        remaining_seconds=_remaining_seconds(debate, groups, now) if not finished else None,
        finished_at=as_utc(finished) if finished else None,
    )


def _step_title(debate: Debate, group: GroupView) -> str:
    if not shows_round_heading(debate.format, group.round, group.phase):
        return group.title
    limit = get_format(debate.format).round_limit(debate.rounds)
    of = f" of up to {limit}" if limit is not None else ""
    return f"Round {group.round}{of} · {group.title}"


def _span(turns: Iterable[TurnView]) -> tuple[datetime, datetime] | None:
    """When the first of ``turns`` started and the last finished; None while any runs."""
    starts, ends = [], []
    for turn in turns:
        if turn.started_at is None or turn.finished_at is None:
            return None
        starts.append(as_utc(turn.started_at))
        ends.append(as_utc(turn.finished_at))
    return (min(starts), max(ends)) if starts else None


def _remaining_seconds(debate: Debate, groups: Sequence[GroupView], now: datetime) -> int | None:
    layout = get_format(debate.format).layout
    rounded = [g for g in groups if layout.shows_round_heading(g.round, g.phase)]
    if not rounded or any(layout.closes(g.phase) for g in groups):
        return None
    current = max(g.round for g in rounded)
    by_round: dict[int, list[TurnView]] = {}
    for group in rounded:
        by_round.setdefault(group.round, []).extend(group.turns)
    spans = [_span(by_round[r]) for r in sorted(by_round) if 2 <= r < current]
    lengths = [(end - start).total_seconds() for start, end in filter(None, spans)]
    steps = [_span(g.turns) for g in groups]
    step_lengths = [(end - start).total_seconds() for start, end in filter(None, steps)]
    if not lengths or not step_lengths:
        return None
    average_round = sum(lengths) / len(lengths)
    average_step = sum(step_lengths) / len(step_lengths)
    starts = [as_utc(t.started_at) for t in by_round[current] if t.started_at is not None]
    in_current = (now - min(starts)).total_seconds() if starts else 0.0
    left = (
        max(0.0, average_round - in_current)
        + max(0, debate.rounds - current) * average_round
        + average_step
    )
    return round(left)


def downloads(debate: Debate, *, has_turns: bool, status: str | None = None) -> list[Download]:
    """The downloads a debate offers in ``status`` (its own when None)."""
    status = status or debate.status
    base = f"/debates/{debate.id}"
    items: list[Download] = []
    if status == DebateStatus.COMPLETED:
        items.append(Download("finals", f"{base}/finals.md", "Finals (.md)"))
    if has_turns:
        items.append(Download("transcript", f"{base}/transcript.md", "Transcript (.md)"))
        items.append(Download("report", f"{base}/report.html", "Report (.html)"))
    fmt = get_format(debate.format)
    if status == DebateStatus.COMPLETED and fmt.workspace is not None:
        items.append(Download("workspace", f"{base}/workspace.zip", "Workspace (.zip)"))
    if status == DebateStatus.COMPLETED and fmt.hands_over_plan(debate.topic_type):
        items.append(Download("plan", f"{base}/plan.md", "Plan (.md)"))
    return items


def build_view(
    debate: Debate,
    spec: DebateSpec,
    rows: Sequence[Turn],
    *,
    live_turns: Iterable[LiveTurn] = (),
    last_event_id: str | None = None,
) -> DebateView:
    """The page of ``debate``: its saved turns, and (while it runs) the live ones."""
    active = debate.status in ACTIVE_STATUSES
    turns = merge_turns(rows, live_turns, include_live=active)
    groups = group_turns(turns, format=debate.format, seat_order=[s.role for s in spec.seats])
    return DebateView(
        debate=debate,
        spec=spec,
        groups=tuple(groups),
        downloads=tuple(downloads(debate, has_turns=bool(rows))),
        live=active,
        last_event_id=last_event_id if active else None,
        # A seat left on its provider's default shows the model its turns actually used.
        models_used={row.role: row.model for row in rows},
        progress=progress_of(debate, groups),
        scorecard=scorecard_of(rows),
        warnings=same_provider_warnings(spec),
    )


@dataclass(frozen=True)
class DebateView:
    """Everything ``templates/partials/debate_body.html`` needs."""

    debate: Debate
    spec: DebateSpec
    groups: tuple[GroupView, ...]
    downloads: tuple[Download, ...]
    live: bool
    last_event_id: str | None
    models_used: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None
    # The judge's verdict at a glance, for a format with a judge: part of the body, so the
    # stream's final swap shows it the moment the debate ends.
    scorecard: Scorecard | None = None
    # A judge on the provider of a seat it judges (``app.formats.judging``).
    warnings: tuple[str, ...] = ()

    def seat_model(self, seat: Seat) -> str:
        return seat.model or self.models_used.get(seat.role) or "default model"

    @property
    def format(self) -> Format:
        """The debate's format: its headings and notes for the page."""
        return get_format(self.debate.format)

    @property
    def active(self) -> bool:
        return self.debate.status in ACTIVE_STATUSES

    @property
    def resumable(self) -> bool:
        return self.debate.status in RESUMABLE

    @property
    def total_tokens(self) -> int:
        return self.debate.input_tokens + self.debate.output_tokens

    @property
    def stream_url(self) -> str:
        url = f"/debates/{self.debate.id}/stream"
        return f"{url}?last_event_id={self.last_event_id}" if self.last_event_id else url
