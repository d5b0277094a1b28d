"""Deleting a debate from the web: the confirmation page and its form, and the one check
the page and the API share (``delete_or_refuse``).

The page works without JavaScript: the debate page's Delete button is a link to
``GET /debates/{id}/delete``, which asks; its form posts to ``POST /debates/{id}/delete``
(under the app's same-origin rule for state-changing requests), which deletes and leads to
the history with a notice. A queued or running debate is refused with 409, here as in the
API and the command line: cancel it first (``app.deletion``).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.engine import Engine

from app import deletion, store
from app.config import Settings
from app.db import session_scope
from app.jobs import JobManager
from app.models import ACTIVE_STATUSES
from app.web.bad_input import cut
from app.web.deps import EngineDep, JobsDep, SettingsDep, TemplatesDep
from app.web.offload import off_loop

router = APIRouter()

CANCEL_FIRST = "cancel it before deleting it"


def refusal(status: str) -> str:
    return f"The debate is {status}: {CANCEL_FIRST}."


async def delete_or_refuse(
    engine: Engine, jobs: JobManager, settings: Settings, debate_id: str
) -> deletion.Deletion:
    """Delete the debate and its files; 404 for an unknown id, 409 while it is queued or
    running or its job is still stopping."""
    if jobs.is_running(debate_id):
        status = _status(engine, debate_id)
        if status in ACTIVE_STATUSES:
            raise HTTPException(409, refusal(str(status)))
        raise HTTPException(409, "The debate is still stopping: try again in a moment.")
    try:
        return await off_loop(
            deletion.delete_debate, engine, debate_id=debate_id, data_dir=settings.data_dir
        )
    except LookupError as error:
        raise HTTPException(404, f"No debate {cut(debate_id)}.") from error
    except deletion.DebateActive as error:
        raise HTTPException(409, refusal(error.status)) from error


def _status(engine: Engine, debate_id: str) -> str | None:
    with session_scope(engine) as session:
        return store.debate_status(session, debate_id=debate_id)


@router.get(
    "/debates/{debate_id}/delete",
    response_class=HTMLResponse,
    summary="Ask before deleting a debate (page)",
)
def confirm_delete(
    debate_id: str, request: Request, engine: EngineDep, templates: TemplatesDep
) -> HTMLResponse:
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        if debate is None:
            raise HTTPException(404, f"No debate {cut(debate_id)}.")
        turns = len(store.turns_of(session, debate_id=debate_id))
    active = debate.status in ACTIVE_STATUSES
    context = {
        "debate": debate,
        "turn_count": turns,
        "error": refusal(debate.status) if active else None,
    }
    return templates.TemplateResponse(
        request, "delete.html", context, status_code=409 if active else 200
    )


@router.post("/debates/{debate_id}/delete", summary="Delete a debate and its files (form)")
async def delete_from_form(
    debate_id: str,
    request: Request,
    engine: EngineDep,
    jobs: JobsDep,
    settings: SettingsDep,
    templates: TemplatesDep,
) -> Response:
    try:
        deleted = await delete_or_refuse(engine, jobs, settings, debate_id)
    except HTTPException as error:
        if error.status_code != 409:
            raise
        return _refused_page(request, engine, templates, debate_id, str(error.detail))
    return RedirectResponse(f"/debates?deleted={deleted.debate_id}", status_code=303)


def _refused_page(
    request: Request, engine: Engine, templates: TemplatesDep, debate_id: str, error: str
) -> Response:
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        if debate is None:
            raise HTTPException(404, f"No debate {cut(debate_id)}.")
        turns = len(store.turns_of(session, debate_id=debate_id))
    context = {"debate": debate, "turn_count": turns, "error": error}
    return templates.TemplateResponse(request, "delete.html", context, status_code=409)
