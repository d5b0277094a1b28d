"""The eval pages: ``/evals`` lists the runs of ``argue eval``; ``/evals/{id}`` shows one:
its accuracy per condition as a server-drawn SVG chart (no script) with 95 % intervals,
the table of figures, and every item's answer with a link to its debate."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, Response

from app.db import session_scope
from app.evals import store as eval_store
from app.evals.chart import accuracy_chart
from app.evals.summary import summarize
from app.web.deps import EngineDep, TemplatesDep
from app.web.render import markdown_html

router = APIRouter()

RUNS_SHOWN = 100


@router.get("/evals", response_class=HTMLResponse, summary="Eval runs, newest first")
def eval_runs(request: Request, engine: EngineDep, templates: TemplatesDep) -> Response:
    with session_scope(engine) as session:
        runs = eval_store.list_runs(session, limit=RUNS_SHOWN)
        items = eval_store.items_of_runs(session, run_ids=[run.id for run in runs])
        rows = [{"run": run, "summaries": summarize(run.conditions, items[run.id])} for run in runs]
        for row in rows:
            session.expunge(row["run"])
    return templates.TemplateResponse(request, "evals.html", {"rows": rows})


@router.get("/evals/{run_id}", response_class=HTMLResponse, summary="One eval run")
def eval_run(request: Request, run_id: str, engine: EngineDep, templates: TemplatesDep) -> Response:
    with session_scope(engine) as session:
        run = eval_store.get_run(session, run_id=run_id) if len(run_id) <= 32 else None
        if run is None:
            raise HTTPException(status_code=404, detail=f"No eval run {run_id[:32]}.")
        items = eval_store.items_of(session, run_id=run.id)
        session.expunge_all()
    summaries = summarize(run.conditions, items)
    context = {
        "run": run,
        "items": items,
        "summaries": summaries,
        "chart": accuracy_chart(summaries),
        "markdown": markdown_html,
    }
    return templates.TemplateResponse(request, "eval_run.html", context)
