"""What the debate page shows, as plain values: turns grouped by round and phase, downloads,
controls. Built from the database's turns and the hub's live turns; the same values feed the
full page and the fragments the stream sends, so both always render alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.endings import ended_early_note
from app.events import LiveTurn
from app.models import ACTIVE_STATUSES, Debate, Turn
from app.spec import DebateSpec, Seat

PHASE_ORDER = (
    "seed",
    "opening",
    "rebuttal",
    "response",
    "convergence",
    "claim",
    "summary",
    "judgement",
    "synthesis",
)
PHASE_TITLES = {
    "seed": "Seed analysis",
    "opening": "Openings",
    "rebuttal": "Rebuttal",
    "response": "Response",
    "convergence": "Convergence check",
    "synthesis": "Synthesis",
    "claim": "Phase 1 · Claims",
    "summary": "Phase 2 · Summaries",
    "judgement": "Phase 3 · Judgement",
}
RESUMABLE = ("failed", "cancelled")
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

    @property
    def id(self) -> str:
        return dom_id(self.key)

    @property
    def ended_early_note(self) -> str | None:
        return ended_early_note(self.ended_early, output_tokens=self.output_tokens)

    @property
    def group_id(self) -> str:
        return group_id(self.round, self.phase)


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
    )


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
    """The turns to show. A completed row wins (it may have completed after the snapshot was
    taken: its replayed completion event then replaces it with itself); otherwise a live turn
    wins over an earlier failed attempt with the same key."""
    by_key: dict[str, TurnView] = {row.key: turn_from_row(row) for row in rows}
    if include_live:
        for turn in live:
            existing = by_key.get(turn.key)
            if existing is None or existing.status != "completed":
                by_key[turn.key] = turn_from_live(turn.info, turn.text)
    return list(by_key.values())


def shows_round_heading(format: str, round: int, phase: str) -> bool:
    """Duels are read round by round; a panel's phases are its own headings."""
    return format == "duel" and round >= 1 and phase not in ("synthesis", "seed")


def group_turns(
    turns: Sequence[TurnView], *, format: str, seat_order: Sequence[str]
) -> list[GroupView]:
    """Turns in groups of one round and phase (parallel turns share a group), in debate
    order; inside a group, in seat order."""
    rank = {role: index for index, role in enumerate(seat_order)}
    groups: dict[tuple[int, str], list[TurnView]] = {}
    for turn in turns:
        groups.setdefault((turn.round, turn.phase), []).append(turn)
    # The synthesis closes a debate whatever round number it carries.
    ordered = sorted(
        groups, key=lambda pair: (pair[1] == "synthesis", pair[0], _phase_rank(pair[1]))
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
                title=PHASE_TITLES.get(phase, phase.title()),
                round_heading=heading,
                turns=tuple(members),
            )
        )
    return views


def _phase_rank(phase: str) -> int:
    return PHASE_ORDER.index(phase) if phase in PHASE_ORDER else len(PHASE_ORDER)


def downloads(debate: Debate, *, has_turns: bool, status: str | None = None) -> list[Download]:
    """The downloads a debate offers in ``status`` (its own when None)."""
    status = status or debate.status
    base = f"/debates/{debate.id}"
    items: list[Download] = []
    if status == "completed":
        items.append(Download("finals", f"{base}/finals.md", "Finals (.md)"))
    if has_turns:
        items.append(Download("transcript", f"{base}/transcript.md", "Transcript (.md)"))
    if status == "completed" and debate.format == "panel":
        items.append(Download("workspace", f"{base}/workspace.zip", "Workspace (.zip)"))
    if status == "completed" and debate.format == "duel" and debate.topic_type == "plan":
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

    def seat_model(self, seat: Seat) -> str:
        return seat.model or self.models_used.get(seat.role) or "default model"

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
