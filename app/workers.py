"""``argue worker``: a process that takes debate jobs from the queue (``app.debate_queue``)
and runs each debate with the runner, under a lease (``app.leases``).

For each job it is handed, the worker:

1. takes the debate's lease (waiting while another worker's lease on it is still live: that
   worker may be frozen rather than dead, and the debate is never run by two at once);
2. runs the debate from its saved turns, with the lease as the runner's fence: every turn
   and the end are written only if the lease is still this worker's, and events are
   published only while it is;
3. keeps the lease alive each second (``renew_seconds``; one statement renews all of the
   worker's leases) and reads the debate's status with the same query: a cancel made on any
   web node stops the run within about a second, and a lease found lost stops it at once;
4. releases the lease, so a resume enqueued meanwhile starts at once.

When the worker is told to stop (SIGTERM, SIGINT) it stops its debates where they are and
hands their jobs straight back to the queue for another worker. Every worker also sweeps
for jobs of workers that stopped sending heartbeats and puts them back in the queue.

Everything taken, finished, given up, handed back or put back is logged.

Where it has a second core, the worker makes its provider calls in a child process
(``app.providers.worker``), as ``argue serve`` does: the SDKs' parsing of every streamed event
then leaves its event loop to the runs and their event stream. It takes no job until that
child has imported the SDKs. Like the web process, it keeps its collector's pauses short
(``app.collector``) and has a busy thread hand the interpreter back after a millisecond
(``app.threads.shorten_thread_switches``): its event loop carries every debate's live text.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from procrastinate import App, JobContext, RetryStrategy
from sqlalchemy.engine import Engine
from sqlalchemy.exc import InterfaceError, OperationalError, SQLAlchemyError

from app import collector, leases, store
from app.bus import EventBus, bus_from_settings
from app.config import Settings
from app.db import get_engine, session_scope
from app.debate_queue import (
    QUEUE_NAME,
    TASK_NAME,
    ensure_queue_tables,
    make_app,
    requeue_stalled,
    require_postgresql,
)
from app.event_types import relay
from app.events import Event, Snapshot
from app.leases import Fence, Lease, LeaseLost, Renewals, lease_lane
from app.ledger import ledger_lane
from app.migrate import migrate
from app.providers.base import Provider
from app.providers.registry import PROVIDER_NAMES, build_provider, close_providers
from app.providers.worker import moved_to_worker, provider_worker_wanted
from app.runner import Runner
from app.status import ACTIVE_STATUSES, DebateStatus
from app.threads import shorten_thread_switches

log = logging.getLogger(__name__)

# Seconds between polls for new jobs when a notification was missed.
FETCH_POLL_SECONDS = 1.0
# A run that could not reach the database is tried again after a while; other database
# errors are bugs, which fail the debate (resumable) like any other.
DATABASE_UNREACHABLE = (OperationalError, InterfaceError)
DATABASE_RETRY_SECONDS = 5


@dataclass(frozen=True)
class WorkerTiming:
    """Every period a worker keeps, derived from the one take-over time.

    A frozen or dead worker's jobs are put back once its heartbeats have been missing for
    ``silent_seconds`` (noticed by a sweep within ``sweep_seconds``); its lease, renewed until
    it stopped, has by then run out (``lease_seconds``), so the next worker starts at once.
    Take-over therefore comes about ``silent + 2 × sweep + fetch`` after the worker stopped:
    three quarters of the take-over time, plus a second."""

    lease_seconds: float
    renew_seconds: float
    heartbeat_seconds: float
    silent_seconds: float
    sweep_seconds: float

    @classmethod
    def from_settings(cls, settings: Settings) -> WorkerTiming:
        takeover = settings.worker_takeover_seconds
        lease = takeover / 2
        return cls(
            lease_seconds=lease,
            renew_seconds=min(1.0, lease / 4),
            heartbeat_seconds=takeover / 8,
            silent_seconds=lease,
            sweep_seconds=takeover / 8,
        )


def worker_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class FencedBus:
    """The bus as a worker's runner sees it: an event goes out only while the worker's lease
    on the debate holds (``Fence.may_publish``); anything else passes through."""

    def __init__(self, bus: EventBus, fence: Fence) -> None:
        self._bus = bus
        self._fence = fence

    def publish(self, debate_id: str, type: str, data: Mapping[str, Any] | None = None) -> object:
        try:
            allowed = self._fence.may_publish()
        except SQLAlchemyError as error:  # the database cannot vouch for the lease
            log.warning(
                "debate %s: lease not confirmed, %s event held back: %s", debate_id, type, error
            )
            allowed = False
        if not allowed:
            return None
        return relay(self._bus, debate_id, type, data)

    def reopen(self, debate_id: str) -> None:
        self._bus.reopen(debate_id)

    def has_ended(self, debate_id: str) -> bool:
        return self._bus.has_ended(debate_id)

    async def snapshot(self, debate_id: str) -> Snapshot:
        return await self._bus.snapshot(debate_id)

    def subscribe(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncIterator[Event]:
        return self._bus.subscribe(debate_id, last_event_id=last_event_id)

    def subscribe_batches(
        self, debate_id: str, *, last_event_id: str | None = None
    ) -> AsyncGenerator[list[Event], None]:
        return self._bus.subscribe_batches(debate_id, last_event_id=last_event_id)

    def subscriber_count(self, debate_id: str) -> int:
        return self._bus.subscriber_count(debate_id)

    async def aclose(self) -> None:
        """The bus is the worker's, shared by all its debates: closed by the worker."""


