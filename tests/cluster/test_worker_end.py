"""A debate a worker runs always announces its end, once.

- The worker's lease keeper, which stops a run whose status changed under it (a cancel from
  any node), must not stop the run for the final status the run itself has just saved,
  before it publishes ``end``. The keeper here renews as often as it can, so it reads the
  status in the short window between the run saving ``completed`` (and writing the report
  files) and publishing ``end``: the window in which viewers were left waiting after their
  last ``usage``, the debate completed in the database.
- A debate that ended without its stream ending (its worker killed between saving the end
  and publishing it): the next worker to get its job ends the stream, saying how it ended,
  and a job delivered again adds no second end.

The worker runs in the test's process, publishing to an in-memory hub the test reads."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import make_engine, session_scope
from app.events import Event, EventHub
from app.status import DebateStatus
from app.workers import DebateWorker, WorkerTiming
from tests.cluster.conftest import debate_row, queue_jobs, workers_settings
from tests.cluster.test_workers import start_duel
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers

pytestmark = pytest.mark.timeout(180)

# The keeper reads the status about this often: far more often than a run takes to go from
# saving its final status to publishing its end.
EAGER_RENEW_SECONDS = 0.002
DEBATES = 3


def worker_on_hub(
    engine: Engine, settings: Settings, *, name: str, timing: WorkerTiming
) -> tuple[DebateWorker, EventHub]:
    hub = EventHub()
    worker = DebateWorker(
        engine=engine,
        bus=hub,
        providers=http_providers(settings),
        settings=settings,
        name=name,
        timing=timing,
    )
    return worker, hub


async def published(hub: EventHub, debate_id: str) -> list[Event]:
    """Everything published about the debate so far (the backlog: no waiting for more)."""
    batches = hub.subscribe_batches(debate_id)
    events = await anext(batches)
    await batches.aclose()
    return events


def test_a_completed_debate_always_publishes_its_end_however_often_the_keeper_looks(
    web_node: Callable[[], TestClient],
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    database_url: str,
    pg_engine: Engine,
) -> None:
    client = web_node()
    ids = [start_duel(client, topic=f"Question {number}") for number in range(DEBATES)]
    jobs = {job["lock"]: job["id"] for job in queue_jobs(pg_engine)}
    settings = workers_settings(fake_llm, tmp_path / "home", database_url)
    eager = WorkerTiming(
        lease_seconds=10.0,
        renew_seconds=EAGER_RENEW_SECONDS,
        heartbeat_seconds=1.0,
        silent_seconds=10.0,
        sweep_seconds=1.0,
    )

    async def run_all() -> list[tuple[str, list[Event]]]:
        engine = make_engine(database_url, pool_size=4)
        worker, hub = worker_on_hub(engine, settings, name="eager-keeper", timing=eager)
        try:
            results = []
            for debate_id in ids:
                outcome = await worker.run_job(job_id=jobs[debate_id], debate_id=debate_id)
                results.append((outcome, await published(hub, debate_id)))
            return results
        finally:
            engine.dispose()

    results = asyncio.run(run_all())
    for debate_id, (outcome, events) in zip(ids, results, strict=True):
        assert debate_row(pg_engine, debate_id)["status"] == "completed"
        assert outcome == "completed", debate_id
        assert events[-1].type == "end" and events[-1].data["status"] == "completed", [
            event.type for event in events[-3:]
        ]


def test_a_worker_that_gets_an_ended_debates_job_ends_its_stream(
    web_node: Callable[[], TestClient],
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    database_url: str,
    pg_engine: Engine,
) -> None:
    debate_id = start_duel(web_node())
    [job] = queue_jobs(pg_engine)
    settings = workers_settings(fake_llm, tmp_path / "home", database_url)
    reason = "internal error: the worker that ran it died before it said so"

    async def deliver_twice() -> tuple[list[str], list[Event]]:
        engine = make_engine(database_url, pool_size=2)
        # The debate failed, saved as such, and nothing told its stream.
        with session_scope(engine) as session:
            store.finish_debate(
                session,
                debate_id=debate_id,
                status=DebateStatus.FAILED,
                outcome=None,
                reason=reason,
            )
        timing = WorkerTiming.from_settings(settings)
        worker, hub = worker_on_hub(engine, settings, name="heir", timing=timing)
        try:
            outcomes = [
                await worker.run_job(job_id=job["id"], debate_id=debate_id) for _ in range(2)
            ]
            return outcomes, await published(hub, debate_id)
        finally:
            engine.dispose()

    outcomes, events = asyncio.run(deliver_twice())
    assert outcomes == ["skipped", "skipped"]
    assert [(event.type, event.data) for event in events] == [
        ("end", {"status": "failed", "reason": reason})
    ]
    assert fake_llm.requests == []
