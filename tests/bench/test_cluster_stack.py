"""The benchmark's cluster (``python -m bench --cluster W``): two web nodes and a worker on a
throwaway PostgreSQL database and Redis key prefix. A debate started through node A is run by
the worker and streams, stamped token by stamped token, to a viewer on node B; the stored
history is in PostgreSQL; stopping the stack, after a run or after a failed start, leaves no
process, no database and no Redis key behind.

Needs PostgreSQL and Redis on 127.0.0.1; skips, saying how to start them, when either is
missing (and fails instead under ARGUE_TESTS_NO_SKIP=1, as in CI).
"""

from __future__ import annotations

import json
import os

import httpx
import pytest

from app.providers.worker import usable_cpus
from bench.clients import duel_seats
from bench.cluster import (
    ClusterOptions,
    ClusterStack,
    database_exists,
    missing_services,
    redis_keys,
)
from bench.fake_providers import STAMP_PATTERN, Pace
from bench.processes import child_running
from bench.stack import StackOptions
from tests.databases import ADMIN_URLS

HISTORY = 30
TOKENS = 12


@pytest.fixture(scope="module")
def cluster_options() -> ClusterOptions:
    options = ClusterOptions(workers=1, worker_concurrency=4, postgres_url=ADMIN_URLS[0])
    problem = missing_services(options)
    if problem:
        pytest.skip(problem)
    return options


def stack_options() -> StackOptions:
    fast = Pace(first_token_delay=0.05, tokens_per_second=100.0, tokens_per_chunk=1)
    return StackOptions(
        paces=dict.fromkeys(("anthropic", "gemini", "openai"), fast),
        tokens=TOKENS,
        history_debates=HISTORY,
    )


def events_of(base_url: str, debate_id: str) -> list[tuple[str, str]]:
    """The debate's JSON event stream read to its end: (event, data) pairs."""
    events: list[tuple[str, str]] = []
    event, data = "message", ""
    url = f"{base_url}/api/debates/{debate_id}/events"
    with (
        httpx.Client(timeout=httpx.Timeout(10.0, read=60.0), trust_env=False) as client,
        client.stream("GET", url) as response,
    ):
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data = line[5:].strip()
            elif not line and data:
                events.append((event, data))
                if event == "end":
                    break
                event, data = "message", ""
    return events


def test_a_debate_started_on_node_a_runs_on_a_worker_streams_through_node_b_and_stop_leaves_nothing(
    cluster_options: ClusterOptions,
) -> None:
    stack = ClusterStack(stack_options(), cluster=cluster_options)
    try:
        stack.start()
        node_a, node_b = stack.node_urls
        assert node_a == stack.app_url != node_b
        with httpx.Client(timeout=10.0, trust_env=False) as http:
            # The stored history is in PostgreSQL, seen by either node.
            stored = http.get(f"{node_b}/api/debates", params={"status": "completed"}).json()
            assert stored["total"] == HISTORY
            before = stack.process_usages()
            response = http.post(
                f"{node_a}/api/debates",
                json={
                    "topic": "Is a cluster worth it?",
                    "format": "duel",
                    "rounds": 1,
                    "seats": duel_seats(),
                },
            )
            assert response.status_code == 201, response.text
            debate_id = response.json()["id"]

        events = events_of(node_b, debate_id)

        assert events[-1][0] == "end"
        assert json.loads(events[-1][1])["status"] == "completed"
        stamps = [
            s for kind, data in events if kind == "delta" for s in STAMP_PATTERN.findall(data)
        ]
        assert len(stamps) >= TOKENS  # at least one seat's whole reply, token by token
        assert f"took debate {debate_id}" in (stack.home / "worker-1.log").read_text()
        after = stack.process_usages()
        # Where it has a second core, the worker makes its provider calls in a process of
        # its own (the app's default, which the bench keeps), counted as the worker's too.
        calls = "worker 1 (its provider calls)"
        has_calls_process = usable_cpus() > 1
        processes = {"web a", "web b", "worker 1"} | ({calls} if has_calls_process else set())
        assert set(after) == processes
        assert after["worker 1"].cpu_seconds > before["worker 1"].cpu_seconds
        if has_calls_process:
            assert after[calls].cpu_seconds > before[calls].cpu_seconds
        # The events went through Redis, under the run's own prefix, into the run's database.
        name, prefix = stack.database_name, stack.redis_prefix
        assert redis_keys(cluster_options.redis_url, prefix)
        assert database_exists(cluster_options.postgres_url, name)
        calls_pid = child_running(stack.worker_pids[0], "app.providers.worker")
        pids = [*stack.node_pids, *stack.worker_pids, stack.fake_pid]
        if calls_pid is not None:
            pids.append(calls_pid)
    finally:
        stack.stop()

    assert not database_exists(cluster_options.postgres_url, name)
    assert redis_keys(cluster_options.redis_url, prefix) == []
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not stack.home.exists()


def test_a_cluster_that_fails_to_start_still_drops_its_database(
    cluster_options: ClusterOptions,
) -> None:
    # Settings every process refuses (a worker runs at least one debate at once): the
    # database is made and seeded, then the first process exits.
    refused = ClusterOptions(
        workers=1,
        worker_concurrency=0,
        postgres_url=cluster_options.postgres_url,
        redis_url=cluster_options.redis_url,
    )
    stack = ClusterStack(stack_options(), cluster=refused)
    try:
        with pytest.raises(RuntimeError, match="exited"):
            stack.start()
        name = stack.database_name
        assert name and database_exists(refused.postgres_url, name)
    finally:
        stack.stop()

    assert not database_exists(refused.postgres_url, name)
