"""Re-running a finished debate with other models: a new debate with the same topic, format,
options and context, any seat changed, linked to the one it re-runs (``Debate.rerun_of``).

Seats not changed keep their provider and model; every seat is resolved again, so one whose
provider is no longer configured moves to the local model with a note, as a new debate's
would. Follow-up questions belong to the debate they were asked of and are not carried over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.debates import (
    MAX_SEATS,
    PreparedDebate,
    SeatChoice,
    SeatError,
    create,
    seat_error_message,
)
from app.models import Debate
from app.providers.base import ProviderStatus
from app.providers.registry import resolve_seat
from app.spec import DebateSpec, Seat
from app.status import DebateStatus

__all__ = ["RerunRefused", "RerunRequest", "prepare_rerun", "rerun_spec", "start_rerun"]


class RerunRequest(BaseModel):
    """The seats to change; every other seat keeps its provider and model."""

    model_config = ConfigDict(extra="forbid")

    seats: dict[str, SeatChoice] = Field(
        default_factory=dict,
        max_length=MAX_SEATS,
        description="Role to provider (and model) for the seats to change.",
    )


class RerunRefused(Exception):
    """The debate cannot be re-run now (it is still running); the message says why."""


def rerun_spec(
    original: DebateSpec,
    seats: Mapping[str, SeatChoice],
    *,
    statuses: Sequence[ProviderStatus],
) -> PreparedDebate:
    """``original`` with the seats in ``seats`` changed and every seat resolved to a ready
    provider. Raises ``SeatError`` for a role the debate does not have."""
    roles = {seat.role for seat in original.seats}
    unknown = sorted(set(seats) - roles)
    if unknown:
        raise SeatError(seat_error_message(original.format, unknown, roles))
    resolved: list[Seat] = []
    notes: list[str] = []
    for seat in original.seats:
        choice = seats.get(seat.role)
        if choice is not None:
            seat = replace(seat, provider=choice.provider, model=choice.model)
        ready, note = resolve_seat(seat, statuses)
        resolved.append(ready)
        if note:
            notes.append(note)
    spec = replace(original, seats=tuple(resolved), followups=())
    return PreparedDebate(spec=spec, notes=tuple(notes))


def prepare_rerun(
    engine: Engine,
    *,
    debate_id: str,
    seats: Mapping[str, SeatChoice],
    statuses: Sequence[ProviderStatus],
) -> PreparedDebate:
    """The re-run of the debate, ready to save with ``rerun_of``. Raises ``LookupError`` (no
    such debate), ``RerunRefused`` (still running) or ``SeatError``."""
    with session_scope(engine) as session:
        original = store.get_debate(session, debate_id=debate_id)
        if original is None:
            raise LookupError(f"No debate {debate_id}.")
        if DebateStatus(original.status).is_active:
            raise RerunRefused(f"The debate is {original.status}: re-run it once it has finished.")
        return rerun_spec(store.debate_spec(original), seats, statuses=statuses)


def start_rerun(
    engine: Engine,
    *,
    debate_id: str,
    seats: Mapping[str, SeatChoice],
    statuses: Sequence[ProviderStatus],
    settings: Settings,
) -> tuple[Debate, PreparedDebate]:
    """Save the re-run as a queued debate (the caller submits its job); raises as
    ``prepare_rerun`` does."""
    prepared = prepare_rerun(engine, debate_id=debate_id, seats=seats, statuses=statuses)
    debate = create(engine, prepared=prepared, settings=settings, rerun_of=debate_id)
    return debate, prepared