class _Stop:
    """Why the keeper stopped a run (None: it did not)."""

    reason: str | None = None


@dataclass
class DebateWorker:
    engine: Engine
    bus: EventBus
    providers: Mapping[str, Provider]
    settings: Settings
    name: str
    timing: WorkerTiming
    renewals: Renewals = field(init=False)

    def __post_init__(self) -> None:
        self.renewals = Renewals(self.engine, every=self.timing.renew_seconds)

    async def run_job(self, *, job_id: int, debate_id: str) -> str:
        """One delivery of a debate's job; what became of the debate (also logged)."""
        holder = f"{self.name}/job-{job_id}"
        fence = await self._take(debate_id, holder)
        if fence is None:
            return "skipped"
        log.info("took debate %s (job %s, lease token %d)", debate_id, job_id, fence.lease.token)
        try:
            outcome = await self._run(fence)
        except asyncio.CancelledError:
            log.info("handed back debate %s (job %s): this worker is stopping", debate_id, job_id)
            raise
        finally:
            await self._release(fence)
        if outcome == "lost":
            log.warning(
                "gave up debate %s (job %s): another worker took it over", debate_id, job_id
            )
        elif outcome in (DebateStatus.COMPLETED, DebateStatus.FAILED):
            log.info("finished debate %s (job %s): %s", debate_id, job_id, outcome)
        else:
            log.info("stopped debate %s (job %s): it was %s", debate_id, job_id, outcome)
        return outcome

    # -- the lease ----------------------------------------------------------------------

    async def _take(self, debate_id: str, holder: str) -> Fence | None:
        waiting = False
        while True:
            taken_at = time.monotonic()
            result = await lease_lane.run(self._take_once, debate_id, holder)
            if isinstance(result, Lease):
                return Fence(self.engine, result, taken_at=taken_at)
            if result.status not in ACTIVE_STATUSES:
                log.info(
                    "gave up debate %s: nothing to run, it is %s",
                    debate_id,
                    result.status or "deleted",
                )
                self._end_stream(debate_id, result)
                return None
            if not waiting:
                log.info(
                    "debate %s is held by %s for %.1f s more; waiting for its lease",
                    debate_id,
                    result.holder,
                    result.seconds_left,
                )
                waiting = True
            await asyncio.sleep(min(max(result.seconds_left, 0.05), self.timing.renew_seconds))

    def _end_stream(self, debate_id: str, refused: leases.Refused) -> None:
        """End an ended debate's stream, in case whoever ended the debate could not: a
        worker killed between saving the end and publishing it, or a cancel that found its
        worker dead. Where the stream has its end already, the bus writes no second one."""
        if refused.status is not None and DebateStatus(refused.status).is_ended:
            self.bus.publish(
                debate_id, "end", {"status": DebateStatus(refused.status), "reason": refused.reason}
            )

    def _take_once(self, debate_id: str, holder: str) -> Lease | leases.Refused:
        with session_scope(self.engine) as session:
            return leases.take(
                session, debate_id=debate_id, holder=holder, seconds=self.timing.lease_seconds
            )

    async def _release(self, fence: Fence) -> None:
        try:
            await lease_lane.run(fence.release)
        except SQLAlchemyError as error:  # it runs out by itself
            log.warning("debate %s: lease not released: %s", fence.debate_id, error)

    # -- the run ------------------------------------------------------------------------

    async def _run(self, fence: Fence) -> str:
        runner = Runner(
            engine=self.engine,
            hub=FencedBus(self.bus, fence),
            providers=self.providers,
            settings=self.settings,
            fence=fence,
        )
        run = asyncio.create_task(runner.run(fence.debate_id), name=f"debate-{fence.debate_id}")
        stop = _Stop()
        keeper = asyncio.create_task(self._keep(fence, run, stop))
        try:
            await asyncio.wait({run})
        except asyncio.CancelledError:
            run.cancel()
            await asyncio.wait({run})
            raise
        finally:
            keeper.cancel()
            await asyncio.gather(keeper, return_exceptions=True)
        try:
            return run.result().status
        except LeaseLost:
            return "lost"
        except asyncio.CancelledError:
            return stop.reason or "stopped"
        except DATABASE_UNREACHABLE:
            log.exception("debate %s: database unreachable; tried again later", fence.debate_id)
            raise
        except Exception as error:  # a bug, not a provider failure: keep it resumable
            log.exception("debate %s crashed", fence.debate_id)
            return await self._fail(fence, error)

    async def _keep(self, fence: Fence, run: asyncio.Task[Any], stop: _Stop) -> None:
        """Have the lease renewed each ``renew_seconds``, with the worker's other leases, and
        stop the run when it is lost or the debate's status changed under it (cancelled from
        any node)."""
        while not run.done():
            status = await self.renewals.next_status(fence)
            if status is None:
                stop.reason = "lost"
            elif status in (DebateStatus.RUNNING, DebateStatus.COMPLETED, DebateStatus.FAILED):
                # Only the lease's holder writes completed or failed: this run has just saved
                # its own end and publishes it next. Stopping it now would lose that ``end``.
                continue
            else:
                stop.reason = status
            run.cancel()
            return

    async def _fail(self, fence: Fence, error: Exception) -> str:
        reason = f"internal error: {type(error).__name__}: {error}"
        try:
            await lease_lane.run(self._record_failure, fence, reason)
        except LeaseLost:
            return "lost"
        bus: EventBus = FencedBus(self.bus, fence)
        bus.publish(fence.debate_id, "end", {"status": DebateStatus.FAILED, "reason": reason})
        return DebateStatus.FAILED

    def _record_failure(self, fence: Fence, reason: str) -> None:
        with session_scope(self.engine) as session:
            fence.check(session)
            store.finish_debate(
                session,
                debate_id=fence.debate_id,
                status=DebateStatus.FAILED,
                outcome=None,
                reason=reason,
            )


