"""The JSON API: start, list, read, cancel and resume debates. Every answer has a response
model, so the OpenAPI schema (``/openapi.json``, ``/docs``) describes it. The events stream
is in ``app.web.stream``.

Bad input is answered 422 with pydantic-style details (``loc`` names the field), never 500:
the API's routes read bodies as plain JSON and render those details themselves, bounded
(``app.web.bad_input.ValidationErrorsRoute``).
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field

from app import debates, store
from app.db import session_scope
from app.debates import DebateRequest
from app.models import Debate, Turn
from app.spec import FormatName
from app.web.bad_input import ValidationErrorsRoute, cut, field_errors
from app.web.deps import EngineDep, JobsDep, SessionDep, SettingsDep, StatusesDep

PER_PAGE = 20

router = APIRouter(prefix="/api", tags=["api"], route_class=ValidationErrorsRoute)
StatusName = Literal["queued", "running", "completed", "failed", "cancelled"]


class SeatOut(BaseModel):
    role: str
    label: str
    provider: str
    model: str | None = Field(description="None: the provider's default model.")


class UsageOut(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


class ContextFileOut(BaseModel):
    path: str
    total_lines: int
    truncated: bool = Field(description="Cut to its first lines before the debaters saw it.")


class TurnOut(BaseModel):
    key: str
    seq: int
    role: str
    label: str
    provider: str
    model: str
    phase: str
    round: int
    status: Literal["completed", "failed"]
    text: str
    verdict: dict[str, Any] | None
    error_kind: str | None
    error_message: str | None
    ended_early: Literal["output_limit", "repetition"] | None = Field(
        default=None,
        description="Why a completed turn stopped short: cut at the output limit, or stopped "
        "because the model was repeating itself. Null when it ended on its own.",
    )
    input_tokens: int
    output_tokens: int
    usage_estimated: bool
    attempts: int
    latency_ms: int
    started_at: datetime
    finished_at: datetime


class DebateSummary(BaseModel):
    id: str
    url: str = Field(description="The debate's page.")
    topic: str
    format: FormatName
    topic_type: str
    rounds: int
    status: StatusName
    status_reason: str | None
    converged: bool | None
    rounds_run: int | None
    seats: list[SeatOut]
    usage: UsageOut
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None


class DebateOut(DebateSummary):
    seed: str | None
    history: bool
    synthesis: str | None
    context: list[ContextFileOut]
    skipped_paths: list[str]
    turns: list[TurnOut]
    notes: list[str] = Field(
        default_factory=list, description="When starting: seats moved to another provider."
    )


class DebatePage(BaseModel):
    items: list[DebateSummary]
    total: int
    page: int
    per_page: int
    pages: int


class Health(BaseModel):
    status: Literal["ok"]


class ErrorOut(BaseModel):
    detail: str


NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No debate with that id."}
}
CONFLICT: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    409: {"model": ErrorOut, "description": "The debate's status does not allow it."},
}


def summary_of(debate: Debate) -> dict[str, Any]:
    spec = store.debate_spec(debate)
    return {
        "id": debate.id,
        "url": f"/debates/{debate.id}",
        "topic": debate.topic,
        "format": debate.format,
        "topic_type": debate.topic_type,
        "rounds": debate.rounds,
        "status": debate.status,
        "status_reason": debate.status_reason,
        "converged": debate.converged,
        "rounds_run": debate.rounds_run,
        "seats": [
            SeatOut(role=s.role, label=s.label, provider=s.provider, model=s.model)
            for s in spec.seats
        ],
        "usage": UsageOut(
            input_tokens=debate.input_tokens,
            output_tokens=debate.output_tokens,
            total_tokens=debate.input_tokens + debate.output_tokens,
        ),
        "created_at": debate.created_at,
        "started_at": debate.started_at,
        "finished_at": debate.finished_at,
    }


def debate_out(debate: Debate, turns: list[Turn], notes: tuple[str, ...] = ()) -> DebateOut:
    spec = store.debate_spec(debate)
    return DebateOut(
        **summary_of(debate),
        seed=debate.seed,
        history=debate.history,
        synthesis=debate.synthesis,
        context=[
            ContextFileOut(path=f.path, total_lines=f.total_lines, truncated=f.truncated)
            for f in spec.context
        ],
        skipped_paths=list(spec.skipped_paths),
        turns=[TurnOut.model_validate(turn, from_attributes=True) for turn in turns],
        notes=list(notes),
    )


def _get(session: Any, debate_id: str) -> Debate:
    debate = store.get_debate(session, debate_id=debate_id)
    if debate is None:
        raise HTTPException(404, f"No debate {cut(debate_id)}.")
    return debate


@router.post("/debates", status_code=201, summary="Start a debate")
async def start_debate(
    body: DebateRequest,
    engine: EngineDep,
    jobs: JobsDep,
    settings: SettingsDep,
    statuses: StatusesDep,
) -> DebateOut:
    try:
        prepared = debates.prepare(body, statuses=statuses)
    except debates.SeatError as error:  # the request checks roles first; kept as a backstop
        raise RequestValidationError(field_errors(("seats",), str(error))) from error
    debate = debates.create(engine, prepared=prepared, settings=settings)
    jobs.submit(debate.id)
    return debate_out(debate, [], prepared.notes)


@router.get("/debates", summary="Debates, newest first")
def list_debates(
    session: SessionDep,
    q: Annotated[str | None, Query(max_length=500, description="Words in the topic.")] = None,
    format: FormatName | None = None,
    status: StatusName | None = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> DebatePage:
    rows, total = store.list_debates(
        session, query=q or None, format=format, status=status, page=page, per_page=PER_PAGE
    )
    return DebatePage(
        items=[DebateSummary(**summary_of(debate)) for debate in rows],
        total=total,
        page=page,
        per_page=PER_PAGE,
        pages=max(1, math.ceil(total / PER_PAGE)),
    )


@router.get(
    "/debates/{debate_id}", summary="A debate with its seats, turns and usage", responses=NOT_FOUND
)
def read_debate(debate_id: str, session: SessionDep) -> DebateOut:
    debate = _get(session, debate_id)
    return debate_out(debate, store.turns_of(session, debate_id=debate_id))


@router.post(
    "/debates/{debate_id}/cancel", summary="Cancel a queued or running debate", responses=CONFLICT
)
async def cancel_debate(debate_id: str, engine: EngineDep, jobs: JobsDep) -> DebateSummary:
    if not await jobs.cancel(debate_id):
        _conflict(engine, debate_id, "cannot be cancelled")
    return _summary(engine, debate_id)


@router.post(
    "/debates/{debate_id}/resume", summary="Resume a failed or cancelled debate", responses=CONFLICT
)
async def resume_debate(debate_id: str, engine: EngineDep, jobs: JobsDep) -> DebateSummary:
    if not jobs.resume(debate_id):
        _conflict(engine, debate_id, "cannot be resumed")
    return _summary(engine, debate_id)


def _summary(engine: Any, debate_id: str) -> DebateSummary:
    with session_scope(engine) as session:
        return DebateSummary(**summary_of(_get(session, debate_id)))


def _conflict(engine: Any, debate_id: str, what: str) -> None:
    with session_scope(engine) as session:
        debate = _get(session, debate_id)
        raise HTTPException(409, f"The debate is {debate.status}: it {what}.")


health_router = APIRouter()


@health_router.get("/healthz", summary="Liveness")
async def healthz() -> Health:
    # On the loop, not in a worker thread: a probe must not queue behind busy threads.
    return Health(status="ok")
