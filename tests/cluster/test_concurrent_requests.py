"""Two web nodes asked the same thing at the same instant: the debate is queued once.

A resume (or a follow-up question) checks the debate's status and then queues it. Two nodes
doing that at once both saw ``cancelled`` (or ``completed``) and both queued a job, so one
debate had two runs waiting. The check now holds the debate's row lock: the second node
waits for the first, then finds the debate queued and refuses.

A delete racing a resume was already safe (it deletes only a debate still not queued, in
one statement that waits for the row), and stays so.

To make both requests arrive together every time, the test holds the row lock itself while
they come, and lets go only once both are waiting on it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from tests.cluster.conftest import debate_row, queue_jobs
from tests.cluster.test_workers import start_duel

pytestmark = pytest.mark.timeout(120)

WAIT_SECONDS = 20.0


def backends_waiting_for_a_lock(engine: Engine) -> int:
    with engine.connect() as connection:
        count = connection.execute(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND wait_event_type = 'Lock'"
            )
        ).scalar_one()
    return int(count)


def at_once(
    engine: Engine, debate_id: str, requests: list[Callable[[], httpx.Response]]
) -> list[httpx.Response]:
    """Send the requests from threads while the debate's row is locked; let it go once all of
    them wait on the lock (or the time is up: the old code did not wait on the row, only on
    its update); their responses."""
    responses: list[httpx.Response | None] = [None] * len(requests)

    def send(index: int) -> None:
        responses[index] = requests[index]()

    with engine.connect() as holder:
        holder.execute(text("SELECT id FROM debate WHERE id = :id FOR UPDATE"), {"id": debate_id})
        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
        for thread in threads:
            thread.start()
        _until(lambda: backends_waiting_for_a_lock(engine) >= len(requests))
        holder.commit()
        for thread in threads:
            thread.join(WAIT_SECONDS)
    assert all(response is not None for response in responses), "a request never answered"
    return [response for response in responses if response is not None]


def _until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def debate_exists(engine: Engine, debate_id: str) -> bool:
    with engine.connect() as connection:
        found = connection.execute(
            text("SELECT 1 FROM debate WHERE id = :id"), {"id": debate_id}
        ).first()
    return found is not None


def questions_of(engine: Engine, debate_id: str) -> int:
    with engine.connect() as connection:
        followups = connection.execute(
            text("SELECT followups FROM debate WHERE id = :id"), {"id": debate_id}
        ).scalar_one()
    return len(followups or [])


def jobs_of(engine: Engine, debate_id: str) -> list[int]:
    return [job["id"] for job in queue_jobs(engine) if job["lock"] == debate_id]


def cancelled_duel(
    web_node: Callable[[], TestClient], pg_engine: Engine
) -> tuple[TestClient, TestClient, str]:
    """Two web nodes, and a duel started and cancelled through the first."""
    node_a, node_b = web_node(), web_node()
    debate_id = start_duel(node_a)
    # No worker runs here: the cancel finds no lease and ends the debate at once.
    assert node_a.post(f"/api/debates/{debate_id}/cancel").status_code == 200
    assert debate_row(pg_engine, debate_id)["status"] == "cancelled"
    return node_a, node_b, debate_id


def test_two_nodes_resuming_a_debate_at_once_queue_it_once(
    web_node: Callable[[], TestClient], pg_engine: Engine
) -> None:
    node_a, node_b, debate_id = cancelled_duel(web_node, pg_engine)
    started_job = jobs_of(pg_engine, debate_id)

    responses = at_once(
        pg_engine,
        debate_id,
        [
            lambda: node_a.post(f"/api/debates/{debate_id}/resume"),
            lambda: node_b.post(f"/api/debates/{debate_id}/resume"),
        ],
    )

    assert sorted(response.status_code for response in responses) == [200, 409]
    assert len(jobs_of(pg_engine, debate_id)) == len(started_job) + 1
    assert debate_row(pg_engine, debate_id)["status"] == "queued"


def test_two_nodes_asking_a_follow_up_at_once_queue_one_and_refuse_the_other(
    web_node: Callable[[], TestClient], pg_engine: Engine
) -> None:
    node_a, node_b = web_node(), web_node()
    debate_id = start_duel(node_a)
    with pg_engine.begin() as connection:  # as if a worker had run it to its end
        connection.execute(
            text("UPDATE debate SET status = 'completed' WHERE id = :id"), {"id": debate_id}
        )
    started_job = jobs_of(pg_engine, debate_id)

    responses = at_once(
        pg_engine,
        debate_id,
        [
            lambda: node_a.post(f"/api/debates/{debate_id}/followups", json={"question": "A?"}),
            lambda: node_b.post(f"/api/debates/{debate_id}/followups", json={"question": "B?"}),
        ],
    )

    assert sorted(response.status_code for response in responses) == [202, 409]
    refused = next(response for response in responses if response.status_code == 409)
    assert "queued" in refused.json()["detail"]
    assert questions_of(pg_engine, debate_id) == 1
    assert len(jobs_of(pg_engine, debate_id)) == len(started_job) + 1


def test_a_resume_and_a_delete_at_once_leave_a_queued_debate_or_none(
    web_node: Callable[[], TestClient], pg_engine: Engine
) -> None:
    node_a, node_b, debate_id = cancelled_duel(web_node, pg_engine)
    jobs_before = jobs_of(pg_engine, debate_id)

    resumed, deleted = at_once(
        pg_engine,
        debate_id,
        [
            lambda: node_a.post(f"/api/debates/{debate_id}/resume"),
            lambda: node_b.delete(f"/api/debates/{debate_id}"),
        ],
    )

    # Whichever comes first wins, and the other sees what it did: never a job queued for a
    # debate that is gone, nor a queued debate deleted.
    if deleted.status_code == 204:
        assert resumed.status_code in (404, 409), resumed.text
        assert not debate_exists(pg_engine, debate_id)
        assert jobs_of(pg_engine, debate_id) == jobs_before
    else:
        assert (resumed.status_code, deleted.status_code) == (200, 409), deleted.text
        assert debate_row(pg_engine, debate_id)["status"] == "queued"
        assert len(jobs_of(pg_engine, debate_id)) == len(jobs_before) + 1
