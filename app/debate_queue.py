"""The debate queue (``ARGUE_RUN_DEBATES=workers``): jobs kept in PostgreSQL by procrastinate,
beside the debates, and run by ``argue worker`` processes (``app.workers``).

What it promises, and how:

- One job per start or resume, whose lock is the debate's id: jobs of one debate run one
  after another, never side by side. Workers fetch jobs lowest id first, so queued debates
  start in the order they were submitted, across every web node and worker.
- A resume is enqueued in the same transaction as the status change that allows it, so a
  debate is never left ``queued`` with no job (nor a job left for a debate that is not).
- Delivery at least once: a job is marked done only after its debate's run has returned. A
  worker that dies (SIGKILL, a lost machine) or freezes stops sending heartbeats; every
  worker sweeps for jobs whose worker has been silent longer than the lease and puts them
  back in the queue (``requeue_stalled``), where the next free worker takes them and the
  debate resumes from its saved turns. A second delivery of a job never runs a debate
  twice: the debate's lease (``app.leases``) admits one worker at a time.
- Only the worker that still owns a job records its end (``OwnedJobManager``): a worker
  woken from a freeze cannot mark done a job that was handed to another.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Iterable
from typing import Any

import psycopg
from procrastinate import App, PsycopgConnector, exceptions, jobs
from procrastinate.manager import JobManager
from procrastinate.schema import SchemaManager
from sqlalchemy import func, select, text
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session

from app import pooled_connections, store
from app.bus import EventBus
from app.config import Settings, SettingsError
from app.database_url import backend_of
from app.db import session_scope
from app.models import Debate, utcnow
from app.status import ACTIVE_STATUSES, DebateStatus

log = logging.getLogger(__name__)

TASK_NAME = "argue.run_debate"
QUEUE_NAME = "debates"
# How long a cancel waits for the worker running the debate to stop, before it answers.
CANCEL_WAIT_SECONDS = 3.0

_debates: Any = Debate.__table__  # type: ignore[attr-defined]


class QueueUnavailable(SettingsError):
    """Workers mode asked for on a database that cannot hold the queue."""


def require_postgresql(settings: Settings) -> None:
    if backend_of(settings.sqlalchemy_url) != "postgresql":
        raise QueueUnavailable(
            "ARGUE_RUN_DEBATES=workers and `argue worker` need PostgreSQL: set "
            "ARGUE_DATABASE_URL=postgresql://user:password@host:5432/name on every web node "
            "and worker"
        )


# Held while the queue's tables are made, so processes starting together make them once.
_SCHEMA_LOCK = 0x61726775  # "argu"


def ensure_queue_tables(engine: Engine) -> None:
    """Make the queue's tables, functions and triggers (procrastinate's own schema, which
    the library versions itself) unless they exist. They live beside the debates' tables
    but outside Argue's migrations: only a database that runs workers has them."""
    with engine.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})
        if connection.execute(text("SELECT to_regclass('procrastinate_jobs')")).scalar():
            return
        # Many statements with literal '%' signs: one plain query on the driver's connection.
        driver_connection = connection.connection.driver_connection
        assert isinstance(driver_connection, psycopg.Connection)
        driver_connection.execute(SchemaManager.get_schema())
    log.info("made the debate queue's tables")


