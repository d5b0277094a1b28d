"""A worker streams every token of its debates, as the web process does: its garbage
collector is tuned the same way (``app.collector``), so no full collection over everything
the SDKs and debates keep alive pauses those streams."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import collector
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


async def test_a_running_worker_keeps_the_collectors_pauses_short(
    default_collector: None,
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    database_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = workers_settings(fake_llm, tmp_path, database_url)
    caplog.set_level(logging.INFO, logger="procrastinate.worker")
    worker = asyncio.create_task(serve(settings, concurrency=1, name="collector-test"))
    try:
        async with asyncio.timeout(30):
            # Up and taking jobs: stopped from here on, it closes everything it opened.
            while "Starting worker on" not in caplog.text:
                assert not worker.done(), worker.exception()
                await asyncio.sleep(0.05)
        assert gc.get_threshold()[0] == collector.YOUNG_THRESHOLD
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker
