"""A web node in workers mode saves a new debate and the job that runs it in one transaction,
in a request thread: never a queued debate that no worker will take (the job's insert failed
after the debate was committed), and never a database round trip on the event loop that
streams every debate."""

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


def finished_debate(engine: Engine) -> str:
    spec = DebateSpec(
        topic="Tea or coffee",
        seats=(Seat("claude", "Claude", "anthropic"), Seat("gemini", "Gemini", "gemini")),
    )
    with session_scope(engine) as session:
        debate_id = store.create_debate(session, spec=spec).id
        store.set_status(session, debate_id=debate_id, status=DebateStatus.COMPLETED)
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
