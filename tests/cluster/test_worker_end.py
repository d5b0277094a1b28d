"""A debate a worker completes always announces its end: the worker's lease keeper, which
stops a run whose status changed under it (a cancel from any node), must not stop the run
for the final status the run itself has just saved, before it publishes ``end``.

The keeper here renews as often as it can, so it reads the status in the short window
between the run saving ``completed`` (and writing the report files) and publishing ``end``:
the window in which viewers were left waiting after their last ``usage``, the debate
completed in the database."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.db import make_engine
from app.events import Event, EventHub
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

    async def run_all() -> list[tuple[str, list[Event]]]:
        engine = make_engine(database_url, pool_size=4)
        hub = EventHub()
        worker = DebateWorker(
            engine=engine,
            bus=hub,
            providers=http_providers(settings),
            settings=settings,
            name="eager-keeper",
            timing=WorkerTiming(
                lease_seconds=10.0,
                renew_seconds=EAGER_RENEW_SECONDS,
                heartbeat_seconds=1.0,
                silent_seconds=10.0,
                sweep_seconds=1.0,
            ),
        )
        try:
            results = []
            for debate_id in ids:
                outcome = await worker.run_job(job_id=jobs[debate_id], debate_id=debate_id)
                # Everything published about it (the backlog: no waiting for more).
                batches = hub.subscribe_batches(debate_id)
                events = await anext(batches)
                await batches.aclose()
                results.append((outcome, events))
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
