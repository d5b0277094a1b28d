"""The command line with ``ARGUE_RUN_DEBATES=workers`` runs no debate itself, as a web node
runs none: ``argue run`` queues its debate for the workers and shows it live from Redis, and
``argue resume`` of a debate a worker is running follows it instead of running it a second
time beside the worker (which would save its turns twice)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.cli.main import main
from tests.bus.conftest import REDIS_URL
from tests.cluster.conftest import WorkerProcess, debate_row, queue_jobs, turn_rows, wait_until
from tests.cluster.test_workers import (
    RUN_TIMEOUT,
    assert_each_turn_saved_once,
    start_duel,
)
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.timeout(180)


def _in_this_process(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)


def _redis_of(env: dict[str, str]) -> dict[str, str]:
    return {name: env[name] for name in ("ARGUE_REDIS_URL", "ARGUE_REDIS_KEY_PREFIX")}


def test_argue_run_queues_its_debate_for_a_worker_and_shows_it_live(
    node_env: dict[str, str],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert node_env["ARGUE_REDIS_URL"] == REDIS_URL
    worker = workers("alpha", env=_redis_of(node_env))
    _in_this_process(monkeypatch, node_env)

    code = main(["run", "Tabs or spaces for Python code", "--rounds", "1"])

    printed = capsys.readouterr()
    assert code == 0, printed.err
    [job] = queue_jobs(pg_engine)
    debate_id = job["lock"]
    assert f"took debate {debate_id}" in worker.log_text()
    row = debate_row(pg_engine, debate_id)
    assert row["status"] == "completed" and row["lease_token"] == 1
    turns = turn_rows(pg_engine, debate_id)
    assert turns and all(turn["status"] == "completed" for turn in turns)
    for turn in turns:  # every turn's text reached the terminal, from the worker via Redis
        assert turn["text"].strip()[:40] in printed.out


Resume = Callable[[str], tuple[str, list[dict[str, Any]]]]


@pytest.fixture
def resume_in_the_terminal(
    node_env: dict[str, str],
    pg_engine: Engine,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Resume:
    """Runs ``argue resume ID`` here in workers mode; once it has completed the debate with
    every turn saved once: what the terminal showed, and the turns."""

    def resume(debate_id: str) -> tuple[str, list[dict[str, Any]]]:
        _in_this_process(monkeypatch, node_env)
        code = main(["resume", debate_id])
        printed = capsys.readouterr()
        assert code == 0, printed.err
        assert debate_row(pg_engine, debate_id)["status"] == "completed"
        turns = turn_rows(pg_engine, debate_id)
        assert_each_turn_saved_once(turns)
        return printed.out, turns

    return resume


@dataclass(frozen=True)
class DuelOnAWorker:
    client: TestClient
    worker: WorkerProcess
    debate_id: str


@pytest.fixture
def duel_on_a_worker(
    node_env: dict[str, str],
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> Callable[[float], DuelOnAWorker]:
    """Starts a duel through a web node, run by a worker publishing to Redis, streaming each
    token after the given delay; returns once its first turn is saved."""

    def start(token_delay: float) -> DuelOnAWorker:
        fake_llm.set_default_token_delay(token_delay)
        client = web_node()
        debate_id = start_duel(client)
        worker = workers("alpha", env=_redis_of(node_env))
        wait_until(lambda: turn_rows(pg_engine, debate_id), timeout=RUN_TIMEOUT, what="a turn")
        return DuelOnAWorker(client=client, worker=worker, debate_id=debate_id)

    return start


def test_argue_resume_of_a_debate_a_worker_runs_follows_it_and_runs_nothing_twice(
    duel_on_a_worker: Callable[[float], DuelOnAWorker],
    resume_in_the_terminal: Resume,
    fake_llm: FakeLLMServer,
) -> None:
    duel = duel_on_a_worker(0.05)
    calls_before = len(fake_llm.requests)

    shown, turns = resume_in_the_terminal(duel.debate_id)

    # At most one call per turn still to run when the resume began: none made twice.
    saved_after = [turn for turn in turns if turn["seq"] > 1]
    assert len(fake_llm.requests) - calls_before <= len(saved_after)
    assert "in the workers' queue; following it here" in shown


def test_argue_resume_of_a_cancelled_debate_shows_the_new_run_live_and_not_the_old_one(
    duel_on_a_worker: Callable[[float], DuelOnAWorker],
    resume_in_the_terminal: Resume,
    fake_llm: FakeLLMServer,
    pg_engine: Engine,
) -> None:
    duel = duel_on_a_worker(0.1)
    assert duel.client.post(f"/api/debates/{duel.debate_id}/cancel").status_code == 200
    duel.worker.wait_for_log(f"stopped debate {duel.debate_id}", timeout=10)
    earlier = [turn["text"] for turn in turn_rows(pg_engine, duel.debate_id)]
    fake_llm.set_default_token_delay(0.0)

    shown, turns = resume_in_the_terminal(duel.debate_id)

    resumed = [turn["text"] for turn in turns[len(earlier) :]]
    assert resumed
    for text in resumed:  # the resumed run, live from Redis
        assert text.strip()[:40] in shown
    for text in earlier:  # the run before the cancel is not shown again
        assert text.strip()[:40] not in shown
