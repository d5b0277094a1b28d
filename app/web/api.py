"""The JSON API: start, list, read, cancel, resume and delete debates, ask them follow-up
questions and re-run them with other seats. Every answer has a response
model, so the OpenAPI schema (``/openapi.json``, ``/docs``) describes it. The events stream
is in ``app.web.stream``.

Bad input is answered 422 with pydantic-style details (``loc`` names the field), never 500:
the API's routes read bodies as plain JSON and render those details themselves, bounded
(``app.web.bad_input.ValidationErrorsRoute``).
"""

from __future__ import annotations

import math
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Annotated, Any, Literal, NoReturn

from fastapi import APIRouter, HTTPException, Query, Response
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, Field, PlainSerializer
from starlette.concurrency import run_in_threadpool

from app import debates, pricing, readiness, reruns, spending, store
from app.config import Settings
from app.db import read_scope
from app.debates import DebateRequest
from app.followups import FollowUpRefused, FollowUpRequest
from app.formats import FormatName
from app.formats.judging import same_provider_warnings
from app.models import Debate, Turn
from app.pricing import ModelUse, PriceTable, Total
from app.status import DebateStatus
from app.web.bad_input import ValidationErrorsRoute, cut, field_errors
from app.web.delete import delete_or_refuse
from app.web.deps import EngineDep, JobsDep, SessionDep, SettingsDep, StatusesDep

PER_PAGE = 20

router = APIRouter(prefix="/api", tags=["api"], route_class=ValidationErrorsRoute)


class SeatOut(BaseModel):
    role: str
    label: str
    provider: str
    model: str | None = Field(description="None: the provider's default model.")


class UsageOut(BaseModel):
    input_tokens: int
    output_tokens: int
    total_tokens: int


# Money goes out as a JSON number (pydantic would write a Decimal as a string).
Money = Annotated[Decimal, PlainSerializer(float, return_type=float, when_used="json")]
COST_HELP = (
    "US dollars at the providers' list prices (app/prices.toml, ARGUE_HOME/prices.toml); "
    "null: unknown, as a model used has no price."
)


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
    cost: Money | None = Field(default=None, description=COST_HELP)


class FollowUpOut(BaseModel):
    number: int = Field(description="1 for the first question asked of the debate.")
    question: str
    asked_at: datetime | None
    key_prefix: str = Field(description="Its answers' turn keys start with this.")


class DebateSummary(BaseModel):
    id: str
    url: str = Field(description="The debate's page.")
    topic: str
    format: FormatName
    topic_type: str
    rounds: int
    status: DebateStatus
    status_reason: str | None
    converged: bool | None
    rounds_run: int | None
    seats: list[SeatOut]
    usage: UsageOut
    cost: Money | None = Field(default=None, description=COST_HELP)
    budget_usd: Money | None = Field(
        default=None, description="The most the debate may spend, in US dollars; null: no limit."
    )
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    rerun_of: str | None = Field(
        default=None, description="The debate this one re-runs with other seats."
    )
    followups: list[FollowUpOut] = Field(
        default_factory=list, description="Questions asked after the debate, in order."
    )


class RerunOut(DebateSummary):
    notes: list[str] = Field(
        default_factory=list, description="Seats moved to another provider (not configured)."
    )


class DebateOut(DebateSummary):
    seed: str | None
    history: bool
    blind_judge: bool = Field(
        default=False, description="The judge saw no side or model names (panel)."
    )
    swap_judge: bool = Field(
        default=False, description="The judge judged twice, the sides' order swapped (panel)."
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="A judge (or the duel's synthesizer) runs on the same provider as a seat "
        "it judges, and may favour it.",
    )
    synthesis: str | None
    context: list[ContextFileOut]
    skipped_paths: list[str]
    turns: list[TurnOut]
    notes: list[str] = Field(
        default_factory=list, description="When starting: seats moved to another provider."
    )
    reruns: list[str] = Field(
        default_factory=list, description="Ids of the debates that re-run this one, oldest first."
    )


class DebatePage(BaseModel):
    items: list[DebateSummary]
    total: int
    page: int
    per_page: int
    pages: int


class Health(BaseModel):
    status: Literal["ok"]


class ServiceOut(BaseModel):
    status: Literal["ok", "error", "not configured"]
    error: str | None = Field(
        default=None, description="The service's own message when it failed; no secrets."
    )


class ReadinessOut(BaseModel):
    status: Literal["ready", "not ready"]
    database: ServiceOut
    redis: ServiceOut = Field(description="Checked when ARGUE_REDIS_URL is set.")


class ErrorOut(BaseModel):
    detail: str


NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No debate with that id."}
}
CONFLICT: dict[int | str, dict[str, Any]] = {
    **NOT_FOUND,
    409: {"model": ErrorOut, "description": "The debate's status does not allow it."},
}


