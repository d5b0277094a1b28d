"""Background work runs below the event loop's priority: saving turns and rendering whole
pages and replays happen in lanes whose threads are ``nice``r than the thread that started
them, so that when the cores are full the loop carrying every debate's live text gets the
CPU first. Lease renewals, which keep a worker's debates its own, are not lowered."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from app.leases import lease_lane
from app.ledger import ledger_lane
from app.threads import BACKGROUND_NICENESS, MOST_NICE, Lane
from app.web.offload import final_page_off_loop, off_loop

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="a thread's own nice value is Linux's"
)


def own_niceness() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def lowered(by: int) -> int:
    return min(own_niceness() + by, MOST_NICE)


async def test_a_lane_runs_its_work_the_given_steps_below_the_thread_that_started_it() -> None:
    assert await Lane("plain", threads=1).run(own_niceness) == own_niceness()
    assert await Lane("lowered", threads=1, niceness=3).run(own_niceness) == lowered(3)


async def test_turn_saves_and_page_rendering_run_in_the_background_and_leases_do_not() -> None:
    background = lowered(BACKGROUND_NICENESS)
    assert background > own_niceness() or own_niceness() == MOST_NICE
    assert await ledger_lane.run(own_niceness) == background
    assert await off_loop(own_niceness) == background
    assert await final_page_off_loop(own_niceness) == background
    assert await lease_lane.run(own_niceness) == own_niceness()
