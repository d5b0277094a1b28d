"""A web node in workers mode queues debates from request threads, never with a database round
trip on the event loop that streams every debate: a new debate is saved in one transaction
with the job that runs it (never a queued debate that no worker will take because the job's
insert failed after the debate was committed), and a resume or a follow-up question marks the
debate queued in one transaction with its job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.debate_queue import DebateQueue
from app.spec import DebateSpec, Seat
from app.status import DebateStatus
from tests.cluster.conftest import debate_row, queue_jobs
from tests.cluster.test_workers import start_duel
from tests.concurrency import Concurrency
from tests.web.test_routes import form_fields

pytestmark = pytest.mark.timeout(120)


class QueueRefused(RuntimeError):
    """The job's insert failing, as it would with the database going away mid-request."""


def finished_debate(engine: Engine, status: DebateStatus = DebateStatus.COMPLETED) -> str:
    spec = DebateSpec(
        topic="Tea or coffee",
        seats=(Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini")),
    )
    with session_scope(engine) as session:
        debate_id = store.create_debate(session, spec=spec).id
        store.set_status(session, debate_id=debate_id, status=status)
    return debate_id


def start(client: TestClient, started_from: str, engine: Engine) -> str:
    if started_from == "api":
        return start_duel(client)
    if started_from == "form":
        response = client.post("/debates", data=form_fields(), follow_redirects=False)
        assert response.status_code == 303, response.text
        return response.headers["location"].rsplit("/", 1)[-1]
    original = finished_debate(engine)
    response = client.post(f"/api/debates/{original}/rerun")
    assert response.status_code == 202, response.text
    debate_id: str = response.json()["id"]
    return debate_id


def debate_count(engine: Engine) -> int:
    with engine.connect() as connection:
        return int(connection.execute(text("SELECT count(*) FROM debate")).scalar_one())


@pytest.mark.parametrize("started_from", ["api", "form", "rerun"])
def test_a_new_debate_and_its_job_are_saved_from_a_request_thread_not_the_event_loop(
    web_node: Callable[[], TestClient],
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    started_from: str,
) -> None:
    seen = Concurrency()
    monkeypatch.setattr(DebateQueue, "defer", seen.wrap(DebateQueue.defer))
    client = web_node()

    debate_id = start(client, started_from, pg_engine)

    assert [(job["lock"], job["status"]) for job in queue_jobs(pg_engine)] == [(debate_id, "todo")]
    assert debate_row(pg_engine, debate_id)["status"] == "queued"
    assert seen.most == 1 and seen.on_loop == 0


@pytest.mark.parametrize("started_from", ["api", "form"])
def test_a_debate_whose_job_cannot_be_enqueued_is_not_saved(
    web_node: Callable[[], TestClient],
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    started_from: str,
) -> None:
    def refuse(*_args: Any, **_kwargs: Any) -> int:
        raise QueueRefused("the job could not be inserted")

    monkeypatch.setattr(DebateQueue, "defer", refuse)
    client = web_node()

    with pytest.raises(QueueRefused):
        start(client, started_from, pg_engine)

    assert debate_count(pg_engine) == 0
    assert queue_jobs(pg_engine) == []


@pytest.mark.parametrize("asked", ["resume", "followup"])
def test_a_resume_or_a_follow_up_queues_the_debate_from_a_request_thread(
    web_node: Callable[[], TestClient],
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    asked: str,
) -> None:
    seen = Concurrency()
    monkeypatch.setattr(DebateQueue, "defer", seen.wrap(DebateQueue.defer))
    client = web_node()
    if asked == "resume":
        debate_id = finished_debate(pg_engine, DebateStatus.CANCELLED)
        response = client.post(f"/api/debates/{debate_id}/resume")
    else:
        debate_id = finished_debate(pg_engine)
        response = client.post(f"/api/debates/{debate_id}/followups", json={"question": "Why?"})

    assert response.status_code in (200, 202), response.text
    assert response.json()["status"] == "queued"
    assert [(job["lock"], job["status"]) for job in queue_jobs(pg_engine)] == [(debate_id, "todo")]
    assert seen.most == 1 and seen.on_loop == 0
