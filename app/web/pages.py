"""The HTML pages: the form that starts a debate, the live debate page, the history, and the
downloads. Every page reads fine without JavaScript; htmx only makes the debate page live.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from sqlmodel import Session
from starlette.concurrency import run_in_threadpool

from app import debates, export, pricing, reruns, spending, store
from app.context import MAX_CONTEXT_LINES
from app.db import read_scope
from app.followups import FollowUpRefused, FollowUpRequest
from app.formats import format_names, get_format
from app.models import ACTIVE_STATUSES, DEBATE_STATUSES, Debate, Turn
from app.pricing import BUDGET_REACHED, Total
from app.providers.base import ProviderStatus
from app.resources import STATIC_DIR
from app.spec import SEEDS, TOPIC_TYPES, DebateSpec
from app.status import DebateStatus
from app.web import sequels
from app.web.deps import (
    EngineDep,
    HubDep,
    JobsDep,
    SessionDep,
    SettingsDep,
    StatusesDep,
    TemplatesDep,
)
from app.web.forms import (
    SEED_HELP,
    SEED_TEXT,
    TOPIC_TYPE_HELP,
    TOPIC_TYPE_TEXT,
    FormState,
    format_seats,
    known_models,
    model_field,
    parse_form,
    rounds_defaults,
    rounds_note,
    seat_field,
)
from app.web.offload import off_loop
from app.web.uploads import ReadForm, read_form
from app.web.view import build_view

router = APIRouter()

RECENT_COUNT = 8
PER_PAGE = 20


def form_context(
    state: FormState,
    statuses: list[ProviderStatus],
    recent: Sequence[object],
    listed_models: Iterable[str] = (),
) -> dict[str, Any]:
    return {
        "form": state,
        "formats": format_seats(),
        "rounds_note": rounds_note(),
        "rounds_defaults": rounds_defaults(),
        "statuses": statuses,
        "topic_types": TOPIC_TYPES,
        "seeds": SEEDS,
        "topic_type_text": TOPIC_TYPE_TEXT,
        "topic_type_help": TOPIC_TYPE_HELP,
        "seed_text": SEED_TEXT,
        "seed_help": SEED_HELP,
        "known_models": known_models(statuses, listed_models),
        "seat_field": seat_field,
        "model_field": model_field,
        "limits": {
            "files": debates.MAX_CONTEXT_FILES,
            "kilobytes": debates.MAX_CONTEXT_FILE_BYTES // 1000,
            "lines": MAX_CONTEXT_LINES,
        },
        "recent": recent,
    }


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    """The icon, for whatever asks at the old address (pages name the SVG itself)."""
    return FileResponse(
        STATIC_DIR / "favicon.svg",
        media_type="image/svg+xml",
        headers={"Cache-Control": "public, max-age=86400"},
    )


# Included before the /static mount, which would answer first; open like the other static
# files (it holds no data).
stylesheet_router = APIRouter(include_in_schema=False)


@stylesheet_router.get("/static/formats.css")
def formats_stylesheet() -> Response:
    """The form's rules that show only the chosen format's seats, one per registered format:
    served, since the page's Content-Security-Policy allows no inline style. Without
    ``:has()`` every set stays visible, and the form still works."""
    rules = [
        f'form:has(input[name=format][value="{name}"]:checked) '
        f'.seats-set:not([data-format="{name}"]) {{ display: none; }}'
        for name in format_names()
    ]
    return Response(
        "\n".join(rules) + "\n",
        media_type="text/css; charset=utf-8",
        headers={"Cache-Control": "no-cache"},
    )


@router.get("/", response_class=HTMLResponse, summary="The form that starts a debate")
def index(
    request: Request, session: SessionDep, templates: TemplatesDep, statuses: StatusesDep
) -> HTMLResponse:
    recent, _ = store.list_debate_rows(session, per_page=RECENT_COUNT)
    prices = pricing.price_table(request.app.state.settings.data_dir)
    context = form_context(FormState(), statuses, recent, prices.prices)
    context["costs"] = row_costs(session, request, recent)
    return templates.TemplateResponse(request, "index.html", context)


@router.post("/debates", response_class=HTMLResponse, summary="Start a debate from the form")
async def create_from_form(
    request: Request,
    engine: EngineDep,
    jobs: JobsDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    statuses: StatusesDep,
) -> Response:
    # Read as it streams in, within the form's limits: never spooled to disk, never past a
    # limit (request.form() would write every upload out in full before any check).
    form = await read_form(request.headers, request.stream())
    parsed = parse_form(form)
    state = parsed.state
    status_code = form_status(form)
    if parsed.request is not None:
        try:
            prices = pricing.price_table(settings.data_dir)
            prepared = debates.prepare(parsed.request, statuses=statuses, prices=prices)
        except debates.SeatError as error:
            state = FormState(state.values, {"seats": str(error)})
            status_code = 400
        except debates.BudgetError as error:
            state = FormState(state.values, {"budget_usd": str(error)})
            status_code = 422
        else:
            debate = await jobs.create(
                partial(debates.save_new, prepared=prepared, settings=settings)
            )
            return RedirectResponse(f"/debates/{debate.id}", status_code=303)

    def recent_rows() -> tuple[list[Any], dict[str, Total]]:
        with read_scope(engine) as session:
            recent, _ = store.list_debate_rows(session, per_page=RECENT_COUNT)
            return recent, row_costs(session, request, recent)

    recent, costs = await run_in_threadpool(recent_rows)
    prices = pricing.price_table(settings.data_dir)
    context = form_context(state, statuses, recent, prices.prices)
    context["costs"] = costs
    response = templates.TemplateResponse(request, "index.html", context, status_code=status_code)
    if not form.complete:
        # The rest of the body is still coming: hang up after the answer rather than let the
        # server read it all only to throw it away.
        response.headers["Connection"] = "close"
    return response


def row_costs(session: Session, request: Request, rows: Sequence[Any]) -> dict[str, Total]:
    """What each debate of a table cost so far (``partials/debate_rows.html``), by id."""
    prices = pricing.price_table(request.app.state.settings.data_dir)
    return spending.debate_totals(session, prices=prices, debate_ids=[row.id for row in rows])


def form_status(form: ReadForm) -> int:
    """413 for a form over the size limit, 400 for one that is not a form, else 422."""
    if form.too_large:
        return 413
    if form.malformed:
        return 400
    return 422


@dataclass(frozen=True)
class HistoryPage:
    """One page of the history's table."""

    rows: Sequence[Any] = ()
    total: int = 0
    page: int = 1
    pages: int = 1
    costs: dict[str, Total] = field(default_factory=dict)


