"""The benchmark's stream tap (``bench.stream_tap``): from outside the app, it times each
stamped token from its stamp to its arrival in its debate's Redis stream, counting only what
arrives while it reads, and only debates' streams (not the bus's wake streams).

Needs Redis on 127.0.0.1:6379; skips, saying how to start it, when it is missing (and fails
instead under ARGUE_TESTS_NO_SKIP=1, as in CI)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import redis

from bench.fake_providers import STAMP_PLACEHOLDER, STAMPED_TOKEN
from bench.report import rows
from bench.stream_tap import SCAN_SECONDS, StreamTap, tap
from tests.bench.test_cluster_figures import cluster_result
from tests.bus.conftest import (
    REDIS_URL,
    redis_prefix,  # noqa: F401  (a fixture: Redis keys of a test)
)

TAP_SECONDS = 1.5
AGE_SECONDS = 0.2  # how old each token is when it is written to the stream


def stamped(*, age: float, tokens: int = 1) -> str:
    stamp = f"{time.monotonic() - age:.6f}"
    return json.dumps(
        {"key": "r1.claude", "text": STAMPED_TOKEN.replace(STAMP_PLACEHOLDER, stamp) * tokens}
    )


def test_the_tap_times_each_token_from_its_stamp_to_its_debates_stream(
    redis_prefix: str,  # noqa: F811  (the fixture imported above)
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    debate = f"{redis_prefix}0123abcd"
    wake = f"{redis_prefix}wake:node-a"
    # Written before the tap reads: history, not what it is to time.
    client.xadd(debate, {"type": "delta", "data": stamped(age=5.0, tokens=3)})
    measured: dict[str, Any] = {}
    reader = threading.Thread(
        target=lambda: measured.update(tap(REDIS_URL, redis_prefix, TAP_SECONDS))
    )
    reader.start()
    time.sleep(SCAN_SECONDS * 1.5)  # the tap has found the stream
    client.xadd(debate, {"type": "status", "data": json.dumps({"status": "running"})})
    for _ in range(4):
        client.xadd(debate, {"type": "delta", "data": stamped(age=AGE_SECONDS, tokens=2)})
    client.xadd(wake, {"type": "delta", "data": stamped(age=9.0)})
    reader.join()
    client.close()

    assert measured["streams"] == 1
    latency = measured["token_to_stream"]
    assert latency["samples"] == 8
    # Timed to Redis's write, whose clock counts whole milliseconds.
    assert AGE_SECONDS * 1000 - 1 <= latency["p50_ms"] <= latency["max_ms"] < 2000
    assert 0 < measured["cpu_utilisation"] < 1


def test_a_debate_started_while_the_tap_reads_is_timed_from_its_first_token_to_its_writes(
    redis_prefix: str,  # noqa: F811  (the fixture imported above)
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    measured: dict[str, Any] = {}
    reader = threading.Thread(
        target=lambda: measured.update(tap(REDIS_URL, redis_prefix, TAP_SECONDS))
    )
    reader.start()
    time.sleep(0.05)  # the tap has begun, and its next scan is most of SCAN_SECONDS away
    debate = f"{redis_prefix}89abcdef"
    for _ in range(3):
        client.xadd(debate, {"type": "delta", "data": stamped(age=AGE_SECONDS)})
    reader.join()
    client.close()

    latency = measured["token_to_stream"]
    assert (measured["streams"], latency["samples"]) == (1, 3)
    # Not the time until the scan found the stream: when Redis wrote each token.
    assert AGE_SECONDS * 1000 - 1 <= latency["max_ms"] < AGE_SECONDS * 1000 + SCAN_SECONDS * 500
    by_second = measured["token_to_stream_p99_by_second_ms"]
    assert len(by_second) == 2 and by_second[0] == latency["p99_ms"] and by_second[1] is None


def test_a_cluster_run_shows_the_workers_side_of_the_latency() -> None:
    result = cluster_result(None)
    result["latency"]["token_to_stream"] = {"samples": 900, "p50_ms": 21.5, "p99_ms": 60.4}
    found = [r for r in rows(result) if r.figure.startswith("token->Redis stream p50 / p99")]
    assert [r.value for r in found] == ["21.5 / 60.4 ms"]
    del result["latency"]["token_to_stream"]
    assert not any("Redis stream" in r.figure for r in rows(result))


def test_the_tap_in_its_own_process_reports_what_it_read_in_its_window(
    redis_prefix: str,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    debate = f"{redis_prefix}4567cdef"
    client.xadd(debate, {"type": "status", "data": json.dumps({"status": "running"})})
    process_tap = StreamTap(
        redis_url=REDIS_URL, prefix=redis_prefix, seconds=TAP_SECONDS * 2, home=tmp_path
    )
    # Written throughout the window (the process needs a moment to start and find the
    # stream): some of these arrive while it reads.
    written = 0
    until = time.monotonic() + TAP_SECONDS * 3
    while time.monotonic() < until:
        client.xadd(debate, {"type": "delta", "data": stamped(age=AGE_SECONDS)})
        written += 1
        time.sleep(0.05)
    client.close()

    measured = asyncio.run(process_tap.result())

    assert measured is not None
    latency = measured["token_to_stream"]
    assert 0 < latency["samples"] < written
    assert latency["p50_ms"] >= AGE_SECONDS * 1000 - 1


def test_the_tap_splits_tokens_by_how_long_their_debate_has_run(
    redis_prefix: str,  # noqa: F811  (the fixture imported above)
) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    # A debate whose first event Redis wrote five seconds ago (an explicit entry id, in the
    # server's milliseconds), and one that starts while the tap reads.
    server_ms = int(client.time()[0] * 1000)
    older, young = f"{redis_prefix}0a0a0a0a", f"{redis_prefix}1b1b1b1b"
    client.xadd(older, {"type": "status", "data": "{}"}, id=f"{server_ms - 5000}-0")
    measured: dict[str, Any] = {}
    reader = threading.Thread(
        target=lambda: measured.update(tap(REDIS_URL, redis_prefix, TAP_SECONDS))
    )
    reader.start()
    time.sleep(SCAN_SECONDS * 1.5)  # the tap has found the older stream
    client.xadd(older, {"type": "delta", "data": stamped(age=0.1, tokens=60)})
    client.xadd(young, {"type": "status", "data": "{}"})
    client.xadd(young, {"type": "delta", "data": stamped(age=0.4, tokens=40)})
    reader.join()
    client.close()

    ages = measured["token_to_stream_by_stream_age"]
    assert (ages["young_samples"], ages["older_samples"]) == (40, 60)
    assert 399 <= ages["young_p99_ms"] < 2000
    assert 99 <= ages["older_p99_ms"] < ages["young_p99_ms"]
    # The slowest of the hundred tokens is one of the young debate's.
    assert ages["young_share_of_slowest_1_percent"] == 1.0


def test_a_cluster_run_shows_the_workers_side_split_by_the_streams_age() -> None:
    result = cluster_result(None)
    result["latency"]["token_to_stream_by_stream_age"] = {
        "young_seconds": 2.0,
        "young_p99_ms": 92.1,
        "older_p99_ms": 66.1,
        "young_share_of_slowest_1_percent": 0.798,
    }
    found = [r for r in rows(result) if r.figure.startswith("token->Redis stream p99, streams")]
    assert [r.value for r in found] == ["92.1 ms / 66.1 ms (0.798)"]
    assert "first 2 s / older" in found[0].figure
