"""The garbage-collector schedule: survivors frozen between full collections, and the
cycles frozen among them reclaimed by the next full one."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from app.collector import CollectorSchedule


class _Node:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def unfrozen() -> Iterator[None]:
    yield
    gc.unfreeze()


def test_a_frozen_cycle_survives_collections_until_the_next_full_one() -> None:
    now = [100.0]
    schedule = CollectorSchedule(full_every=600.0, clock=lambda: now[0])
    node = _Node()
    alive = weakref.ref(node)
    del node

    assert schedule.tick() is None  # a freeze, not a collection
    gc.collect()
    assert alive() is not None, "a frozen object is out of the collector's sight"

    now[0] += 599.0
    assert schedule.tick() is None
    assert alive() is not None

    now[0] += 1.0
    freed = schedule.tick()
    assert freed is not None and freed >= 2  # the node and its __dict__
    assert alive() is None


def test_a_freeze_takes_the_survivors_out_of_the_young_generations() -> None:
    schedule = CollectorSchedule(clock=lambda: 0.0)
    kept = [_Node() for _ in range(100)]
    before = gc.get_freeze_count()
    schedule.tick()
    assert gc.get_freeze_count() >= before + len(kept)
