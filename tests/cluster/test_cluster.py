"""The cluster, as a team runs it: two ``argue serve`` nodes and two ``argue worker`` processes
on loopback, sharing PostgreSQL and Redis, the wire-level fake providers streaming slowly.

Twelve debates are started through node A and watched through node B; every viewer switches
to node A mid-stream with its ``Last-Event-ID``. The worker holding debates is killed with
SIGKILL in the middle of their turns; one debate is cancelled through node B. Every other
debate completes, each viewer saw every turn's text exactly once (nothing missing, nothing
doubled, never told to reload), and no turn is saved or announced twice.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy.engine import Engine

from tests.cluster.conftest import (
    TAKEOVER_SECONDS,
    WorkerProcess,
    debate_row,
    turn_rows,
    wait_until,
)
from tests.fakes.llm_server import FakeLLMServer
from tests.reliability.server_process import ServerProcess
from tests.web.sse import Message, parse_lines

DEBATES = 12
TOKEN_DELAY = 0.12  # each fake reply is about a dozen tokens: a turn takes ~1.5 s


@pytest.fixture
def nodes(node_env: dict[str, str], tmp_path: Path) -> Iterator[tuple[ServerProcess, ...]]:
    started: list[ServerProcess] = []
    try:
        # One after the other: each brings the schema to head as it starts.
        for name in ("a", "b"):
            node = ServerProcess(env=dict(node_env), log_path=tmp_path / f"node-{name}.log")
            node.start()
            started.append(node)
        yield tuple(started)
    finally:
        for node in started:
            node.stop()


@dataclass
class Viewer:
    """Follows one debate's JSON event stream as a browser does: first on one node, then,
    after its first completed turn, on the other with the last id it received. A stream that
    closes before the end (a viewer that fell behind is dropped, by design) is reconnected to
    the same node with the last id."""

    debate_id: str
    first: str
    second: str
    messages: list[Message] = field(default_factory=list)
    switched: bool = False
    reconnects: int = 0
    error: BaseException | None = None

    def run(self) -> None:
        try:
            with httpx.Client(timeout=httpx.Timeout(5.0, read=60.0)) as client:
                node = self.first
                while not self._over():
                    last_id = self.messages[-1].id if self.messages else None
                    why = self._follow(client, node, last_id=last_id, switch=not self.switched)
                    if why == "switch":
                        node, self.switched = self.second, True
                    elif why == "closed":
                        self.reconnects += 1
                        assert self.reconnects <= 50, "the stream keeps closing"
        except BaseException as error:  # reported by the test, with the debate's id
            self.error = error

    def _follow(self, client: httpx.Client, base: str, *, last_id: str | None, switch: bool) -> str:
        headers = {"Last-Event-ID": last_id} if last_id else {}
        url = f"{base}/api/debates/{self.debate_id}/events"
        with client.stream("GET", url, headers=headers) as response:
            response.raise_for_status()
            for message in parse_lines(response.iter_lines()):
                self.messages.append(message)
                if message.event in ("end", "reload"):
                    return message.event
                if switch and message.event == "turn_completed":
                    return "switch"
        return "closed"

    def _over(self) -> bool:
        return bool(self.messages) and self.messages[-1].event in ("end", "reload")


def turn_texts(messages: list[Message]) -> dict[str, str]:
    """Each turn's text as a viewer assembles it: a turn that starts again (another worker
    took the debate over, or a retry) starts its text again."""
    texts: dict[str, str] = {}
    for message in messages:
        if message.event in ("turn_started", "retrying"):
            texts[message.json()["key"]] = ""
        elif message.event == "delta":
            data = message.json()
            texts[data["key"]] = texts.get(data["key"], "") + data["text"]
    return texts


def redis_id(event_id: str | None) -> tuple[int, int]:
    assert event_id, "every event of the stream carries an id"
    milliseconds, sequence = event_id.split("-")
    return int(milliseconds), int(sequence)


def test_two_nodes_and_two_workers_carry_twelve_debates_through_a_killed_worker(
    fake_llm: FakeLLMServer,
    nodes: tuple[ServerProcess, ServerProcess],
    workers: Callable[..., WorkerProcess],
    node_env: dict[str, str],
    pg_engine: Engine,
) -> None:
    node_a, node_b = nodes
    fake_llm.set_default_token_delay(TOKEN_DELAY)
    shared = {key: value for key, value in node_env.items() if key.startswith("ARGUE_REDIS")}
    doomed = workers("worker-a", concurrency=8, env=shared)
    survivor = workers("worker-b", concurrency=DEBATES, env=shared)

    with httpx.Client(base_url=node_a.url, timeout=10.0) as api_a:
        ids = []
        for number in range(DEBATES):
            response = api_a.post(
                "/api/debates", json={"topic": f"Cluster question {number}", "rounds": 2}
            )
            assert response.status_code == 201, response.text
            ids.append(response.json()["id"])

    viewers = [Viewer(debate_id, node_b.url, node_a.url) for debate_id in ids]
    threads = [threading.Thread(target=viewer.run, daemon=True) for viewer in viewers]
    for thread in threads:
        thread.start()

    # The worker that holds debates is killed while their turns stream.
    def streaming_on_doomed() -> list[str]:
        held = [
            i
            for i in ids
            if (debate_row(pg_engine, i)["lease_holder"] or "").startswith("worker-a")
        ]
        return [
            i
            for i in held
            if any(m.event == "delta" for v in viewers if v.debate_id == i for m in v.messages)
        ]

    taken_from_doomed = wait_until(streaming_on_doomed, timeout=60, what="worker-a streaming")
    doomed.kill()
    killed_at = time.monotonic()

    # One debate is cancelled through node B (one the survivor runs, so the cancel is proven
    # to reach a live worker); it stops within 2 s.
    def running_on_survivor() -> str | None:
        for i in ids:
            row = debate_row(pg_engine, i)
            if row["status"] == "running" and (row["lease_holder"] or "").startswith("worker-b"):
                return i
        return None

    with httpx.Client(base_url=node_b.url, timeout=10.0) as api_b:
        cancelled = wait_until(running_on_survivor, timeout=60, what="a debate on worker-b")
        response = api_b.post(f"/api/debates/{cancelled}/cancel")
        assert response.status_code == 200, response.text
        asked = time.monotonic()
        wait_until(
            lambda: debate_row(pg_engine, cancelled)["status"] == "cancelled",
            timeout=2.0,
            what="the cancel to stop the debate",
        )
        assert time.monotonic() - asked <= 2.0
        turns_at_cancel = len(turn_rows(pg_engine, cancelled))

    # The survivor takes over the killed worker's debates within the take-over time.
    retaken = wait_until(
        lambda: all(
            (debate_row(pg_engine, i)["lease_holder"] or "").startswith("worker-b")
            or debate_row(pg_engine, i)["status"] not in ("queued", "running")
            for i in taken_from_doomed
        ),
        timeout=TAKEOVER_SECONDS * 3 + 10,
        what="worker-b to take over worker-a's debates",
    )
    assert retaken
    assert time.monotonic() - killed_at <= TAKEOVER_SECONDS * 3 + 10

    for thread in threads:
        thread.join(timeout=240)
    assert survivor.process is not None and survivor.process.poll() is None

    statuses = {i: debate_row(pg_engine, i)["status"] for i in ids}
    assert statuses[cancelled] == "cancelled"
    assert {i: s for i, s in statuses.items() if i != cancelled} == {
        i: "completed" for i in ids if i != cancelled
    }
    assert len(turn_rows(pg_engine, cancelled)) == turns_at_cancel

    for viewer in viewers:
        assert viewer.error is None, f"{viewer.debate_id}: {viewer.error!r}"
        events = [m.event for m in viewer.messages]
        assert "reload" not in events, viewer.debate_id
        assert events[-1] == "end", viewer.debate_id
        # Every viewer did switch nodes mid-stream, and the two halves join without a gap or
        # a duplicate: the ids only ever grow.
        # (The cancelled debate may end before its first turn does.)
        assert viewer.switched or viewer.debate_id == cancelled, viewer.debate_id
        stream_ids = [redis_id(m.id) for m in viewer.messages]
        assert stream_ids == sorted(set(stream_ids)), viewer.debate_id

        rows = turn_rows(pg_engine, viewer.debate_id)
        keys = Counter(row["key"] for row in rows)
        assert all(count == 1 for count in keys.values()), keys
        assert len({row["seq"] for row in rows}) == len(rows)
        announced = Counter(
            json.loads(m.data)["key"] for m in viewer.messages if m.event == "turn_completed"
        )
        assert announced == keys, viewer.debate_id
        seen = turn_texts(viewer.messages)
        for row in rows:
            if row["status"] == "completed":
                assert seen[row["key"]] == row["text"], (viewer.debate_id, row["key"])

    assert any(
        v.debate_id in taken_from_doomed and any(m.event == "turn_started" for m in v.messages)
        for v in viewers
    )
