"""Building the web app: its lifespan owns the engine (migrated on start), the event hub
and the background jobs; routes reach them through ``app.state`` (``app.web.deps``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException

from app import collector, pricing, vendored
from app.bus import bus_from_settings
from app.config import Settings, get_settings
from app.db import database_failure, get_engine
from app.jobs import JobManager
from app.ledger import ledger_lane
from app.migrate import migrate
from app.providers.base import Provider
from app.providers.local import llama_cpp_missing
from app.providers.registry import PROVIDER_NAMES, build_provider, close_providers
from app.providers.worker import ProviderWorker, moved_to_worker, provider_worker_wanted
from app.resources import STATIC_DIR
from app.threads import limit_request_threads, shorten_thread_switches
from app.web import api, apidocs, assets, delete, evals, offload, pages, report, security, stream
from app.web.bad_input import validation_error_handler
from app.web.deps import ProviderStatuses, compile_all, make_templates
from app.web.timelines import Timelines

log = logging.getLogger(__name__)

DATABASE_DOWN = "The database is not answering: try again in a moment."
DATABASE_RETRY_SECONDS = 5


def available_providers(settings: Settings) -> dict[str, Provider]:
    """Every provider whose adapter can be built here; one whose SDK will not import is
    left out (its seats fall back to the local model) instead of stopping the app."""
    providers: dict[str, Provider] = {}
    for name in PROVIDER_NAMES:
        try:
            providers[name] = build_provider(name, settings)
        except ImportError as error:
            log.warning("provider %s unavailable: %s", name, error)
    return providers


def _warm_up(templates: Jinja2Templates, *, local: bool, runs_debates: bool) -> None:
    """What the first requests would otherwise do while debates stream: load every template,
    the local model's bindings (its status asks for them, on the first form or debate
    posted: a few hundred milliseconds holding the interpreter), and start the threads that
    render and record (``Lane.start``)."""
    compile_all(templates)
    if local:
        llama_cpp_missing()
    offload.start_threads()
    if runs_debates:
        ledger_lane.start()


def create_app(
    settings: Settings | None = None, *, providers: Mapping[str, Provider] | None = None
) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        limit_request_threads()
        # A malformed ARGUE_HOME/prices.toml stops the start with its own message, not a
        # page later on.
        pricing.check(settings.data_dir)
        if settings.assets == "local":  # fetched once, checked on every start
            app.state.vendored = await asyncio.to_thread(vendored.ensure_for, settings)
        engine = get_engine(settings)
        migrate(engine)
        chosen = dict(providers) if providers is not None else available_providers(settings)
        worker: ProviderWorker | None = None
        if provider_worker_wanted(settings, runs_debates=not settings.runs_in_workers):
            chosen, worker = await moved_to_worker(chosen, settings)
        hub = bus_from_settings(settings)
        jobs = JobManager(engine=engine, hub=hub, providers=chosen, settings=settings)
        if settings.runs_in_workers:
            # Debates run in `argue worker` processes; this node only enqueues, and resumes
            # nothing at start-up (a dead worker's debates are the queue's to recover).
            from app.debate_queue import DebateQueue

            jobs.queue = DebateQueue(engine=engine, bus=hub, settings=settings)
        app.state.settings = settings
        app.state.engine = engine
        app.state.timelines = Timelines(engine)
        app.state.hub = hub
        app.state.jobs = jobs
        app.state.statuses = ProviderStatuses(chosen, settings)
        await asyncio.to_thread(
            _warm_up,
            app.state.templates,
            local="local" in chosen,
            runs_debates=not settings.runs_in_workers,
        )
        if worker is not None:
            await worker.wait_ready()
        await jobs.start()
        shorten_thread_switches()
        try:
            async with collector.pauses_kept_short():
                yield
        finally:
            await jobs.shutdown()
            await hub.aclose()  # after the jobs: their last events are delivered
            await close_providers(chosen)

    app = FastAPI(
        title="Argue",
        summary="Watch large language models argue a question out.",
        version="0.1.0",
        lifespan=lifespan,
        # /docs is Argue's own page (app.web.apidocs): Swagger UI and ReDoc need scripts from
        # a CDN, which the pages' promise and an offline machine both rule out.
        docs_url=None,
        redoc_url=None,
    )
    app.state.templates = make_templates(settings.assets)
    app.include_router(assets.router)  # before the /static mount, which would answer first
    app.include_router(pages.stylesheet_router)  # likewise
    app.mount("/static", StaticFiles(directory=str(STATIC_DIR)), name="static")
    app.include_router(apidocs.router)
    app.include_router(pages.router)
    app.include_router(delete.router)
    app.include_router(report.router)
    app.include_router(evals.router)
    app.include_router(stream.router)
    app.include_router(api.router)
    app.include_router(api.health_router)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, validation_error_handler)
    app.add_exception_handler(OperationalError, _database_down)
    security.install(app, settings)
    return app


def _wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith("/api/") or path == "/healthz" or path.startswith("/static/")


async def _http_error(request: Request, exc: Exception) -> Response:
    """JSON for the API, a page for people."""
    assert isinstance(exc, StarletteHTTPException)
    if _wants_json(request) or exc.status_code < 400:
        return JSONResponse(
            {"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers
        )
    templates = request.app.state.templates
    response: HTMLResponse = templates.TemplateResponse(
        request,
        "error.html",
        {"status_code": exc.status_code, "detail": exc.detail},
        status_code=exc.status_code,
        headers=exc.headers,
    )
    return response


async def _database_down(request: Request, exc: Exception) -> Response:
    """503 when the database refuses or does not answer (a server restarting, a file locked
    too long): not a fault of the request, and asking again may work. Which database and
    the driver's own words, with no password, go to the log; whoever asked is told only to
    try again."""
    reason = database_failure(exc, request.app.state.settings) or str(exc)
    log.warning("%s %s: %s", request.method, request.url.path, reason)
    refusal = StarletteHTTPException(
        503, DATABASE_DOWN, headers={"Retry-After": str(DATABASE_RETRY_SECONDS)}
    )
    return await _http_error(request, refusal)


__all__ = ["create_app"]
