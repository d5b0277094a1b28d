"""Debates run by ``argue worker`` processes: web nodes in workers mode only enqueue; a worker
runs the debate to its end; a worker killed mid-turn has its debate taken over by another,
which continues from the saved turns and saves no turn twice; a cancel made on any web node
stops the debate on its worker, and a resume from another node continues it; a worker runs
no more debates at once than its limit, and queued debates start in submission order.

"No turn saved twice" is read from the turns' ``seq``: each save of a turn numbers it one
past the last, so a turn saved again would leave a gap where it was first numbered.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.db import session_scope
from app.spec import DebateSpec, Seat
from bench.processes import is_alive
from tests.cluster.conftest import (
    TAKEOVER_SECONDS,
    WorkerProcess,
    debate_row,
    queue_jobs,
    turn_rows,
    wait_until,
)
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.timeout(180)

# A two-round duel: two openings, a rebuttal, a response, a convergence check, a synthesis.
DUEL_TURNS = 6
RUN_TIMEOUT = 60.0


def start_duel(client: TestClient, topic: str = "Tabs or spaces for Python code") -> str:
    response = client.post("/api/debates", json={"topic": topic, "rounds": 2})
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


def finished(engine: Engine, debate_id: str) -> dict[str, Any] | None:
    row = debate_row(engine, debate_id)
    return row if row["status"] not in ("queued", "running") else None


def assert_each_turn_saved_once(turns: list[dict[str, Any]]) -> None:
    assert [turn["seq"] for turn in turns] == list(range(1, len(turns) + 1))
    assert len({turn["key"] for turn in turns}) == len(turns)


def wait_until_mid_turn(
    engine: Engine, fake: FakeLLMServer, debate_id: str
) -> list[dict[str, Any]]:
    """Until a turn is saved and the next one's call is under way; the turns saved by then."""
    wait_until(lambda: turn_rows(engine, debate_id), timeout=RUN_TIMEOUT, what="a turn")
    saved = turn_rows(engine, debate_id)
    count = len(fake.requests)
    wait_until(lambda: len(fake.requests) > count, timeout=RUN_TIMEOUT, what="next turn")
    return saved