def conninfo(settings: Settings) -> str:
    """The libpq form of the database URL, for the queue's own connections (it holds the
    password: never print it)."""
    url = make_url(settings.sqlalchemy_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class OwnedJobManager(JobManager):
    """The queue library's job manager, made safe for a worker that wakes from a freeze.

    - A job's end (or its retry) is recorded only while the job is still this worker's
      (``doing`` and fetched by it): one frozen past its heartbeats may find that its job
      was put back in the queue or taken by another worker, and that job is not its own.
    - A worker struck off as dead (another worker starting up removes the silent ones) and
      then woken registers again under its own id, with its next heartbeat or fetch,
      instead of failing on a worker id that no longer exists."""

    async def update_heartbeat(self, worker_id: int) -> None:
        row = await self.connector.execute_query_one_async(
            "INSERT INTO procrastinate_workers (id, last_heartbeat) OVERRIDING SYSTEM VALUE "
            "VALUES (%(worker_id)s, NOW()) ON CONFLICT (id) DO UPDATE SET last_heartbeat = NOW() "
            "RETURNING (xmax = 0) AS registered_again",
            worker_id=worker_id,
        )
        if row["registered_again"]:
            log.warning("worker id %s was struck off as silent; registered again", worker_id)

    async def fetch_job(self, queues: Iterable[str] | None, worker_id: int) -> jobs.Job | None:
        try:
            return await super().fetch_job(queues=queues, worker_id=worker_id)
        except exceptions.ConnectorException as error:
            if not isinstance(error.__cause__, psycopg.errors.ForeignKeyViolation):
                raise
        await self.update_heartbeat(worker_id)
        return await super().fetch_job(queues=queues, worker_id=worker_id)

    async def finish_job(self, job: jobs.Job, status: jobs.Status, delete_job: bool) -> None:
        if await self._still_ours(job):
            await super().finish_job(job=job, status=status, delete_job=delete_job)

    async def retry_job(
        self,
        job: jobs.Job,
        retry_at: datetime.datetime | None = None,
        priority: int | None = None,
        queue: str | None = None,
        lock: str | None = None,
    ) -> None:
        if await self._still_ours(job):
            await super().retry_job(
                job, retry_at=retry_at, priority=priority, queue=queue, lock=lock
            )

    async def _still_ours(self, job: jobs.Job) -> bool:
        row = await self.connector.execute_query_one_async(
            "SELECT status, worker_id FROM procrastinate_jobs WHERE id = %(job_id)s",
            job_id=job.id,
        )
        if row["status"] == "doing" and row["worker_id"] == job.worker_id:
            return True
        log.info("job %s is no longer this worker's: left as it is", job.id)
        return False


async def _in_autocommit(connection: psycopg.AsyncConnection[Any]) -> None:
    # Set on each new pooled connection, not through the pool's connection arguments: the
    # library opens its LISTEN connection with those and autocommit=True of its own.
    await connection.set_autocommit(True)


def make_app(settings: Settings, **pool_options: Any) -> App:
    """The queue's procrastinate app (not yet opened).

    Its pooled connections are in autocommit: every query the queue library sends through
    them is one statement, and in a transaction of its own each was followed by a ``COMMIT``,
    one more round trip on the worker's event loop per job fetched, finished or checked. They
    are checked before use without a round trip (``app.pooled_connections``), not pinged as
    the library would. A web node enqueues on the debate's own connection, in the debate's
    transaction."""
    require_postgresql(settings)
    options: dict[str, Any] = {"configure": _in_autocommit, **pool_options}
    connector = PsycopgConnector(
        conninfo=conninfo(settings), pool_factory=pooled_connections.async_pool, **options
    )
    queue_app = App(connector=connector)
    queue_app.job_manager = OwnedJobManager(connector=connector)
    return queue_app


async def requeue_stalled(queue_app: App, *, silent_seconds: float) -> list[jobs.Job]:
    """Put back in the queue every debate job whose worker has sent no heartbeat for
    ``silent_seconds``; the jobs put back. Several workers may sweep at once: a job another
    sweep already put back is skipped."""
    manager = queue_app.job_manager
    stalled = await manager.get_stalled_jobs(
        task_name=TASK_NAME, seconds_since_heartbeat=silent_seconds
    )
    requeued: list[jobs.Job] = []
    for job in stalled:
        assert job.id is not None
        try:
            await manager.retry_job_by_id_async(job_id=job.id, retry_at=utcnow())
        except exceptions.ConnectorException:
            continue  # already put back (or finished) by someone else
        requeued.append(job)
    return requeued


def driver_connection(session: Session) -> psycopg.Connection[Any]:
    """The psycopg connection under the session, inside its transaction."""
    connection = session.connection().connection.driver_connection
    if not isinstance(connection, psycopg.Connection):
        raise QueueUnavailable("the debate queue needs the database reached through psycopg 3")
    return connection


class DebateQueue:
    """What a web node does with debates in workers mode: it enqueues them, and cancels
    them wherever they run; it runs none itself."""

    def __init__(self, *, engine: Engine, bus: EventBus, settings: Settings) -> None:
        self.engine = engine
        self.bus = bus
        self._app = make_app(settings)
        ensure_queue_tables(engine)

    def defer(self, session: Session, *, debate_id: str) -> int:
        """Enqueue a run of the debate in the session's transaction; the job's id."""
        deferrer = self._app.configure_task(
            TASK_NAME, lock=debate_id, queue=QUEUE_NAME, connection=driver_connection(session)
        )
        job_id: int = deferrer.defer(debate_id=debate_id)
        return job_id

    def enqueue(self, debate_id: str) -> int:
        with session_scope(self.engine) as session:
            return self.defer(session, debate_id=debate_id)

    async def cancel(self, debate_id: str) -> bool:
        """Mark the debate cancelled; whichever worker runs it stops within about a second
        (its keeper reads the status each second). Waits for that, up to a bound, then ends
        the debate's stream. Whoever ends it first ends it (the bus writes no second end):
        the worker, which stops and says so; or this node, when no worker held the debate,
        when it let go without a word (the cancel came as it started), or when it has not
        let go by now: dead (killed, its lease not yet run out) or stuck, and the debate's
        viewers must not wait for it. Not when a resume came meanwhile: the debate goes on."""
        marked = await asyncio.to_thread(self._mark_cancelled, debate_id)
        if marked is None:
            return False
        held_by_live_worker = marked
        if held_by_live_worker:
            await self._until_let_go(debate_id, within=CANCEL_WAIT_SECONDS)
            if await asyncio.to_thread(self._status, debate_id) != DebateStatus.CANCELLED:
                return True
        self.bus.publish(debate_id, "end", {"status": DebateStatus.CANCELLED})
        return True

    def _status(self, debate_id: str) -> DebateStatus | None:
        with session_scope(self.engine) as session:
            return store.debate_status(session, debate_id=debate_id)

    async def _until_let_go(self, debate_id: str, *, within: float) -> None:
        """Until the debate's lease is released, for at most ``within`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while loop.time() < deadline:
            if not await asyncio.to_thread(self._leased, debate_id):
                return
            await asyncio.sleep(0.1)

    def _mark_cancelled(self, debate_id: str) -> bool | None:
        """None if the debate cannot be cancelled; else whether a live lease holds it."""
        with session_scope(self.engine) as session:
            row = (
                session.connection()
                .execute(
                    select(
                        _debates.c.status,
                        _debates.c.lease_expires_at.is_not(None)
                        & (_debates.c.lease_expires_at > func.now()),
                    )
                    .where(_debates.c.id == debate_id)
                    .with_for_update()
                )
                .one_or_none()
            )
            if row is None or row[0] not in ACTIVE_STATUSES:
                return None
            store.set_status(
                session,
                debate_id=debate_id,
                status=DebateStatus.CANCELLED,
                reason="cancelled by user",
            )
            return bool(row[1]) and row[0] == DebateStatus.RUNNING

    def _leased(self, debate_id: str) -> bool:
        with session_scope(self.engine) as session:
            holder = (
                session.connection()
                .execute(select(_debates.c.lease_holder).where(_debates.c.id == debate_id))
                .scalar()
            )
            return holder is not None

    async def wait(self, debate_id: str, *, poll_seconds: float = 0.5) -> DebateStatus | None:
        """Until the debate is no longer queued or running; its status."""
        while True:
            status = await asyncio.to_thread(self._status, debate_id)
            if status is None or not status.is_active:
                return status
            await asyncio.sleep(poll_seconds)
