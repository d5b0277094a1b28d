"""A debate never runs on two workers at once: the lease admits one worker while it is live,
and once another worker has taken the debate over, the old holder's fencing token is
refused on every write (in the write's own transaction) and before every event it would
publish.

First on the lease itself, with real PostgreSQL; then with real ``argue worker`` processes:
a worker frozen mid-turn (SIGSTOP) past its lease, whose debate another worker takes over
and completes, then thawed (SIGCONT), saves and publishes nothing, gives the debate up, and
goes on to run the next one. Each worker
talks to its own fake LLM server with its own words, so every saved turn names its writer.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine
from sqlmodel import Session

from app import leases, store
from app.db import session_scope
from app.events import EventHub
from app.leases import Fence, Lease, LeaseLost, Refused
from app.ledger import Ledger, TurnRecord
from app.spec import DebateSpec, Seat
from app.workers import FencedBus
from tests.bus.conftest import REDIS_URL
from tests.cluster.conftest import (
    TAKEOVER_SECONDS,
    WorkerProcess,
    debate_row,
    turn_rows,
    wait_until,
)
from tests.cluster.test_workers import RUN_TIMEOUT, assert_each_turn_saved_once, start_duel
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.timeout(180)

ALPHA_WORDS = "Alpha worker speaking slowly about the question at hand"
BRAVO_WORDS = "Bravo worker speaking quickly"


def new_debate(engine: Engine) -> str:
    spec = DebateSpec(
        topic="Is a fence a wall?",
        seats=(
            Seat(role="claude", label="Claude", provider="anthropic"),
            Seat(role="gemini", label="Gemini", provider="gemini"),
        ),
    )
    with session_scope(engine) as session:
        return store.create_debate(session, spec=spec).id


def take(engine: Engine, debate_id: str, holder: str, seconds: float) -> Lease | Refused:
    with session_scope(engine) as session:
        return leases.take(session, debate_id=debate_id, holder=holder, seconds=seconds)


def opening(text: str) -> TurnRecord:
    now = datetime.now(UTC)
    return TurnRecord(
        key="r1.opening.claude",
        role="claude",
        label="Claude",
        provider="anthropic",
        model="claude-test",
        phase="opening",
        round=1,
        status="completed",
        text=text,
        verdict=None,
        error_kind=None,
        error_message=None,
        input_tokens=3,
        output_tokens=5,
        usage_estimated=False,
        attempts=1,
        started_at=now,
        finished_at=now,
    )


def test_a_live_lease_keeps_other_workers_out_and_a_taken_over_one_writes_and_publishes_nothing(
    pg_engine: Engine,
) -> None:
    debate_id = new_debate(pg_engine)
    first = take(pg_engine, debate_id, "alpha", seconds=0.5)
    assert isinstance(first, Lease) and first.token == 1
    fence_alpha = Fence(pg_engine, first, taken_at=time.monotonic())

    refused = take(pg_engine, debate_id, "bravo", seconds=30)
    assert isinstance(refused, Refused)
    assert (refused.status, refused.holder) == ("running", "alpha")

    time.sleep(0.6)  # alpha's lease runs out, as a frozen worker's does
    second = take(pg_engine, debate_id, "bravo", seconds=30)
    assert isinstance(second, Lease) and second.token == 2
    fence_bravo = Fence(pg_engine, second, taken_at=time.monotonic())

    with pytest.raises(LeaseLost):
        Ledger(pg_engine, fence=fence_alpha).save_turn(debate_id, opening("alpha's words"))
    assert turn_rows(pg_engine, debate_id) == []
    with pytest.raises(LeaseLost):
        Ledger(pg_engine, fence=fence_alpha).finish(
            debate_id, status="completed", outcome=None, reason=None
        )
    hub = EventHub()
    FencedBus(hub, fence_alpha).publish(debate_id, "end", {"status": "completed"})
    assert not hub.has_ended(debate_id)

    Ledger(pg_engine, fence=fence_bravo).save_turn(debate_id, opening("bravo's words"))
    assert [turn["text"] for turn in turn_rows(pg_engine, debate_id)] == ["bravo's words"]
    FencedBus(hub, fence_bravo).publish(debate_id, "end", {"status": "completed"})
    assert hub.has_ended(debate_id)
    assert debate_row(pg_engine, debate_id)["status"] == "running"  # alpha's finish refused


def test_a_write_under_a_lease_lets_the_server_end_its_transaction_if_it_idles_past_the_lease(
    pg_engine: Engine,
) -> None:
    """A worker frozen inside a write would hold the debate's row lock, and the worker taking
    over would wait on it forever: the transaction's idle time is capped at the lease's
    length (at least a second), for that transaction only."""
    debate_id = new_debate(pg_engine)
    lease = take(pg_engine, debate_id, "alpha", seconds=2.5)
    assert isinstance(lease, Lease)
    show = "SHOW idle_in_transaction_session_timeout"
    with pg_engine.connect() as connection:
        with Session(bind=connection) as session:
            assert leases.hold(session, lease=lease) == "running"
            during = connection.exec_driver_sql(show).scalar()
            session.commit()
        after = connection.exec_driver_sql(show).scalar()  # the next transaction's
    assert during == "2500ms"
    assert after == "0", "the cap is the write's alone"


@dataclass
class TakenOver:
    debate_id: str
    client: TestClient
    alpha: WorkerProcess
    bravo: WorkerProcess
    completed: dict[str, Any]
    before_thaw: list[dict[str, Any]]


def freeze_alpha_and_let_bravo_take_over(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    fake_llm: FakeLLMServer,
    pg_engine: Engine,
    env: dict[str, str] | None = None,
) -> TakenOver:
    """Alpha takes a debate and is frozen in the middle of its first turns; bravo takes the
    debate over and completes it; then alpha is thawed and gives the debate up."""
    fake_llm.rule(contains="", reply=ALPHA_WORDS, token_delay=0.4)  # a turn: about 4 s
    client = web_node()
    alpha = workers("alpha", env=env)
    debate_id = start_duel(client)
    alpha.wait_for_log(f"took debate {debate_id}", timeout=RUN_TIMEOUT)
    wait_until(lambda: fake_llm.requests, timeout=RUN_TIMEOUT, what="alpha's first turn")
    time.sleep(1.0)  # well into the turn
    alpha.signal(signal.SIGSTOP)
    frozen_at = time.monotonic()

    with FakeLLMServer() as other:
        other.rule(contains="", reply=BRAVO_WORDS, token_delay=0.01)
        bravo = workers("bravo", server=other, env=env)
        bravo.wait_for_log(f"took debate {debate_id}", timeout=TAKEOVER_SECONDS * 4)
        bravo.wait_for_log(f"finished debate {debate_id} (job", timeout=RUN_TIMEOUT)
        completed = debate_row(pg_engine, debate_id)
        assert completed["status"] == "completed"
        assert time.monotonic() - frozen_at > TAKEOVER_SECONDS / 2  # alpha's lease ran out
        before_thaw = turn_rows(pg_engine, debate_id)

        alpha.signal(signal.SIGCONT)
        alpha.wait_for_log(f"gave up debate {debate_id}", timeout=20)
    return TakenOver(debate_id, client, alpha, bravo, completed, before_thaw)


def test_a_worker_frozen_past_its_lease_saves_nothing_after_another_took_its_debate_over(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
) -> None:
    taken = freeze_alpha_and_let_bravo_take_over(web_node, workers, fake_llm, pg_engine)

    after_thaw = turn_rows(pg_engine, taken.debate_id)
    assert after_thaw == taken.before_thaw  # alpha wrote nothing once thawed
    assert debate_row(pg_engine, taken.debate_id) == taken.completed
    assert taken.completed["lease_token"] == 2
    assert_each_turn_saved_once(after_thaw)
    assert all(BRAVO_WORDS in turn["text"] for turn in after_thaw)
    assert "another worker took it over" in taken.alpha.log_text()

    # Thawed, alpha goes on working: the next debate is its own to run.
    taken.bravo.stop()
    fake_llm.reset()
    next_debate = start_duel(taken.client, "And a hedge?")
    taken.alpha.wait_for_log(f"finished debate {next_debate} (job", timeout=RUN_TIMEOUT)
    assert debate_row(pg_engine, next_debate)["status"] == "completed"


def test_a_worker_frozen_past_its_lease_publishes_nothing_after_another_took_its_debate_over(
    web_node: Callable[[], TestClient],
    workers: Callable[..., WorkerProcess],
    pg_engine: Engine,
    fake_llm: FakeLLMServer,
    redis_prefix: str,
) -> None:
    """Both workers publish to one Redis stream, as a cluster does: once bravo's first event
    is there, none of alpha's words follow it."""
    env = {"ARGUE_REDIS_URL": REDIS_URL, "ARGUE_REDIS_KEY_PREFIX": redis_prefix}
    taken = freeze_alpha_and_let_bravo_take_over(web_node, workers, fake_llm, pg_engine, env)

    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        entries = client.xrange(f"{redis_prefix}{taken.debate_id}")
    finally:
        client.close()
    texts = [fields.get("data", "") for _, fields in entries]
    alpha_only = ("Alpha", "slowly", "hand")
    assert any(word in text for text in texts for word in alpha_only)  # alpha did publish
    first_of_bravo = next(n for n, text in enumerate(texts) if "Bravo" in text)
    assert not [text for text in texts[first_of_bravo:] if any(word in text for word in alpha_only)]
