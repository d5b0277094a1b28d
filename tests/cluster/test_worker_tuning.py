"""A worker streams every token of its debates, as the web process does, and is tuned the
same way: its garbage collector (``app.collector``), so no full collection over everything
the SDKs and debates keep alive pauses those streams, and its thread switches
(``app.threads.shorten_thread_switches``), so its database threads do not hold the event loop
for 5 ms at a time."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from app import collector
from app.threads import THREAD_SWITCH_SECONDS
from app.workers import serve
from tests.cluster.conftest import workers_settings
from tests.fakes.llm_server import FakeLLMServer

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def default_collector() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


@pytest.fixture
def default_thread_switches() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield
    sys.setswitchinterval(before)


@pytest.fixture
async def running_worker(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
) -> AsyncIterator[None]:
    """A worker (``serve``) up and taking jobs; stopped afterwards, it closes what it opened."""
    settings = workers_settings(fake_llm, tmp_path, database_url)
    caplog.set_level(logging.INFO, logger="procrastinate.worker")
    worker = asyncio.create_task(serve(settings, concurrency=1, name="tuning-test"))
    try:
        async with asyncio.timeout(30):
            while "Starting worker on" not in caplog.text:
                assert not worker.done(), worker.exception()
                await asyncio.sleep(0.05)
        yield
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


async def test_a_running_worker_keeps_the_collectors_pauses_short(
    default_collector: None, running_worker: None
) -> None:
    assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD


async def test_a_running_worker_hands_the_interpreter_between_threads_every_millisecond(
    default_thread_switches: None, running_worker: None
) -> None:
    assert sys.getswitchinterval() == pytest.approx(THREAD_SWITCH_SECONDS)