def _history_page(
    request: Request,
    templates: Jinja2Templates,
    filters: HistoryFilters,
    shown: HistoryPage,
    *,
    notice: str | None = None,
    search_error: str | None = None,
) -> Response:
    context = {
        "debates": shown.rows,
        "total": shown.total,
        "page": shown.page,
        "pages": shown.pages,
        "q": filters.q,
        "format": filters.format,
        "status": filters.status,
        "formats": format_names(),
        "statuses": DEBATE_STATUSES,
        "page_url": filters.url,
        "notice": notice,
        "search_error": search_error,
        "costs": shown.costs,
    }
    status_code = 422 if search_error else 200
    return templates.TemplateResponse(request, "list.html", context, status_code=status_code)


@router.get("/debates", response_class=HTMLResponse, summary="All debates, newest first")
def history(
    request: Request,
    engine: EngineDep,
    templates: TemplatesDep,
    q: str = "",
    format: str = "",
    status: str = "",
    page: Annotated[str, Query(description="A page number from 1; others lead to a page.")] = "1",
    deleted: Annotated[str, Query(description="The id of a debate just deleted.")] = "",
) -> Response:
    # Unknown filter values are ignored, not refused: a page should always show something.
    chosen_format = format if format in format_names() else ""
    chosen_status = status if status in DEBATE_STATUSES else ""
    filters = HistoryFilters(q=q, format=chosen_format, status=chosen_status)
    query = q.strip()
    if refusal := store.search_refusal(query):
        # Shown with no debates, the search kept in its box to be shortened.
        return _history_page(request, templates, filters, HistoryPage(), search_error=refusal)
    number = page_number(page)
    if number is None:
        return RedirectResponse(filters.url(1), status_code=302)
    # The session is opened here, not by a dependency: a generator dependency costs two more
    # trips to the thread pool, on the app's busiest page.
    with read_scope(engine) as session:
        rows, total = store.list_debate_rows(
            session,
            query=query or None,
            format=chosen_format or None,
            status=chosen_status or None,
            page=min(number, MAX_PAGE),
            per_page=PER_PAGE,
        )
        costs = row_costs(session, request, rows)
    pages = max(1, math.ceil(total / PER_PAGE))
    if number > pages:
        return RedirectResponse(filters.url(pages), status_code=302)
    shown = HistoryPage(rows=rows, total=total, page=number, pages=pages, costs=costs)
    return _history_page(request, templates, filters, shown, notice=deleted_notice(deleted))


