"""What route handlers receive: the settings, engine, event hub, jobs and a session, all
taken from ``app.state`` (set up once in the lifespan), plus the Jinja templates."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from typing import Annotated

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates
from jinja2.bccache import Bucket, BytecodeCache
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app.bus import EventBus
from app.config import Settings
from app.db import session_scope
from app.formats import get_format
from app.jobs import JobManager
from app.providers.base import Provider, ProviderStatus
from app.providers.registry import PROVIDER_NAMES, provider_status
from app.resources import TEMPLATES_DIR
from app.web import assets
from app.web.render import markdown_html
from app.web.timelines import Timelines

# Provider readiness seldom changes (a key is set before start); a short cache keeps the
# home page from asking every adapter on every load.
STATUS_TTL_SECONDS = 30.0


class _CompiledInProcess(BytecodeCache):
    """Compiled templates shared by every app this process builds (keyed by the template's
    name and a checksum of its source): the first app compiles them, the rest load them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._codes: dict[str, bytes] = {}

    def load_bytecode(self, bucket: Bucket) -> None:
        with self._lock:
            code = self._codes.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: Bucket) -> None:
        code = bucket.bytecode_to_string()
        with self._lock:
            self._codes[bucket.key] = code


_COMPILED = _CompiledInProcess()


def make_templates(assets_mode: assets.AssetsMode = "cdn") -> Jinja2Templates:
    templates = Jinja2Templates(directory=str(TEMPLATES_DIR))
    env = templates.env
    env.bytecode_cache = _COMPILED
    env.autoescape = True
    # Templates ship with the app and do not change while it runs: no stat of the file on
    # every render (the live stream renders a few hundred fragments a second under load).
    env.auto_reload = False
    env.filters["markdown"] = markdown_html
    env.globals["page_scripts"] = assets.page_scripts(assets_mode)
    # Templates ask a debate's format for its headings, never test its name.
    env.globals["format_of"] = get_format
    return templates


def compile_all(templates: Jinja2Templates) -> None:
    """Load every template now (the app's start-up does). Loaded on first use instead, each
    holds the interpreter for tens of milliseconds the first time it is compiled (the final
    debate page's, with its includes, about a hundred): with debates streaming, that is a
    stall every viewer sees. After the process's first app, loading is from ``_COMPILED``."""
    env = templates.env
    for name in env.list_templates():
        env.get_template(name)


# Plain ``def`` on purpose: FastAPI runs each in its thread pool, a hop that costs a little
# CPU but spreads the opening of many streams at once (150 when 50 debates end and 50 start
# together) over turns of the event loop. As ``async def`` they ran all on the loop at once,
# and live tokens waited behind them: p99 352 and 560 ms against 227 and 231 ms
# (``python -m bench --only latency``, two runs each).
def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_engine_dep(request: Request) -> Engine:
    engine: Engine = request.app.state.engine
    return engine


def get_hub(request: Request) -> EventBus:
    hub: EventBus = request.app.state.hub
    return hub


def get_jobs(request: Request) -> JobManager:
    jobs: JobManager = request.app.state.jobs
    return jobs


def get_timelines(request: Request) -> Timelines:
    timelines: Timelines = request.app.state.timelines
    return timelines


def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


def get_session(engine: Annotated[Engine, Depends(get_engine_dep)]) -> Iterator[Session]:
    with session_scope(engine) as session:
        yield session


class ProviderStatuses:
    """Readiness of every provider the app can seat, as the running app sees it: a provider
    the app was not given (tests hand in a few) is reported unavailable."""

    def __init__(self, providers: Mapping[str, Provider], settings: Settings) -> None:
        self._providers = providers
        self._settings = settings
        self._cached: tuple[float, list[ProviderStatus]] | None = None

    def get(self) -> list[ProviderStatus]:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < STATUS_TTL_SECONDS:
            return self._cached[1]
        statuses = [self._status(name) for name in PROVIDER_NAMES]
        self._cached = (now, statuses)
        return statuses

    def _status(self, name: str) -> ProviderStatus:
        provider = self._providers.get(name)
        if provider is not None:
            return provider.status()
        status = provider_status(name, self._settings)
        return ProviderStatus(name, False, "not available in this app", status.default_model)


def get_statuses(request: Request) -> list[ProviderStatus]:
    statuses: ProviderStatuses = request.app.state.statuses
    return statuses.get()


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
EngineDep = Annotated[Engine, Depends(get_engine_dep)]
HubDep = Annotated[EventBus, Depends(get_hub)]
JobsDep = Annotated[JobManager, Depends(get_jobs)]
SessionDep = Annotated[Session, Depends(get_session)]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
TimelinesDep = Annotated[Timelines, Depends(get_timelines)]
StatusesDep = Annotated[list[ProviderStatus], Depends(get_statuses)]