def summary_of(debate: Debate, spent: Total) -> dict[str, Any]:
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
        "cost": spent.amount,
        "budget_usd": spec.budget_usd,
        "created_at": debate.created_at,
        "started_at": debate.started_at,
        "finished_at": debate.finished_at,
        "rerun_of": debate.rerun_of,
        "followups": followups_of(debate),
    }


def followups_of(debate: Debate) -> list[FollowUpOut]:
    return [
        FollowUpOut(
            number=number,
            question=str(item.get("question", "")),
            asked_at=item.get("asked_at"),
            key_prefix=f"q{number}.followup.",
        )
        for number, item in enumerate(debate.followups or (), start=1)
    ]


def debate_out(
    debate: Debate,
    turns: list[Turn],
    prices: PriceTable,
    notes: tuple[str, ...] = (),
    *,
    rerun_ids: list[str] | None = None,
) -> DebateOut:
    spec = store.debate_spec(debate)
    uses = [ModelUse(t.provider, t.model, t.input_tokens, t.output_tokens) for t in turns]
    return DebateOut(
        **summary_of(debate, pricing.total(prices, uses)),
        seed=debate.seed,
        history=debate.history,
        blind_judge=spec.blind_judge,
        swap_judge=spec.swap_judge,
        warnings=list(same_provider_warnings(spec)),
        synthesis=debate.synthesis,
        context=[
            ContextFileOut(path=f.path, total_lines=f.total_lines, truncated=f.truncated)
            for f in spec.context
        ],
        skipped_paths=list(spec.skipped_paths),
        turns=[turn_out(turn, prices) for turn in turns],
        notes=list(notes),
        reruns=rerun_ids or [],
    )


def turn_out(turn: Turn, prices: PriceTable) -> TurnOut:
    out = TurnOut.model_validate(turn, from_attributes=True)
    return out.model_copy(update={"cost": spending.turn_cost(prices, turn)})


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
    prices = pricing.price_table(settings.data_dir)
    try:
        prepared = debates.prepare(body, statuses=statuses, prices=prices)
    except debates.SeatError as error:  # the request checks roles first; kept as a backstop
        raise RequestValidationError(field_errors(("seats",), str(error))) from error
    except debates.BudgetError as error:
        raise RequestValidationError(field_errors(("budget_usd",), str(error))) from error
    debate = await jobs.create(partial(debates.save_new, prepared=prepared, settings=settings))
    return debate_out(debate, [], prices, prepared.notes)


@router.get("/debates", summary="Debates, newest first")
def list_debates(
    session: SessionDep,
    settings: SettingsDep,
    q: Annotated[
        str | None, Query(max_length=store.MAX_SEARCH_CHARS, description="Words in the topic.")
    ] = None,
    format: FormatName | None = None,
    status: DebateStatus | None = None,
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
) -> DebatePage:
    rows, total = store.list_debates(
        session, query=q or None, format=format, status=status, page=page, per_page=PER_PAGE
    )
    prices = pricing.price_table(settings.data_dir)
    spent = spending.debate_totals(session, prices=prices, debate_ids=[d.id for d in rows])
    return DebatePage(
        items=[DebateSummary(**summary_of(debate, spent[debate.id])) for debate in rows],
        total=total,
        page=page,
        per_page=PER_PAGE,
        pages=max(1, math.ceil(total / PER_PAGE)),
    )


@router.get(
    "/debates/{debate_id}", summary="A debate with its seats, turns and usage", responses=NOT_FOUND
)
def read_debate(debate_id: str, session: SessionDep, settings: SettingsDep) -> DebateOut:
    debate = _get(session, debate_id)
    prices = pricing.price_table(settings.data_dir)
    return debate_out(
        debate,
        store.turns_of(session, debate_id=debate_id),
        prices,
        rerun_ids=store.reruns_of(session, debate_id=debate_id),
    )


@router.post(
    "/debates/{debate_id}/cancel", summary="Cancel a queued or running debate", responses=CONFLICT
)
async def cancel_debate(
    debate_id: str, engine: EngineDep, jobs: JobsDep, settings: SettingsDep
) -> DebateSummary:
    if not await jobs.cancel(debate_id):
        await _conflict(engine, debate_id, "cannot be cancelled")
    return await _summary(engine, debate_id, settings)


@router.post(
    "/debates/{debate_id}/resume", summary="Resume a failed or cancelled debate", responses=CONFLICT
)
async def resume_debate(
    debate_id: str, engine: EngineDep, jobs: JobsDep, settings: SettingsDep
) -> DebateSummary:
    summary = await jobs.resume_requested(
        debate_id, answer=partial(_read_summary, engine, debate_id, settings)
    )
    if summary is None:
        await _conflict(engine, debate_id, "cannot be resumed")
    return summary


@router.delete(
    "/debates/{debate_id}",
    status_code=204,
    response_class=Response,
    summary="Delete a debate, its turns and the files it wrote",
    description="A queued or running debate is refused with 409: cancel it first.",
    responses=CONFLICT,
)
async def delete_debate(
    debate_id: str, engine: EngineDep, jobs: JobsDep, settings: SettingsDep
) -> Response:
    await delete_or_refuse(engine, jobs, settings, debate_id)
    return Response(status_code=204)