def deleted_notice(debate_id: str) -> str | None:
    """What the history says after a delete (``?deleted=<id>``); an id no debate could have
    is ignored, and the words are fixed: nothing from the address but the id is shown."""
    if not debate_id or not _DEBATE_ID.fullmatch(debate_id):
        return None
    return f"Debate {debate_id} was deleted, with its turns and files."


_DEBATE_ID = re.compile(r"[0-9a-f]{1,32}")


# Past any real history (two million debates); keeps the query's offset small.
MAX_PAGE = 100_000


@dataclass(frozen=True)
class HistoryFilters:
    """The history's filters, as its links carry them (empty ones left out)."""

    q: str = ""
    format: str = ""
    status: str = ""

    def url(self, page: int) -> str:
        given = {"q": self.q, "format": self.format, "status": self.status}
        query = {name: value for name, value in given.items() if value}
        return f"/debates?{urlencode({**query, 'page': page})}"


def page_number(text: str) -> int | None:
    """The page a ``?page=`` asks for, from 1; None when it is not a page number at all (a
    typo, 0, a fraction): such an address leads to the first page rather than an error."""
    digits = text.strip()
    if not digits.isascii() or not digits.isdigit():
        return None
    significant = digits.lstrip("0")
    if not significant:
        return None
    # However many digits it has, a number past MAX_PAGE is past the last page.
    return int(significant) if len(significant) <= len(str(MAX_PAGE)) else MAX_PAGE + 1


