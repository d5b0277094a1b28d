"""The periods a worker keeps, derived from ``ARGUE_WORKER_TAKEOVER_SECONDS``, add up to a
take-over within that time: a silent worker is noticed, its lease has run out by then, and a
cancel is seen within about a second."""

from __future__ import annotations

import pytest

from app.config import Settings
from app.workers import FETCH_POLL_SECONDS, WorkerTiming


@pytest.mark.parametrize("takeover", [2.0, 6.0, 30.0, 600.0])
def test_the_periods_of_a_worker_add_up_to_a_take_over_within_the_setting(
    takeover: float,
) -> None:
    timing = WorkerTiming.from_settings(Settings(worker_takeover_seconds=takeover))

    # Its heartbeats stop; a sweep notices after silent_seconds; the next free worker
    # fetches the job and finds the lease, renewed until the worker stopped, run out.
    noticed = timing.silent_seconds + timing.sweep_seconds
    fetched = noticed + FETCH_POLL_SECONDS
    assert timing.lease_seconds <= timing.silent_seconds
    assert fetched <= takeover + FETCH_POLL_SECONDS
    # A live worker is never taken for silent: several heartbeats fit in the silence.
    assert timing.silent_seconds >= 3 * timing.heartbeat_seconds
    # Nor its lease for lost: several renewals fit in the lease; and a cancel is seen soon.
    assert timing.lease_seconds >= 2 * timing.renew_seconds
    assert timing.renew_seconds <= 1.0