def test_a_web_node_only_enqueues_and_a_worker_runs_the_debate_to_its_end(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
) -> None:
    client = web_node()
    debate_id = start_duel(client)

    jobs = queue_jobs(pg_engine)
    assert [(job["lock"], job["status"]) for job in jobs] == [(debate_id, "todo")]
    assert debate_row(pg_engine, debate_id)["status"] == "queued"

    worker = workers("alpha")
    row = wait_until(lambda: finished(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="the end")

    assert row["status"] == "completed", row
    turns = turn_rows(pg_engine, debate_id)
    assert len(turns) == DUEL_TURNS
    assert all(turn["status"] == "completed" for turn in turns)
    assert_each_turn_saved_once(turns)
    worker.wait_for_log(f"finished debate {debate_id} (job", timeout=10)
    assert f"took debate {debate_id}" in worker.log_text()
    assert debate_row(pg_engine, debate_id)["lease_holder"] is None  # released
    assert wait_until(
        lambda: [job["status"] for job in queue_jobs(pg_engine)] == ["succeeded"],
        timeout=10,
        what="the job to be marked done",
    )
    assert client.get(f"/api/debates/{debate_id}").json()["status"] == "completed"


def test_a_killed_workers_debate_is_taken_over_and_completes_saving_no_turn_twice(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.set_default_token_delay(0.15)  # a turn streams for about two seconds
    client = web_node()
    alpha = workers("alpha")
    debate_id = start_duel(client)
    saved_before = wait_until_mid_turn(pg_engine, fake_llm, debate_id)
    alpha.kill()
    killed_at = time.monotonic()

    bravo = workers("bravo")
    bravo.wait_for_log(f"took debate {debate_id}", timeout=TAKEOVER_SECONDS * 3)
    taken_after = time.monotonic() - killed_at
    row = wait_until(lambda: finished(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="the end")

    assert row["status"] == "completed", row
    assert row["lease_token"] == 2  # taken twice: by alpha, then by bravo
    turns = turn_rows(pg_engine, debate_id)
    assert len(turns) == DUEL_TURNS
    assert_each_turn_saved_once(turns)
    kept = {turn["id"]: turn for turn in turns}
    for before in saved_before:  # continued from the saved turns, which stand as they were
        assert kept[before["id"]] == before
    assert "put back job" in bravo.log_text()
    print(f"taken over {taken_after:.1f} s after the kill (take-over time {TAKEOVER_SECONDS} s)")


def test_a_worker_makes_its_calls_in_a_child_process_and_retries_a_turn_the_child_dies_in(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.set_default_token_delay(0.15)  # a turn streams for about two seconds
    client = web_node()
    # What `argue worker` does by default wherever it has a second core.
    worker = workers("alpha", env={"ARGUE_PROVIDER_WORKER": "1"})
    calls = worker.provider_calls_pid()
    assert calls is not None, worker.log_text()
    debate_id = start_duel(client)
    wait_until_mid_turn(pg_engine, fake_llm, debate_id)
    os.kill(calls, signal.SIGKILL)  # the child, in the middle of a turn; the worker lives on

    row = wait_until(lambda: finished(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="the end")

    assert row["status"] == "completed", row
    assert row["lease_token"] == 1  # never left its worker
    turns = turn_rows(pg_engine, debate_id)
    assert len(turns) == DUEL_TURNS
    assert_each_turn_saved_once(turns)
    assert [turn["attempts"] for turn in turns].count(2) == 1, turns  # the cut turn, again
    assert worker.process is not None and worker.process.poll() is None
    restarted = worker.provider_calls_pid()
    assert restarted is not None and restarted != calls


def test_a_killed_worker_leaves_no_provider_process_behind(
    workers: Callable[..., WorkerProcess],
) -> None:
    worker = workers("alpha", env={"ARGUE_PROVIDER_WORKER": "1"})
    calls = worker.provider_calls_pid()
    assert calls is not None, worker.log_text()

    worker.kill()

    # Its stdin closed with the worker: it exits on its own (reaped by init, here or in a
    # container).
    wait_until(lambda: not is_alive(calls), timeout=10, what="the provider process to exit")


def test_cancel_on_a_web_node_stops_the_debate_on_its_worker_and_another_node_resumes_it(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.set_default_token_delay(0.5)  # a turn streams for several seconds
    first, second = web_node(), web_node()
    worker = workers("alpha")
    debate_id = start_duel(first)
    wait_until(lambda: fake_llm.requests, timeout=RUN_TIMEOUT, what="a turn to start")

    asked = time.monotonic()
    response = first.post(f"/api/debates/{debate_id}/cancel")
    answered = time.monotonic() - asked

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    # The worker had stopped and let the debate go by the time the cancel answered.
    assert debate_row(pg_engine, debate_id)["lease_holder"] is None
    worker.wait_for_log(f"stopped debate {debate_id}", timeout=5)
    requests = len(fake_llm.requests)
    assert turn_rows(pg_engine, debate_id) == []  # the turns in flight were dropped
    print(f"cancel answered after {answered:.2f} s")

    fake_llm.set_default_token_delay(0.0)
    resumed = second.post(f"/api/debates/{debate_id}/resume")
    assert resumed.status_code == 200, resumed.text
    row = wait_until(lambda: finished(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="the end")
    assert row["status"] == "completed", row
    assert len(fake_llm.requests) > requests
    assert_each_turn_saved_once(turn_rows(pg_engine, debate_id))


def test_a_worker_runs_at_most_its_limit_and_starts_queued_debates_in_submission_order(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.set_default_token_delay(0.02)
    client = web_node()
    debate_ids = [start_duel(client, f"Question number {n}") for n in range(5)]
    workers("alpha", concurrency=2)

    rows = [
        wait_until(lambda d=d: finished(pg_engine, d), timeout=RUN_TIMEOUT * 2, what="the end")
        for d in debate_ids
    ]

    assert all(row["status"] == "completed" for row in rows)
    spans = [(row["started_at"], row["finished_at"]) for row in rows]
    most_at_once = max(sum(1 for s, f in spans if s <= start < f) for start, _ in spans)
    assert most_at_once == 2
    # Each debate after the first two starts only when an earlier one has finished, and in
    # the order submitted.
    starts = [start for start, _ in spans]
    assert starts[2:] == sorted(starts[2:])
    assert min(starts[2:]) >= min(finish for _, finish in spans[:2])


def test_a_worker_told_to_stop_hands_its_debate_straight_back_to_the_queue(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    fake_llm.set_default_token_delay(0.3)
    client = web_node()
    alpha = workers("alpha")
    debate_id = start_duel(client)
    wait_until(lambda: fake_llm.requests, timeout=RUN_TIMEOUT, what="a turn to start")

    alpha.stop()  # SIGTERM

    assert f"handed back debate {debate_id}" in alpha.log_text()
    row = debate_row(pg_engine, debate_id)
    assert (row["status"], row["lease_holder"]) == ("running", None)
    assert [job["status"] for job in queue_jobs(pg_engine)] == ["todo"]

    fake_llm.set_default_token_delay(0.0)
    bravo = workers("bravo")
    row = wait_until(lambda: finished(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="the end")
    assert row["status"] == "completed", row
    assert row["lease_token"] == 2
    assert_each_turn_saved_once(turn_rows(pg_engine, debate_id))
    assert "put back job" not in bravo.log_text()  # no wait for a take-over: it was handed back


def test_a_web_node_in_workers_mode_resumes_nothing_it_finds_at_start_up(
    web_node: Callable[[], TestClient], pg_engine: Engine, fake_llm: FakeLLMServer
) -> None:
    spec = DebateSpec(
        topic="Left behind by a process that stopped",
        seats=(
            Seat(role="claude", label="Claude", provider="anthropic"),
            Seat(role="gemini", label="Gemini", provider="gemini"),
        ),
    )
    with session_scope(pg_engine) as session:
        queued = store.create_debate(session, spec=spec).id
        running = store.create_debate(session, spec=spec).id
        store.set_status(session, debate_id=running, status="running")

    client = web_node()

    jobs = client.app.state.jobs  # type: ignore[attr-defined]
    assert not jobs.is_running(queued) and not jobs.is_running(running)
    assert queue_jobs(pg_engine) == []  # recovering them is the queue's job, not a web node's
    assert [debate_row(pg_engine, d)["status"] for d in (queued, running)] == [
        "queued",
        "running",
    ]
    assert fake_llm.requests == []
