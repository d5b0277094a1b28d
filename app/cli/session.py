"""What every debate command of ``argue`` sets up first: settings read fresh, the database
(migrated, so the command line and the web app share one schema), and, for commands that run
a debate, the providers its seats need and the loop that drives it with a hub and a job.

``drive`` is the one place a debate runs in the terminal: ``run`` and ``resume`` differ only
in how the debate is started. Ctrl-C is turned into a clean cancel: the debate is marked
``cancelled`` with its completed turns kept, the runner's task is cancelled, and the hub's
``end`` event lets the view finish. A view with a status line (a terminal that wants colour)
is ticked each second, so the time it shows moves while a slow turn says nothing.

With ``ARGUE_RUN_DEBATES=workers`` the terminal runs no debate itself, as a web node runs
none: the debate goes to the workers' queue (where a lease keeps it from running twice), its
live events are read from Redis like any viewer's, and Ctrl-C cancels it wherever it runs.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy.engine import Engine

from app import store
from app.config import Settings, load_settings
from app.db import get_engine, session_scope
from app.migrate import migrate
from app.providers.registry import close_providers
from app.status import DebateStatus

if TYPE_CHECKING:
    from app.bus import EventBus
    from app.cli.terminal import TerminalView
    from app.jobs import JobManager
    from app.providers.base import Provider
    from app.spec import DebateSpec


@dataclass(frozen=True)
class CliContext:
    settings: Settings
    engine: Engine


def open_context(*, runs_debates: bool = False) -> CliContext:
    """Settings read now (not the cached ones: each command reads its environment once) and
    the migrated database they point at. For a command that ``runs_debates``, with workers,
    a database that can hold their queue, or a ``QueueUnavailable`` before anything is
    saved."""
    settings = load_settings()
    if runs_debates and settings.runs_in_workers:
        from app.debate_queue import require_postgresql

        require_postgresql(settings)
    engine = get_engine(settings)
    migrate(engine)
    return CliContext(settings=settings, engine=engine)


def providers_for(spec: DebateSpec, settings: Settings) -> dict[str, Provider]:
    """Only the providers the debate's seats use: the others' SDKs are never imported."""
    from app.providers.registry import build_provider

    names = sorted({seat.provider for seat in spec.seats})
    return {name: build_provider(name, settings) for name in names}


@dataclass(frozen=True)
class DriveResult:
    status: DebateStatus
    reason: str | None
    files_error: str | None = None


Starter = Callable[["JobManager"], bool]
TICK_SECONDS = 1.0


def drive(context: CliContext, debate_id: str, view: TerminalView, start: Starter) -> DriveResult:
    """Run the debate to its end in this process, showing it in ``view``; the final status."""
    with session_scope(context.engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        if debate is None:
            raise LookupError(f"no debate {debate_id}")
        spec = store.debate_spec(debate)
    try:
        # With workers, the seats' providers are the workers' to reach.
        providers = (
            {} if context.settings.runs_in_workers else providers_for(spec, context.settings)
        )
        asyncio.run(_drive(context, debate_id, view, start, providers))
    except KeyboardInterrupt:
        # Ctrl-C before the loop took it over (or where it cannot): a debate left queued
        # would be picked up by the next web app start, so say plainly it was cancelled.
        _mark_cancelled(context, debate_id)
    with session_scope(context.engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        files_error = view.end.get("files_error") if view.end else None
        return DriveResult(
            status=DebateStatus(debate.status),
            reason=debate.status_reason,
            files_error=str(files_error) if files_error else None,
        )


def _mark_cancelled(context: CliContext, debate_id: str) -> None:
    with session_scope(context.engine) as session:
        status = store.debate_status(session, debate_id=debate_id)
        if status is not None and status.is_active:
            store.set_status(
                session,
                debate_id=debate_id,
                status=DebateStatus.CANCELLED,
                reason="cancelled by user",
            )


async def _drive(
    context: CliContext,
    debate_id: str,
    view: TerminalView,
    start: Starter,
    providers: dict[str, Provider],
) -> None:
    from app.jobs import JobManager

    watched, bus = _buses(context.settings)
    jobs = JobManager(
        engine=context.engine, hub=bus, providers=providers, settings=context.settings
    )
    if context.settings.runs_in_workers:
        from app.debate_queue import DebateQueue

        jobs.queue = DebateQueue(engine=context.engine, bus=bus, settings=context.settings)
    interrupts: list[asyncio.Task[bool]] = []

    def on_interrupt() -> None:
        if not interrupts:  # a second Ctrl-C while cancelling changes nothing
            view.note("cancelling… (the completed turns stay saved)")
            interrupts.append(asyncio.ensure_future(jobs.cancel(debate_id)))

    loop = asyncio.get_running_loop()
    handled = _install_sigint(loop, on_interrupt)
    ticker = asyncio.ensure_future(_tick(view)) if view.status_line else None
    try:
        # The bus may keep the debate's earlier runs (Redis, with workers): the terminal
        # shows only what follows them.
        before = await watched.snapshot(debate_id)
        if not start(jobs):
            view.handle("end", {"status": "not started"})
            return
        if context.settings.runs_in_workers and context.settings.redis_url is None:
            # The workers' events stay in their own memory: only the end can be seen, in
            # the database.
            view.note("a worker runs it; with no ARGUE_REDIS_URL its live text is not seen here")
            watcher = asyncio.ensure_future(jobs.wait(debate_id))
        else:
            # Subscribed once started: a subscription whose log ends with the earlier run's
            # end would stop there. It replays what was published meanwhile.
            earlier_end = before.last_id if before.ended else None
            watcher = asyncio.ensure_future(_watch(watched, debate_id, view, after=earlier_end))
        try:
            await watcher
        except asyncio.CancelledError:
            # No signal handler (not the main thread): a KeyboardInterrupt cancels us here.
            await jobs.cancel(debate_id)
            raise
        await jobs.wait(debate_id)
        if interrupts:
            await asyncio.gather(*interrupts)
    finally:
        if ticker is not None:
            ticker.cancel()
        if handled:
            loop.remove_signal_handler(signal.SIGINT)
        await jobs.shutdown()
        await bus.aclose()
        await close_providers(providers)


def _buses(settings: Settings) -> tuple[EventBus, EventBus]:
    """The bus the terminal watches, and the one debates publish to. In this process: its
    own memory, mirrored to Redis when ``ARGUE_REDIS_URL`` is set so that web servers sharing
    it show the debate live. With workers: both are the workers' bus."""
    from app.bus import bus_from_settings, mirrored_from_settings
    from app.events import EventHub

    if settings.runs_in_workers:
        shared = bus_from_settings(settings)
        return shared, shared
    local = EventHub()
    return local, mirrored_from_settings(local, settings)


async def _watch(
    watched: EventBus, debate_id: str, view: TerminalView, *, after: str | None
) -> None:
    """Show the debate's events, those through the event ``after`` skipped."""
    skipping = after is not None
    async for event in watched.subscribe(debate_id):
        if skipping:
            skipping = event.id != after
            continue
        view.handle(event.type, event.data)


async def _tick(view: TerminalView) -> None:
    """Keep the status line's clock moving while a turn is slow to say anything."""
    while True:
        await asyncio.sleep(TICK_SECONDS)
        view.tick()


def _install_sigint(loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> bool:
    """Route Ctrl-C to ``callback``. Loops offer signal handlers only on Unix and in the main
    thread; elsewhere this says False and Ctrl-C arrives as ``KeyboardInterrupt`` instead."""
    try:
        loop.add_signal_handler(signal.SIGINT, callback)
    except (NotImplementedError, RuntimeError, ValueError):
        # Windows' loops raise NotImplementedError; a loop outside the main thread raises
        # RuntimeError or ValueError. Ctrl-C then stays a KeyboardInterrupt.
        return False
    return True
