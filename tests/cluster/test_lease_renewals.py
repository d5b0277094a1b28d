"""A worker renews the leases of all the debates it runs together: one statement a round,
whatever their number, each lease extended only while its token and holder are still its
own (a lease taken over comes back lost, a lease given up is not extended again)."""

from __future__ import annotations

import asyncio
import time

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from app.db import session_scope
from app.leases import Fence, Lease, Renewals, release, renew_all
from tests.cluster.test_fencing import new_debate, take
from tests.databases import statements_sent

pytestmark = pytest.mark.timeout(60)

ROUND_SECONDS = 0.05


def seconds_left(engine: Engine, debate_id: str) -> float | None:
    with engine.connect() as connection:
        left = connection.execute(
            text("SELECT extract(epoch FROM lease_expires_at - now()) FROM debate WHERE id = :id"),
            {"id": debate_id},
        ).scalar()
    return None if left is None else float(left)


def taken(engine: Engine, holder: str, seconds: float) -> Lease:
    lease = take(engine, new_debate(engine), holder, seconds)
    assert isinstance(lease, Lease)
    return lease


def test_one_statement_a_round_renews_every_lease_a_worker_holds(pg_engine: Engine) -> None:
    leases = [taken(pg_engine, f"w1/job-{number}", seconds=5.0) for number in range(8)]
    fences = [Fence(pg_engine, lease, taken_at=time.monotonic()) for lease in leases]
    time.sleep(1.0)  # the leases have run down by a second

    async def one_round() -> list[str | None]:
        renewals = Renewals(pg_engine, every=ROUND_SECONDS)
        return await asyncio.gather(*(renewals.next_status(fence) for fence in fences))

    with statements_sent(pg_engine, "UPDATE") as updates:
        statuses = asyncio.run(one_round())

    assert statuses == ["running"] * len(fences)
    assert len(updates) == 1, updates
    for lease in leases:
        left = seconds_left(pg_engine, lease.debate_id)
        assert left is not None and left > 4.5, (lease.debate_id, left)
    assert not any(fence.lost for fence in fences)


def test_a_lease_taken_over_comes_back_lost_and_the_others_renewed(pg_engine: Engine) -> None:
    ours = taken(pg_engine, "alpha/job-1", seconds=5.0)
    overtaken = taken(pg_engine, "alpha/job-2", seconds=0.3)
    time.sleep(0.4)  # alpha froze past its lease on the second debate: bravo takes it over
    assert isinstance(take(pg_engine, overtaken.debate_id, "bravo/job-9", 30.0), Lease)
    kept = Fence(pg_engine, ours, taken_at=time.monotonic())
    lost = Fence(pg_engine, overtaken, taken_at=time.monotonic())

    async def one_round() -> list[str | None]:
        renewals = Renewals(pg_engine, every=ROUND_SECONDS)
        return await asyncio.gather(renewals.next_status(kept), renewals.next_status(lost))

    assert asyncio.run(one_round()) == ["running", None]
    assert lost.lost and not lost.may_publish()
    assert not kept.lost and kept.may_publish()
    # Bravo's lease is bravo's: alpha's renewal did not touch it.
    left = seconds_left(pg_engine, overtaken.debate_id)
    assert left is not None and left > 25


def test_a_lease_given_up_is_not_extended_by_a_renewal_sent_before(pg_engine: Engine) -> None:
    lease = taken(pg_engine, "w1/job-1", seconds=5.0)
    with session_scope(pg_engine) as session:
        assert release(session, lease=lease)
    with session_scope(pg_engine) as session:
        assert renew_all(session, leases=[lease]) == {}
    assert seconds_left(pg_engine, lease.debate_id) is None


def test_a_keeper_that_stops_asking_leaves_the_others_rounds_going(pg_engine: Engine) -> None:
    first, second = (taken(pg_engine, f"w1/job-{n}", seconds=5.0) for n in (1, 2))
    fence_one = Fence(pg_engine, first, taken_at=time.monotonic())
    fence_two = Fence(pg_engine, second, taken_at=time.monotonic())

    async def scenario() -> list[str | None]:
        renewals = Renewals(pg_engine, every=ROUND_SECONDS)
        stopped = asyncio.create_task(renewals.next_status(fence_one))
        await asyncio.sleep(0)
        stopped.cancel()  # its debate ended: its keeper was cancelled mid-wait
        return [await renewals.next_status(fence_two) for _ in range(3)]

    assert asyncio.run(scenario()) == ["running"] * 3


class RefusedOnce(Renewals):
    """Renewals whose first round finds the database away."""

    refused = 0

    def _renew(self, fences: list[Fence]) -> dict[str, str]:
        if not self.refused:
            self.refused += 1
            raise OperationalError(
                "UPDATE debate ...", {}, Exception("server closed the connection")
            )
        return super()._renew(fences)


def test_a_round_the_database_refuses_leaves_its_askers_to_the_next_round(
    pg_engine: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    fence = Fence(pg_engine, taken(pg_engine, "w1/job-1", seconds=5.0), taken_at=time.monotonic())

    async def ask() -> tuple[str | None, int]:
        renewals = RefusedOnce(pg_engine, every=ROUND_SECONDS)
        status = await renewals.next_status(fence)
        return status, renewals.refused

    assert asyncio.run(ask()) == ("running", 1)
    assert "1 lease(s) not renewed: " in caplog.text and "server closed" in caplog.text
    assert not fence.lost