def available_providers(settings: Settings) -> dict[str, Provider]:
    """Every provider whose adapter can be built here; one whose SDK will not import is
    left out (its seats fail with a clear message) instead of stopping the worker."""
    providers: dict[str, Provider] = {}
    for name in PROVIDER_NAMES:
        try:
            providers[name] = build_provider(name, settings)
        except ImportError as error:
            log.warning("provider %s unavailable: %s", name, error)
    return providers


async def sweep_stalled(queue_app: App, timing: WorkerTiming) -> None:
    """Forever: put back in the queue the jobs of workers silent for ``silent_seconds``."""
    while True:
        await asyncio.sleep(timing.sweep_seconds)
        try:
            requeued = await requeue_stalled(queue_app, silent_seconds=timing.silent_seconds)
        except Exception:  # the database is away: the next sweep tries again
            log.exception("could not sweep for stalled jobs")
            continue
        for job in requeued:
            log.warning(
                "put back job %s of debate %s: its worker (%s) sent no heartbeat for %.0f s",
                job.id,
                job.task_kwargs.get("debate_id"),
                "gone" if job.worker_id is None else f"id {job.worker_id}",
                timing.silent_seconds,
            )


async def serve(settings: Settings, *, concurrency: int, name: str) -> None:
    """Run a worker until it is told to stop (SIGINT, SIGTERM)."""
    require_postgresql(settings)
    engine = get_engine(settings)
    await asyncio.to_thread(migrate, engine)
    await asyncio.to_thread(ensure_queue_tables, engine)
    timing = WorkerTiming.from_settings(settings)
    bus = bus_from_settings(settings)
    providers = available_providers(settings)
    provider_worker = None
    if provider_worker_wanted(settings, runs_debates=True):
        providers, provider_worker = await moved_to_worker(providers, settings)
    queue_app = make_app(settings)
    worker = DebateWorker(
        engine=engine,
        bus=bus,
        providers=providers,
        settings=settings,
        name=name,
        timing=timing,
    )

    # A run that could not reach the database is delivered again (its debate resumes from
    # the saved turns) once the database may be back.
    retry = RetryStrategy(wait=DATABASE_RETRY_SECONDS, retry_exceptions=DATABASE_UNREACHABLE)

    @queue_app.task(name=TASK_NAME, queue=QUEUE_NAME, pass_context=True, retry=retry)
    async def run_debate(context: JobContext, debate_id: str) -> str:
        job_id = context.job.id
        assert job_id is not None
        try:
            return await worker.run_job(job_id=job_id, debate_id=debate_id)
        except asyncio.CancelledError:
            # Stopping: the job goes straight back to the queue, for another worker (failing
            # that, the sweep puts it back once this worker's heartbeats have stopped).
            try:
                await queue_app.job_manager.retry_job(context.job)
            except Exception:
                log.exception("job %s of debate %s not handed back", job_id, debate_id)
            raise

    # Jobs are taken only once the calls can be made: a resumed turn waiting for the SDKs'
    # import would count it as the provider's silence.
    if provider_worker is not None:
        await provider_worker.wait_ready()
    for lane in (ledger_lane, lease_lane):
        await asyncio.to_thread(lane.start)
    shorten_thread_switches()
    log.info(
        "worker %s: up to %d debate(s) at once; take-over of a silent worker's debates "
        "within about %.0f s",
        name,
        concurrency,
        settings.worker_takeover_seconds,
    )
    # Its streams are live too: the collector's pauses are kept as short as the server's.
    async with collector.pauses_kept_short(), queue_app.open_async():
        sweeper = asyncio.create_task(sweep_stalled(queue_app, timing), name="sweep-stalled")
        try:
            await queue_app.run_worker_async(
                queues=[QUEUE_NAME],
                name=name,
                concurrency=concurrency,
                fetch_job_polling_interval=FETCH_POLL_SECONDS,
                update_heartbeat_interval=timing.heartbeat_seconds,
                stalled_worker_timeout=timing.silent_seconds,
                # A debate can last many minutes: on a stop request its jobs are handed
                # back at once rather than waited for.
                shutdown_graceful_timeout=0,
            )
        finally:
            sweeper.cancel()
            await asyncio.gather(sweeper, return_exceptions=True)
            await bus.aclose()
            await close_providers(providers)
    log.info("worker %s stopped", name)
