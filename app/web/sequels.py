"""What the debate page shows of what comes after a debate: the follow-up questions asked of
it (with the form that asks one) and its re-runs (with the form that starts one, and the
links between a debate and its re-runs), as plain values for
``templates/partials/followup.html`` and ``templates/partials/rerun.html``; and the reading
of the re-run form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request
from pydantic import ValidationError
from sqlmodel import Session

from app import store
from app.debates import SeatChoice
from app.followups import MAX_QUESTION_CHARS, refusal
from app.formats.followups import FOLLOWUP, followup_number
from app.models import ACTIVE_STATUSES, Debate, Turn
from app.providers.base import ProviderStatus
from app.spec import DebateSpec
from app.status import DebateStatus
from app.web.view import group_id

__all__ = [
    "AskedQuestion",
    "FollowUpPanel",
    "RerunPanel",
    "RerunSeat",
    "SequelInput",
    "followup_panel",
    "page_context",
    "read_rerun_seats",
    "rerun_panel",
]


@dataclass(frozen=True)
class AskedQuestion:
    number: int
    question: str
    anchor: str  # the id of the group that holds (or will hold) its answers
    answered: bool  # an answer of it is saved


@dataclass(frozen=True)
class FollowUpPanel:
    debate_id: str
    asked: tuple[AskedQuestion, ...]
    refusal: str | None  # why no question can be asked now; None: the form is shown
    active: bool  # the debate is queued or running: unanswered questions are on their way
    max_chars: int = MAX_QUESTION_CHARS
    value: str = ""
    error: str | None = None


def followup_panel(
    debate: Debate, rows: Sequence[Turn], *, value: str = "", error: str | None = None
) -> FollowUpPanel:
    # Question n's answers carry the debate's last round + n (app.formats.followups).
    last_round = max((row.round for row in rows if row.phase != FOLLOWUP), default=0)
    answered = {followup_number(row.key) for row in rows if row.phase == FOLLOWUP and row.text}
    asked = tuple(
        AskedQuestion(
            number=number,
            question=str(item.get("question", "")),
            anchor=group_id(last_round + number, FOLLOWUP),
            answered=number in answered,
        )
        for number, item in enumerate(debate.followups or (), start=1)
    )
    return FollowUpPanel(
        debate_id=debate.id,
        asked=asked,
        refusal=refusal(debate),
        active=debate.status in ACTIVE_STATUSES,
        value=value,
        error=error,
    )


@dataclass(frozen=True)
class RerunSeat:
    role: str
    label: str
    provider: str
    model: str

    @property
    def provider_field(self) -> str:
        return f"seat-{self.role}"

    @property
    def model_field(self) -> str:
        return f"model-{self.role}"


@dataclass(frozen=True)
class RerunPanel:
    debate_id: str
    rerun_of: str | None
    reruns: tuple[str, ...]
    seats: tuple[RerunSeat, ...]
    providers: tuple[ProviderStatus, ...]
    finished: bool
    error: str | None = None
    values: dict[str, str] = field(default_factory=dict)

    def value(self, name: str, default: str) -> str:
        return self.values.get(name, default)


def rerun_panel(
    debate: Debate,
    spec: DebateSpec,
    *,
    reruns: Sequence[str],
    statuses: Sequence[ProviderStatus],
    error: str | None = None,
    values: dict[str, str] | None = None,
) -> RerunPanel:
    return RerunPanel(
        debate_id=debate.id,
        rerun_of=debate.rerun_of,
        reruns=tuple(reruns),
        seats=tuple(
            RerunSeat(seat.role, seat.label, seat.provider, seat.model or "") for seat in spec.seats
        ),
        providers=tuple(statuses),
        finished=DebateStatus(debate.status).is_ended,
        error=error,
        values=dict(values or {}),
    )


def read_rerun_seats(
    spec: DebateSpec, fields: dict[str, str]
) -> tuple[dict[str, SeatChoice], str | None]:
    """The seats the re-run form changes (those whose provider or model differ from the
    debate's), or the first problem with what was typed."""
    changed: dict[str, SeatChoice] = {}
    for seat in spec.seats:
        provider = fields.get(f"seat-{seat.role}", "").strip() or seat.provider
        model = fields.get(f"model-{seat.role}", "").strip() or None
        if provider == seat.provider and model == seat.model:
            continue
        try:
            changed[seat.role] = SeatChoice(provider=provider, model=model)
        except ValidationError as error:
            problem = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
            return {}, f"{seat.label}: {problem}"
    return changed, None


@dataclass(frozen=True)
class SequelInput:
    """What was typed in the follow-up or re-run form, and what was wrong with it: set on
    ``request.state.sequel_input`` when the page is shown again with the form's error."""

    question: str = ""
    followup_error: str | None = None
    rerun_values: dict[str, str] | None = None
    rerun_error: str | None = None


def page_context(
    session: Session, request: Request, debate: Debate, rows: Sequence[Turn]
) -> dict[str, Any]:
    """The debate page's ``followup`` and ``rerun`` values (read inside its session)."""
    typed = getattr(request.state, "sequel_input", None) or SequelInput()
    statuses: list[ProviderStatus] = request.app.state.statuses.get()
    return {
        "followup": followup_panel(debate, rows, value=typed.question, error=typed.followup_error),
        "rerun": rerun_panel(
            debate,
            store.debate_spec(debate),
            reruns=store.reruns_of(session, debate_id=debate.id),
            statuses=statuses,
            error=typed.rerun_error,
            values=typed.rerun_values,
        ),
    }
