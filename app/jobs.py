"""Background jobs: each debate runs as an asyncio task, not tied to any request or viewer.

A semaphore bounds how many debates run at once (``ARGUE_MAX_CONCURRENT_DEBATES``); the rest
wait as ``queued`` and start in the order they were submitted. At start-up, debates that were
queued or running when the last process stopped are resumed. A reference to every task is
kept, so none is garbage-collected mid-run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.events import EventHub
from app.providers.base import Provider
from app.runner import Runner, RunResult, Sleep

log = logging.getLogger(__name__)

RESUMABLE_STATUSES = ("failed", "cancelled")
FINAL_STATUSES = ("completed", "failed", "cancelled")


@dataclass
class JobManager:
    engine: Engine
    hub: EventHub
    providers: Mapping[str, Provider]
    settings: Settings
    sleep: Sleep = asyncio.sleep
    _tasks: dict[str, asyncio.Task[RunResult | None]] = field(default_factory=dict)
    _slots: asyncio.Semaphore | None = None

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
        """Resume every debate left queued or running by an earlier process."""
        with session_scope(self.engine) as session:
            pending = [debate.id for debate in store.active_debates(session)]
        for debate_id in pending:
            self.submit(debate_id)
        if pending:
            log.info("resuming %d interrupted debate(s)", len(pending))
        return pending

    def submit(self, debate_id: str) -> None:
        """Queue a debate to run; it starts when a slot is free."""
        if self.is_running(debate_id):
            return
        task = asyncio.create_task(self._run(debate_id), name=f"debate-{debate_id}")
        self._tasks[debate_id] = task

    def is_running(self, debate_id: str) -> bool:
        task = self._tasks.get(debate_id)
        return task is not None and not task.done()

    async def _run(self, debate_id: str) -> RunResult | None:
        try:
            async with self.slots:
                return await self._runner.run(debate_id)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug, not a provider failure: keep the debate resumable
            log.exception("debate %s crashed", debate_id)
            with session_scope(self.engine) as session:
                store.finish_debate(
                    session,
                    debate_id=debate_id,
                    status="failed",
                    outcome=None,
                    reason=f"internal error: {type(error).__name__}: {error}",
                )
            self.hub.publish(debate_id, "end", {"status": "failed", "reason": str(error)})
            return RunResult("failed", str(error))
        finally:
            self._tasks.pop(debate_id, None)

    async def cancel(self, debate_id: str) -> bool:
        """Stop a queued or running debate; its completed turns stay saved."""
        with session_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None or debate.status in FINAL_STATUSES:
                return False
            store.set_status(
                session, debate_id=debate_id, status="cancelled", reason="cancelled by user"
            )
        task = self._tasks.get(debate_id)
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if not self.hub.has_ended(debate_id):
            self.hub.publish(debate_id, "end", {"status": "cancelled"})
        return True

    def resume(self, debate_id: str) -> bool:
        """Continue a failed or cancelled debate from its last completed turn."""
        with session_scope(self.engine) as session:
            debate = store.get_debate(session, debate_id=debate_id)
            if debate is None or debate.status not in RESUMABLE_STATUSES:
                return False
            store.set_status(session, debate_id=debate_id, status="queued", reason=None)
        self.hub.reopen(debate_id)
        self.hub.publish(debate_id, "status", {"status": "queued"})
        self.submit(debate_id)
        return True

    async def wait(self, debate_id: str) -> str | None:
        """Until the debate's job ends (bound it with ``asyncio.timeout``); its final status."""
        task = self._tasks.get(debate_id)
        if task is not None:
            await asyncio.wait({task})
        with session_scope(self.engine) as session:
            return store.debate_status(session, debate_id=debate_id)

    async def shutdown(self) -> None:
        """Stop all jobs, leaving their status as is so the next start resumes them."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
