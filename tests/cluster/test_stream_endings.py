"""A debate cancelled while its worker lies dead (killed, its lease not yet run out) still
ends for its viewers: the web node that took the cancel ends the stream, so they are not
left watching a debate that stopped; the worker that later finds the debate's job sees it
cancelled, and the stream still has one end. (A worker that gets an ended debate's job ends
its stream: ``test_worker_end``.) A resume that comes while that node waits for the worker
is not cut short by the cancel's end.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from sqlalchemy.engine import Engine

from app.debate_queue import CANCEL_WAIT_SECONDS
from tests.bus.conftest import REDIS_URL
from tests.cluster.conftest import (
    TAKEOVER_SECONDS,
    WorkerProcess,
    debate_row,
    wait_until,
)
from tests.fakes.llm_server import FakeLLMServer
from tests.reliability.server_process import ServerProcess
from tests.web.sse import Message, parse_lines

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def node(node_env: dict[str, str], tmp_path: Path) -> Iterator[ServerProcess]:
    server = ServerProcess(env=dict(node_env), log_path=tmp_path / "node.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


def follow(url: str, messages: list[Message]) -> None:
    """A viewer of the debate's JSON event stream, to its end (or the read timeout)."""
    with (
        httpx.Client(timeout=httpx.Timeout(5.0, read=60.0)) as client,
        client.stream("GET", url) as response,
    ):
        for message in parse_lines(response.iter_lines()):
            messages.append(message)
            if message.event == "end":
                return


@pytest.fixture
def worker_on_redis(
    workers: Callable[..., WorkerProcess], node_env: dict[str, str]
) -> Callable[[str], WorkerProcess]:
    """Starts an ``argue worker`` publishing to the node's Redis."""
    shared = {key: value for key, value in node_env.items() if key.startswith("ARGUE_REDIS")}
    return lambda name: workers(name, env=shared)


def start_debate(api: httpx.Client) -> str:
    response = api.post("/api/debates", json={"topic": "Tabs or spaces", "rounds": 2})
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


def stream_key(node_env: dict[str, str], debate_id: str) -> str:
    return f"{node_env['ARGUE_REDIS_KEY_PREFIX']}{debate_id}"


def stream_entries(node_env: dict[str, str], debate_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The debate's stream in Redis: each entry's type and data, in order."""
    with redis.Redis.from_url(REDIS_URL, decode_responses=True) as client:
        entries = client.xrange(stream_key(node_env, debate_id))
    return [(fields["type"], json.loads(fields["data"])) for _, fields in entries]


def test_a_debate_cancelled_while_its_worker_is_dead_ends_for_its_viewers_once(
    node: ServerProcess,
    node_env: dict[str, str],
    worker_on_redis: Callable[[str], WorkerProcess],
    fake_llm: FakeLLMServer,
    pg_engine: Engine,
) -> None:
    fake_llm.set_default_token_delay(0.3)  # a turn streams for several seconds
    doomed = worker_on_redis("doomed")
    with httpx.Client(base_url=node.url, timeout=10.0) as api:
        debate_id = start_debate(api)
        messages: list[Message] = []
        viewer = threading.Thread(
            target=follow,
            args=(f"{node.url}/api/debates/{debate_id}/events", messages),
            daemon=True,
        )
        viewer.start()
        wait_until(lambda: any(m.event == "delta" for m in messages), timeout=60, what="live text")
        doomed.kill()
        assert debate_row(pg_engine, debate_id)["lease_holder"].startswith("doomed")

        asked = time.monotonic()
        cancel = api.post(f"/api/debates/{debate_id}/cancel")
        assert cancel.status_code == 200, cancel.text
        viewer.join(timeout=CANCEL_WAIT_SECONDS + 10)
        ended_after = time.monotonic() - asked

    assert not viewer.is_alive(), "the viewer is still waiting for the end"
    assert messages[-1].event == "end"
    assert messages[-1].json()["status"] == "cancelled"
    assert ended_after <= CANCEL_WAIT_SECONDS + 5
    assert debate_row(pg_engine, debate_id)["status"] == "cancelled"

    # The job goes back to the queue once the dead worker is noticed; the next worker finds
    # the debate cancelled and runs nothing. The stream has its one end.
    heir = worker_on_redis("heir")
    heir.wait_for_log(f"gave up debate {debate_id}", timeout=TAKEOVER_SECONDS * 3 + 10)
    assert "it is cancelled" in heir.log_text()
    types = [type for type, _ in stream_entries(node_env, debate_id)]
    assert types.count("end") == 1
    assert types[-1] == "end"


def test_a_resume_that_comes_while_a_cancel_waits_for_the_worker_is_not_ended_by_it(
    node: ServerProcess,
    node_env: dict[str, str],
    worker_on_redis: Callable[[str], WorkerProcess],
    fake_llm: FakeLLMServer,
    pg_engine: Engine,
) -> None:
    fake_llm.set_default_token_delay(0.3)
    sleeper = worker_on_redis("sleeper")
    with httpx.Client(base_url=node.url, timeout=10.0) as api:
        debate_id = start_debate(api)
        wait_until(lambda: fake_llm.requests, timeout=60, what="a turn to stream")
        # Frozen, its worker cannot stop the run: the cancel waits for it, the whole wait.
        sleeper.signal(signal.SIGSTOP)
        cancels: list[httpx.Response] = []
        cancelling = threading.Thread(
            target=lambda: cancels.append(api.post(f"/api/debates/{debate_id}/cancel")),
            daemon=True,
        )
        cancelling.start()
        wait_until(
            lambda: debate_row(pg_engine, debate_id)["status"] == "cancelled",
            timeout=10,
            what="the cancel",
        )
        resumed = api.post(f"/api/debates/{debate_id}/resume")
        assert resumed.status_code == 200, resumed.text
        cancelling.join(timeout=CANCEL_WAIT_SECONDS + 10)
        assert [cancel.status_code for cancel in cancels] == [200]

    sleeper.signal(signal.SIGCONT)
    fake_llm.set_default_token_delay(0.0)
    wait_until(
        lambda: debate_row(pg_engine, debate_id)["status"] == "completed",
        timeout=60,
        what="the resumed debate to complete",
    )
    wait_until(
        lambda: stream_entries(node_env, debate_id)[-1][0] == "end",
        timeout=10,
        what="the stream's end",
    )
    entries = stream_entries(node_env, debate_id)
    # The resume's ``status`` is followed by the resumed run, not by the cancel's end.
    requeued = entries.index(("status", {"status": "queued"}))
    endings = [data["status"] for type, data in entries[requeued:] if type == "end"]
    assert endings == ["completed"], entries[requeued:]
