"""The HTML pages: the form that starts a debate, the live debate page, the history, and the
downloads. Every page reads fine without JavaScript; htmx only makes the debate page live.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from app import debates, export, store
from app.context import MAX_CONTEXT_LINES
from app.db import session_scope
from app.models import DEBATE_STATUSES, Debate
from app.providers.base import ProviderStatus
from app.resources import STATIC_DIR
from app.spec import FORMATS, SEEDS, TOPIC_TYPES
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
    seat_field,
)
from app.web.offload import off_loop
from app.web.uploads import ReadForm, read_form
from app.web.view import build_view

router = APIRouter()

RECENT_COUNT = 8
PER_PAGE = 20


def form_context(
    state: FormState, statuses: list[ProviderStatus], recent: Sequence[object]
) -> dict[str, Any]:
    return {
        "form": state,
        "formats": format_seats(),
        "statuses": statuses,
        "topic_types": TOPIC_TYPES,
        "seeds": SEEDS,
        "topic_type_text": TOPIC_TYPE_TEXT,
        "topic_type_help": TOPIC_TYPE_HELP,
        "seed_text": SEED_TEXT,
        "seed_help": SEED_HELP,
        "known_models": known_models(statuses),
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


@router.get("/", response_class=HTMLResponse, summary="The form that starts a debate")
def index(
    request: Request, session: SessionDep, templates: TemplatesDep, statuses: StatusesDep
) -> HTMLResponse:
    recent, _ = store.list_debate_rows(session, per_page=RECENT_COUNT)
    context = form_context(FormState(), statuses, recent)
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
            prepared = debates.prepare(parsed.request, statuses=statuses)
        except debates.SeatError as error:
            state = FormState(state.values, {"seats": str(error)})
            status_code = 400
        else:
            debate = debates.create(engine, prepared=prepared, settings=settings)
            jobs.submit(debate.id)
            return RedirectResponse(f"/debates/{debate.id}", status_code=303)
    with session_scope(engine) as session:
        recent, _ = store.list_debate_rows(session, per_page=RECENT_COUNT)
    context = form_context(state, statuses, recent)
    response = templates.TemplateResponse(request, "index.html", context, status_code=status_code)
    if not form.complete:
        # The rest of the body is still coming: hang up after the answer rather than let the
        # server read it all only to throw it away.
        response.headers["Connection"] = "close"
    return response


def form_status(form: ReadForm) -> int:
    """413 for a form over the size limit, 400 for one that is not a form, else 422."""
    if form.too_large:
        return 413
    if form.malformed:
        return 400
    return 422


@router.get("/debates", response_class=HTMLResponse, summary="All debates, newest first")
def history(
    request: Request,
    engine: EngineDep,
    templates: TemplatesDep,
    q: str = "",
    format: str = "",
    status: str = "",
    page: Annotated[str, Query(description="A page number from 1; others lead to a page.")] = "1",
) -> Response:
    # Unknown filter values are ignored, not refused: a page should always show something.
    chosen_format = format if format in FORMATS else ""
    chosen_status = status if status in DEBATE_STATUSES else ""
    filters = HistoryFilters(q=q, format=chosen_format, status=chosen_status)
    number = page_number(page)
    if number is None:
        return RedirectResponse(filters.url(1), status_code=302)
    # The session is opened here, not by a dependency: a generator dependency costs two more
    # trips to the thread pool, on the app's busiest page.
    with session_scope(engine) as session:
        rows, total = store.list_debate_rows(
            session,
            query=q.strip() or None,
            format=chosen_format or None,
            status=chosen_status or None,
            page=min(number, MAX_PAGE),
            per_page=PER_PAGE,
        )
    pages = max(1, math.ceil(total / PER_PAGE))
    if number > pages:
        return RedirectResponse(filters.url(pages), status_code=302)
    context = {
        "debates": rows,
        "total": total,
        "page": number,
        "pages": pages,
        "q": q,
        "format": chosen_format,
        "status": chosen_status,
        "formats": FORMATS,
        "statuses": DEBATE_STATUSES,
        "page_url": filters.url,
    }
    return templates.TemplateResponse(request, "list.html", context)


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
    snapshot = hub.snapshot(debate_id)

    def read_and_render() -> HTMLResponse:
        with session_scope(engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None:
                raise HTTPException(404, f"No debate {debate_id}.")
            rows = store.turns_of(session, debate_id=debate_id)
        view = build_view(
            debate,
            store.debate_spec(debate),
            rows,
            live_turns=snapshot.live_turns,
            last_event_id=snapshot.last_id,
        )
        return templates.TemplateResponse(request, "debate.html", {"view": view})

    # A large debate takes long to read and render: never on the event loop.
    return await off_loop(read_and_render)


@router.post("/debates/{debate_id}/cancel", summary="Cancel a debate (form)")
async def cancel_from_form(debate_id: str, engine: EngineDep, jobs: JobsDep) -> Response:
    _require(engine, debate_id)
    await jobs.cancel(debate_id)
    return RedirectResponse(f"/debates/{debate_id}", status_code=303)


@router.post("/debates/{debate_id}/resume", summary="Resume a failed or cancelled debate (form)")
async def resume_from_form(debate_id: str, engine: EngineDep, jobs: JobsDep) -> Response:
    _require(engine, debate_id)
    jobs.resume(debate_id)
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
def download_transcript(debate_id: str, session: SessionDep) -> Response:
    debate = _get(session, debate_id)
    turns = store.turns_of(session, debate_id=debate_id)
    text = export.transcript_markdown(debate, turns)
    when = debate.finished_at or debate.created_at
    name = export.history_filename(export.file_slug(debate), debate.topic_type, when)
    return _attachment(text.encode(), name, "text/markdown; charset=utf-8")


@router.get("/debates/{debate_id}/workspace.zip", summary="A panel's workspace")
def download_workspace(debate_id: str, session: SessionDep) -> Response:
    debate = _finished(session, debate_id)
    if debate.format != "panel":
        raise HTTPException(404, "Only a panel has a workspace.")
    turns = store.turns_of(session, debate_id=debate_id)
    data = export.workspace_zip(debate, turns, date=_date(debate))
    return _attachment(data, f"{export.workspace_name(debate)}.zip", "application/zip")


@router.get("/debates/{debate_id}/plan.md", summary="A plan duel's plan")
def download_plan(debate_id: str, session: SessionDep) -> Response:
    debate = _finished(session, debate_id)
    if debate.format != "duel" or debate.topic_type != "plan":
        raise HTTPException(404, "Only a plan duel has a plan.")
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
    if debate.status != "completed":
        raise HTTPException(
            409, f"The debate is {debate.status}; its report comes when it completes."
        )
    return debate


def _require(engine: Any, debate_id: str) -> None:
    with session_scope(engine) as session:
        _get(session, debate_id)