@router.get("/debates/{debate_id}", response_class=HTMLResponse, summary="A debate, live")
async def debate_page(
    debate_id: str, request: Request, engine: EngineDep, hub: HubDep, templates: TemplatesDep
) -> HTMLResponse:
    # The live turns first, then the database: the page shows the state after the snapshot's
    # last event or later, and its stream continues from that id. A turn that completed in
    # between is already in the database; its replayed events then bring it back to itself.
    snapshot = await hub.snapshot(debate_id)

    def read_and_render() -> HTMLResponse:
        with read_scope(engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None:
                raise HTTPException(404, f"No debate {debate_id}.")
            rows = store.turns_of(session, debate_id=debate_id)
            sequel = sequels.page_context(session, request, debate, rows)
        view = build_view(
            debate,
            store.debate_spec(debate),
            rows,
            live_turns=snapshot.live_turns,
            last_event_id=snapshot.last_id,
        )
        context: dict[str, Any] = {"view": view}
        context["cost"] = cost_of(request, debate, rows)
        context.update(sequel)
        return templates.TemplateResponse(request, "debate.html", context)

    # A large debate takes long to read and render: never on the event loop.
    return await off_loop(read_and_render)


@router.get("/debates/{debate_id}/cost", response_class=HTMLResponse, include_in_schema=False)
def debate_cost(
    debate_id: str, request: Request, session: SessionDep, templates: TemplatesDep
) -> HTMLResponse:
    """The debate page's cost block again: it fetches itself while the debate runs."""
    debate = _get(session, debate_id)
    rows = store.turns_of(session, debate_id=debate_id)
    context = {"cost": cost_of(request, debate, rows)}
    return templates.TemplateResponse(request, "partials/cost.html", context)


def cost_of(request: Request, debate: Debate, rows: Sequence[Turn]) -> spending.CostSheet:
    prices = pricing.price_table(request.app.state.settings.data_dir)
    active = debate.status in ACTIVE_STATUSES
    reason = debate.status_reason or ""
    return spending.cost_sheet(
        prices,
        rows,
        store.debate_spec(debate).budget_usd,
        refresh_url=f"/debates/{debate.id}/cost" if active else None,
        stopped_by_budget=debate.status == DebateStatus.FAILED
        and reason.startswith(BUDGET_REACHED),
    )


# -- follow-ups, re-runs and comparing ------------------------------------------------------


async def _page_again(
    request: Request,
    debate_id: str,
    typed: sequels.SequelInput,
    status_code: int,
    deps: tuple[Any, Any, Any],
) -> Response:
    """The debate page again, with what was typed in its form and what is wrong with it."""
    engine, hub, templates = deps
    request.state.sequel_input = typed
    response = await debate_page(
        debate_id=debate_id, request=request, engine=engine, hub=hub, templates=templates
    )
    response.status_code = status_code
    return response


@router.post("/debates/{debate_id}/followups", summary="Ask a follow-up question (form)")
async def followup_from_form(
    debate_id: str,
    request: Request,
    engine: EngineDep,
    hub: HubDep,
    jobs: JobsDep,
    templates: TemplatesDep,
) -> Response:
    _require(engine, debate_id)
    form = await read_form(request.headers, request.stream())
    typed = form.text("question")
    deps = (engine, hub, templates)
    try:
        question = FollowUpRequest(question=typed).question
    except ValidationError as error:
        problem = str(error.errors()[0]["msg"]).removeprefix("Value error, ")
        wrong = sequels.SequelInput(question=typed, followup_error=problem)
        return await _page_again(request, debate_id, wrong, 422, deps)
    try:
        await jobs.follow_up_requested(debate_id, question, answer=_nothing)
    except FollowUpRefused as error:
        refused = sequels.SequelInput(question=typed, followup_error=str(error))
        return await _page_again(request, debate_id, refused, 409, deps)
    return RedirectResponse(f"/debates/{debate_id}", status_code=303)


@router.post("/debates/{debate_id}/rerun", summary="Re-run a debate with other seats (form)")
async def rerun_from_form(
    debate_id: str,
    request: Request,
    engine: EngineDep,
    hub: HubDep,
    jobs: JobsDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    statuses: StatusesDep,
) -> Response:
    spec = await run_in_threadpool(_spec_of, engine, debate_id)
    form = await read_form(request.headers, request.stream())
    values = {name: value.text for name, value in form.fields.items()}
    seats, problem = sequels.read_rerun_seats(spec, values)
    if problem is None:
        try:
            prepared = await run_in_threadpool(
                reruns.prepare_rerun, engine, debate_id=debate_id, seats=seats, statuses=statuses
            )
        except (reruns.RerunRefused, debates.SeatError) as error:
            problem = str(error)
        else:
            debate = await jobs.create(
                partial(debates.save_new, prepared=prepared, settings=settings, rerun_of=debate_id)
            )
            return RedirectResponse(f"/debates/{debate.id}", status_code=303)
    typed = sequels.SequelInput(rerun_values=values, rerun_error=problem)
    return await _page_again(request, debate_id, typed, 422, (engine, hub, templates))


@router.get(
    "/debates/{debate_id}/compare/{other_id}",
    response_class=HTMLResponse,
    summary="Two debates' syntheses side by side",
)
def compare_page(
    debate_id: str, other_id: str, request: Request, session: SessionDep, templates: TemplatesDep
) -> HTMLResponse:
    sides = [_get(session, one) for one in (debate_id, other_id)]
    context = {"sides": [(debate, store.debate_spec(debate)) for debate in sides]}
    return templates.TemplateResponse(request, "compare.html", context)


@router.post("/debates/{debate_id}/cancel", summary="Cancel a debate (form)")
async def cancel_from_form(debate_id: str, engine: EngineDep, jobs: JobsDep) -> Response:
    await run_in_threadpool(_require, engine, debate_id)
    await jobs.cancel(debate_id)
    return RedirectResponse(f"/debates/{debate_id}", status_code=303)


@router.post("/debates/{debate_id}/resume", summary="Resume a failed or cancelled debate (form)")
async def resume_from_form(debate_id: str, engine: EngineDep, jobs: JobsDep) -> Response:
    await run_in_threadpool(_require, engine, debate_id)
    await jobs.resume_requested(debate_id, answer=_nothing)
    return RedirectResponse(f"/debates/{debate_id}", status_code=303)


# -- downloads ----------------------------------------------------------------------------


@router.get("/debates/{debate_id}/finals.md", summary="The finals report")
def download_finals(debate_id: str, session: SessionDep) -> Response:
    debate = _finished(session, debate_id)
    turns = store.turns_of(session, debate_id=debate_id)
    text = export.finals_markdown(debate, turns, date=_date(debate))
    name = export.finals_filename(export.file_slug(debate))
    return _attachment(text.encode(), name, "text/markdown; charset=utf-8")


@router.get("/debates/{debate_id}/transcript.md", summary="The whole transcript")
def download_transcript(debate_id: str, session: SessionDep, settings: SettingsDep) -> Response:
    debate = _get(session, debate_id)
    turns = store.turns_of(session, debate_id=debate_id)
    text = export.transcript_markdown(debate, turns, pricing.price_table(settings.data_dir))
    when = debate.finished_at or debate.created_at
    name = export.history_filename(export.file_slug(debate), debate.topic_type, when)
    return _attachment(text.encode(), name, "text/markdown; charset=utf-8")


@router.get("/debates/{debate_id}/workspace.zip", summary="A finished debate's workspace")
def download_workspace(debate_id: str, session: SessionDep) -> Response:
    debate = _finished(session, debate_id)
    if get_format(debate.format).workspace is None:
        raise HTTPException(404, f"A {debate.format} has no workspace.")
    turns = store.turns_of(session, debate_id=debate_id)
    data = export.workspace_zip(debate, turns, date=_date(debate))
    return _attachment(data, f"{export.workspace_name(debate)}.zip", "application/zip")


@router.get("/debates/{debate_id}/plan.md", summary="The plan a debate agreed on")
def download_plan(debate_id: str, session: SessionDep) -> Response:
    debate = _finished(session, debate_id)
    if not get_format(debate.format).hands_over_plan(debate.topic_type):
        raise HTTPException(404, "This debate hands over no plan.")
    turns = store.turns_of(session, debate_id=debate_id)
    text = export.plan_markdown(debate, turns, date=_date(debate))
    return _attachment(text.encode(), plan_filename(debate), "text/markdown; charset=utf-8")


def plan_filename(debate: Debate) -> str:
    """The name the plan was written under, when it was; else one made from the slug."""
    written = (debate.outputs or {}).get("plan")
    if isinstance(written, str) and written:
        return Path(written).name
    return f"{export.file_slug(debate)}-plan.md"


def _attachment(data: bytes, filename: str, media_type: str) -> Response:
    # File names are built from slugs ([a-z0-9-]) and fixed words: no quoting is needed.
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(content=data, media_type=media_type, headers=headers)


def _date(debate: Debate) -> Any:
    return (debate.finished_at or debate.created_at).date()


def _get(session: Any, debate_id: str) -> Debate:
    debate = store.get_debate(session, debate_id=debate_id)
    if debate is None:
        raise HTTPException(404, f"No debate {debate_id}.")
    return debate


def _finished(session: Any, debate_id: str) -> Debate:
    debate = _get(session, debate_id)
    if debate.status != DebateStatus.COMPLETED:
        raise HTTPException(
            409, f"The debate is {debate.status}; its report comes when it completes."
        )
    return debate


def _require(engine: Any, debate_id: str) -> None:
    with read_scope(engine) as session:
        _get(session, debate_id)


def _nothing() -> None:
    """What a form's request reads once its debate is queued: nothing (it redirects)."""


def _spec_of(engine: Any, debate_id: str) -> DebateSpec:
    with read_scope(engine) as session:
        return store.debate_spec(_get(session, debate_id))