@router.post(
    "/debates/{debate_id}/followups",
    status_code=202,
    summary="Ask a completed debate a follow-up question",
    description=(
        "The question is saved with the debate and its seats answer it as new turns of phase "
        "`followup` (keys `q<n>.followup.<role>`), streamed on the debate's events like any "
        "turn. A duel's two seats answer; a panel's first debater of each side and its judge. "
        "409 unless the debate is completed (resume a failed or cancelled one first)."
    ),
    responses=CONFLICT,
)
async def ask_followup(
    debate_id: str,
    body: FollowUpRequest,
    engine: EngineDep,
    jobs: JobsDep,
    settings: SettingsDep,
) -> DebateSummary:
    try:
        return await jobs.follow_up_requested(
            debate_id, body.question, answer=partial(_read_summary, engine, debate_id, settings)
        )
    except LookupError as error:
        raise HTTPException(404, f"No debate {cut(debate_id)}.") from error
    except FollowUpRefused as error:
        raise HTTPException(409, str(error)) from error


@router.post(
    "/debates/{debate_id}/rerun",
    status_code=202,
    summary="Re-run a finished debate, with any seats changed",
    description=(
        "A new debate with the same topic, format, options and context; the seats named in "
        "`seats` change, the others keep their provider and model. Its `rerun_of` names this "
        "debate. 409 while this debate is queued or running."
    ),
    responses=CONFLICT,
)
async def rerun_debate(
    debate_id: str,
    engine: EngineDep,
    jobs: JobsDep,
    settings: SettingsDep,
    statuses: StatusesDep,
    body: reruns.RerunRequest | None = None,
) -> RerunOut:
    seats = body.seats if body is not None else {}
    try:
        prepared = await run_in_threadpool(
            reruns.prepare_rerun, engine, debate_id=debate_id, seats=seats, statuses=statuses
        )
    except LookupError as error:
        raise HTTPException(404, f"No debate {cut(debate_id)}.") from error
    except reruns.RerunRefused as error:
        raise HTTPException(409, str(error)) from error
    except debates.SeatError as error:
        raise RequestValidationError(field_errors(("seats",), str(error))) from error
    debate = await jobs.create(
        partial(debates.save_new, prepared=prepared, settings=settings, rerun_of=debate_id)
    )
    # Built from the debate as saved: read again, its job might have started meanwhile.
    summary = summary_of(debate, pricing.total(pricing.price_table(settings.data_dir), []))
    return RerunOut(**summary, notes=list(prepared.notes))


# The async handlers' reads run in request threads: on the event loop, each would hold up
# every live stream for a database round trip.


def _read_summary(engine: Any, debate_id: str, settings: Settings) -> DebateSummary:
    prices = pricing.price_table(settings.data_dir)
    with read_scope(engine) as session:
        debate = _get(session, debate_id)
        spent = spending.debate_total(session, prices=prices, debate_id=debate_id)
        return DebateSummary(**summary_of(debate, spent))


async def _summary(engine: Any, debate_id: str, settings: Settings) -> DebateSummary:
    return await run_in_threadpool(_read_summary, engine, debate_id, settings)


async def _conflict(engine: Any, debate_id: str, what: str) -> NoReturn:
    def read() -> str:
        with read_scope(engine) as session:
            return _get(session, debate_id).status

    status = await run_in_threadpool(read)
    raise HTTPException(409, f"The debate is {status}: it {what}.")


health_router = APIRouter()


@health_router.get("/healthz", summary="Liveness")
async def healthz() -> Health:
    # On the loop, not in a worker thread: a probe must not queue behind busy threads.
    return Health(status="ok")


# Probes that ask with HEAD (some load balancers and uptime checks do) get the same status
# without a body. Left out of the schema: they are the GET operations above, headless.
@health_router.head("/healthz", include_in_schema=False)
async def healthz_head() -> Response:
    return Response()


@health_router.get(
    "/readyz",
    summary="Readiness: the database and Redis answer",
    responses={503: {"model": ReadinessOut, "description": "A configured service failed."}},
)
async def readyz(response: Response, settings: SettingsDep, engine: EngineDep) -> ReadinessOut:
    """200 when the database (and Redis, when configured) answer; 503 naming what failed."""
    checked = await readiness.check_readiness(settings, engine)
    if not checked.ready:
        response.status_code = 503
    return ReadinessOut(
        status="ready" if checked.ready else "not ready",
        database=ServiceOut(status=checked.database.status, error=checked.database.error),
        redis=ServiceOut(status=checked.redis.status, error=checked.redis.error),
    )


@health_router.head("/readyz", include_in_schema=False)
async def readyz_head(settings: SettingsDep, engine: EngineDep) -> Response:
    checked = await readiness.check_readiness(settings, engine)
    return Response(status_code=200 if checked.ready else 503)
