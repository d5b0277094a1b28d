"""Background jobs: each debate runs as an asyncio task, not tied to any request or viewer.

A semaphore bounds how many debates run at once (``ARGUE_MAX_CONCURRENT_DEBATES``); the rest
wait as ``queued`` and start in the order they were submitted. At start-up, debates that were
queued or running when the last process stopped are resumed. A reference to every task is
kept, so none is garbage-collected mid-run.

Cancel and resume may arrive at the same moment (two requests, two tabs). Each changes the
debate's status and the job together, in one step of the event loop, with no await between:
so whatever their order, a debate is either run by a live job or stopped and resumable. Only
waiting happens later: a cancel waits for its job to stop, and a job started while older
ones of the same debate are still stopping waits for them before it begins.

With a ``queue`` (``ARGUE_RUN_DEBATES=workers``, ``app.debate_queue``) this process runs no
debate: start and resume enqueue a job for an ``argue worker`` (in the same transaction as
the new debate or the status change), cancel marks the debate so whichever worker runs it
stops, and start-up resumes nothing, since recovering a dead worker's debates is the queue's job.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, TypeVar, cast

import anyio.to_thread
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session

from app import store
from app.bus import EventBus
from app.config import Settings
from app.db import database_failure, session_scope
from app.followups import FollowUpRefused, money_spent, refusal
from app.models import Debate
from app.providers.base import Provider
from app.runner import Runner, RunResult, Sleep
from app.status import DebateStatus

if TYPE_CHECKING:
    from app.debate_queue import DebateQueue

log = logging.getLogger(__name__)
R = TypeVar("R")

DATABASE_STOPPED = "the database stopped answering: resume the debate to go on from its last turn"
RECORD_RETRY_FIRST_SECONDS = 0.5
RECORD_RETRY_MAX_SECONDS = 30.0

Job = asyncio.Task[RunResult | None]


@dataclass
class JobManager:
    engine: Engine
    hub: EventBus
    providers: Mapping[str, Provider]
    settings: Settings
    sleep: Sleep = asyncio.sleep
    # Every job not yet ended, per debate, oldest first: the last is the debate's current
    # job, any before it are still stopping.
    _jobs: dict[str, list[Job]] = field(default_factory=dict)
    _slots: asyncio.Semaphore | None = None
    queue: DebateQueue | None = None

    def __post_init__(self) -> None:
        self._runner = Runner(
            engine=self.engine,
            hub=self.hub,
            providers=self.providers,
            settings=self.settings,
            sleep=self.sleep,
        )

    @property
    def slots(self) -> asyncio.Semaphore:
        # Created lazily: a semaphore belongs to the loop that first waits on it.
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.settings.max_concurrent_debates)
        return self._slots

    async def start(self) -> list[str]:
        """Resume every debate left queued or running by an earlier process (none with a
        queue: the workers' queue recovers what a dead process left)."""
        if self.queue is not None:
            return []
        with session_scope(self.engine) as session:
            pending = [debate.id for debate in store.active_debates(session)]
        for debate_id in pending:
            self.submit(debate_id)
        if pending:
            log.info("resuming %d interrupted debate(s)", len(pending))
        return pending

    async def create(self, save: Callable[[Session], Debate]) -> Debate:
        """Save a new debate (``save`` writes it, queued, in the session it is given) and
        have it run. With workers its job is enqueued in the same transaction, so no debate
        is saved without the job that runs it, nor a job without its debate. The transaction
        runs in a request thread: a web node's event loop, which streams every debate, never
        waits on the database for it. Without workers the job starts here once committed.
        Shielded: a request that goes away meanwhile still leaves a debate that runs."""
        return await asyncio.shield(self._create(save))

    async def _create(self, save: Callable[[Session], Debate]) -> Debate:
        def save_and_enqueue() -> Debate:
            with session_scope(self.engine) as session:
                debate = save(session)
                if self.queue is not None:
                    self.queue.defer(session, debate_id=debate.id)
                return debate

        debate = await anyio.to_thread.run_sync(save_and_enqueue)
        if self.queue is None:
            self.submit(debate.id)
        return debate

    def submit(self, debate_id: str) -> None:
        """Queue a debate to run; it starts when a slot is free."""
        if self.queue is not None:
            self.queue.enqueue(debate_id)
            return
        if not self.is_running(debate_id):
            self._start_job(debate_id)

    def is_running(self, debate_id: str) -> bool:
        job = self._current(debate_id)
        return job is not None and not job.done()

    def _current(self, debate_id: str) -> Job | None:
        jobs = self._jobs.get(debate_id)
        return jobs[-1] if jobs else None

    def _start_job(self, debate_id: str) -> None:
        # Jobs of this debate still stopping (cancelled, or finishing as failed) are waited
        # for: the new one then starts from every turn they saved, and never runs beside them.
        earlier = [job for job in self._jobs.get(debate_id, ()) if not job.done()]
        job = asyncio.create_task(self._run(debate_id, earlier), name=f"debate-{debate_id}")
        self._jobs.setdefault(debate_id, []).append(job)
        job.add_done_callback(lambda done: self._forget(debate_id, done))

    def _forget(self, debate_id: str, job: Job) -> None:
        jobs = self._jobs.get(debate_id, [])
        if job in jobs:
            jobs.remove(job)
        if not jobs:
            self._jobs.pop(debate_id, None)

    async def _run(self, debate_id: str, earlier: list[Job]) -> RunResult | None:
        try:
            if earlier:
                await asyncio.wait(earlier)
            async with self.slots:
                return await self._runner.run(debate_id)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug, not a provider failure: keep the debate resumable
            log.exception("debate %s crashed", debate_id)
            if self._current(debate_id) is not asyncio.current_task():
                return None  # an older job, already replaced: the debate is not its to fail
            if isinstance(error, OperationalError):
                reason = DATABASE_STOPPED
            else:
                reason = f"internal error: {type(error).__name__}: {error}"
            await self._record_failure(debate_id, reason)
            self.hub.publish(debate_id, "end", {"status": DebateStatus.FAILED, "reason": reason})
            return RunResult(DebateStatus.FAILED, reason)

    async def _record_failure(self, debate_id: str, reason: str) -> None:
        """Mark the debate failed, and so resumable. When the database is what failed, this
        waits for it to answer again: a failure not recorded would leave the debate showing
        as running, with no job to run it, until the next start."""
        retry_in = RECORD_RETRY_FIRST_SECONDS
        while True:
            try:
                await asyncio.to_thread(self._finish_failed, debate_id, reason)
                return
            except OperationalError as error:
                log.warning(
                    "debate %s failed and the database does not answer (%s): trying again in %g s",
                    debate_id,
                    database_failure(error, self.settings) or error,
                    retry_in,
                )
            await self.sleep(retry_in)
            retry_in = min(retry_in * 2, RECORD_RETRY_MAX_SECONDS)

    def _finish_failed(self, debate_id: str, reason: str) -> None:
        with session_scope(self.engine) as session:
            store.finish_debate(
                session,
                debate_id=debate_id,
                status=DebateStatus.FAILED,
                outcome=None,
                reason=reason,
            )

    async def cancel(self, debate_id: str) -> bool:
        """Stop a queued or running debate; its completed turns stay saved."""
        if self.queue is not None:
            return await self.queue.cancel(debate_id)
        with session_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None or DebateStatus(debate.status).is_ended:
                return False
            store.set_status(
                session,
                debate_id=debate_id,
                status=DebateStatus.CANCELLED,
                reason="cancelled by user",
            )
        job = self._current(debate_id)
        if job is not None and not job.done():
            job.cancel()
            await asyncio.wait({job})
        # A resume may have come while the job stopped: then the debate is not over.
        if self.is_running(debate_id) or self.hub.has_ended(debate_id):
            return True
        with session_scope(self.engine) as session:
            status = store.debate_status(session, debate_id=debate_id)
        if status == DebateStatus.CANCELLED:
            self.hub.publish(debate_id, "end", {"status": DebateStatus.CANCELLED})
        return True

    def resume(self, debate_id: str) -> bool:
        """Continue a failed or cancelled debate from its last completed turn. Checked under
        the debate's row lock: two nodes resuming it at once queue it once."""
        resumed = self._mark_resumed(debate_id)
        if resumed:
            self._announce_requeued(debate_id)
        return resumed

    async def resume_requested(self, debate_id: str, *, answer: Callable[[], R]) -> R | None:
        """``resume``, for a web request (``_requeue_requested``): what ``answer`` reads, or
        None if the debate cannot be resumed (so an ``answer`` of None tells nothing)."""
        return await self._requeue_requested(self._mark_resumed, debate_id, answer)

    def follow_up(self, debate_id: str, question: str) -> int:
        """Save a follow-up question on a completed debate and queue the debate again: its
        format plans the answers, run like any turns. The question's number (1 for the
        first). Raises ``LookupError`` (no such debate) or ``FollowUpRefused`` (its status
        or budget does not allow it). Checked and queued in one transaction, as ``resume``
        is (under the debate's row lock), so a question never lands on a debate that is
        running."""
        number = self._add_follow_up(debate_id, question=question)
        self._announce_requeued(debate_id)
        return number

    async def follow_up_requested(
        self, debate_id: str, question: str, *, answer: Callable[[], R]
    ) -> R:
        """``follow_up``, for a web request (``_requeue_requested``): what ``answer`` reads.
        Raises as ``follow_up`` does."""
        answered = await self._requeue_requested(
            partial(self._add_follow_up, question=question), debate_id, answer
        )
        return cast(R, answered)  # a follow-up is queued or raises: it was answered

    async def _requeue_requested(
        self, requeue: Callable[[str], object], debate_id: str, answer: Callable[[], R]
    ) -> R | None:
        """Run ``requeue`` (a transaction that marks the debate queued, or answers a false
        value), then ``answer`` (what the request answers, read before this process starts
        the debate's job: without workers it always sees the debate queued), and announce
        the debate queued. With workers both run in a request thread: the debate's row lock
        orders the transaction against every other node and thread, and the node's event
        loop, which streams every debate, does not wait on the database. Without workers
        both run on the loop: there, checking the status and starting the job with no
        await between is what keeps a racing cancel consistent. The answer; None, and
        ``answer`` not called, when the debate was not queued."""

        def requeue_then_answer() -> tuple[bool, R | None]:
            done = bool(requeue(debate_id))
            return done, answer() if done else None

        if self.queue is None:
            done, answered = requeue_then_answer()
        else:
            done, answered = await anyio.to_thread.run_sync(requeue_then_answer)
        if done:
            self._announce_requeued(debate_id)
        return answered

    def _mark_resumed(self, debate_id: str) -> bool:
        with session_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id, for_update=True)
            if debate is None or not DebateStatus(debate.status).is_resumable:
                return False
            self._requeue(session, debate_id)
        return True

    def _add_follow_up(self, debate_id: str, *, question: str) -> int:
        with session_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id, for_update=True)
            if debate is None:
                raise LookupError(f"No debate {debate_id}.")
            spent = money_spent(session, debate, data_dir=self.settings.data_dir)
            if (reason := refusal(debate, spent_usd=spent)) is not None:
                raise FollowUpRefused(reason)
            number: int = store.add_followup(session, debate_id=debate_id, question=question)
            self._requeue(session, debate_id)
        return number

    def _requeue(self, session: Session, debate_id: str) -> None:
        """Mark the debate queued and, with workers, enqueue its job in the same transaction."""
        store.set_status(session, debate_id=debate_id, status=DebateStatus.QUEUED, reason=None)
        if self.queue is not None:
            self.queue.defer(session, debate_id=debate_id)

    def _announce_requeued(self, debate_id: str) -> None:
        """Once committed: tell its viewers, and (without workers) start its job here."""
        self.hub.reopen(debate_id)
        self.hub.publish(debate_id, "status", {"status": DebateStatus.QUEUED})
        if self.queue is None:
            self._start_job(debate_id)

    async def wait(self, debate_id: str) -> DebateStatus | None:
        """Until the debate's job ends (bound it with ``asyncio.timeout``); its final status."""
        if self.queue is not None:
            return await self.queue.wait(debate_id)
        job = self._current(debate_id)
        if job is not None:
            await asyncio.wait({job})
        with session_scope(self.engine) as session:
            return store.debate_status(session, debate_id=debate_id)

    async def shutdown(self) -> None:
        """Stop all jobs, leaving their status as is so the next start resumes them."""
        jobs = [job for debate_jobs in self._jobs.values() for job in debate_jobs]
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
