"""Heavy reads do not hold the event loop: while hundreds of clients fetch a large debate's
page and replay its stream, ``/healthz`` keeps answering at once.

A debate with many long Markdown turns is saved to a data folder, then the real ``argue
serve`` is started on it as a child process on 127.0.0.1. 300 fetches go at once, half of
the page, half of the page's stream (the debate ended before this process started, so the
stream replays it as one rendered body). Meanwhile a probe in a process of its own (so the
test's own busy client does not delay it) asks ``/healthz`` again and again on fresh
connections and reports each answer's time. The hub's replay of a long event log is checked
in-process: a ticker on the loop never waits long while many viewers replay it.
"""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.config import Settings
from app.db import make_engine
from app.events import EventHub
from app.migrate import migrate
from app.web.stream import json_events
from tests.fakes.llm_server import FakeLLMServer
from tests.reliability.server_process import ServerProcess, fake_provider_env
from tests.validation.conftest import TurnText, save_debate

pytestmark = pytest.mark.timeout(120)

TURNS = 20
PARAGRAPHS_PER_TURN = 12
FETCHES = 300
MAX_HEALTH_SECONDS = 0.5
LOAD_DEADLINE = 60.0

PROBE = r"""
import http.client, json, sys, threading, time

port = int(sys.argv[1])
done = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
print("ready", flush=True)
latencies = []
while not done.is_set():
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", "/healthz")
    response = connection.getresponse()
    response.read()
    latencies.append(time.perf_counter() - start)
    connection.close()
    assert response.status == 200, response.status
    time.sleep(0.02)
print(json.dumps(latencies), flush=True)
"""


def long_turn_text(n: int) -> str:
    """Markdown of the kind a model writes: headings, paragraphs, lists, code, emphasis."""
    paragraphs = [f"## Point {n}"]
    for p in range(PARAGRAPHS_PER_TURN):
        words = " ".join(f"word{(n * 31 + p * 7 + i) % 97}" for i in range(60))
        paragraphs.append(f"{words} **strong {p}** and *soft {p}* with `code_{p}`.")
        paragraphs.append(f"- item {p}.1 [a link](https://example.org/{n}/{p})\n- item {p}.2")
    paragraphs.append("```python\n" + "\n".join(f"x{i} = {i}" for i in range(20)) + "\n```")
    paragraphs.append(f"END-OF-TURN-{n}")
    return "\n\n".join(paragraphs)


def large_debate(home: Path) -> str:
    settings = Settings(home=home)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(settings.sqlalchemy_url)
    try:
        migrate(engine)
        turns = [
            TurnText(f"r1.rebuttal.seat{n}", "claude", "rebuttal", long_turn_text(n))
            for n in range(TURNS)
        ]
        return save_debate(engine, topic="A long one", turns=turns, synthesis=long_turn_text(99))
    finally:
        engine.dispose()


@pytest.fixture
def served(fake_llm: FakeLLMServer, tmp_path: Path) -> Iterator[tuple[ServerProcess, str]]:
    home = tmp_path / "argue-home"
    debate_id = large_debate(home)
    server = ServerProcess(env=fake_provider_env(fake_llm, home), log_path=tmp_path / "serve.log")
    server.start()
    try:
        yield server, debate_id
    finally:
        server.stop()


class HealthProbe:
    """``/healthz`` asked again and again by a child process until ``stop``."""

    def __init__(self, port: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", PROBE, str(port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        assert self.process.stdout.readline().strip() == "ready"

    def stop(self) -> list[float]:
        out, _ = self.process.communicate(input="", timeout=60)
        assert self.process.returncode == 0, out
        latencies: list[float] = json.loads(out.strip().splitlines()[-1])
        return latencies


async def fetch_all(base_url: str, debate_id: str) -> list[tuple[str, int, bool]]:
    limits = httpx.Limits(max_connections=FETCHES, max_keepalive_connections=0)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=LOAD_DEADLINE) as http:

        async def fetch(path: str) -> tuple[str, int, bool]:
            response = await http.get(path)
            return path, response.status_code, f"END-OF-TURN-{TURNS - 1}" in response.text

        paths = [
            f"/debates/{debate_id}" if i % 2 else f"/debates/{debate_id}/stream"
            for i in range(FETCHES)
        ]
        return await asyncio.gather(*(fetch(path) for path in paths))


def test_health_answers_at_once_while_300_clients_fetch_a_large_debate(
    served: tuple[ServerProcess, str],
) -> None:
    server, debate_id = served
    probe = HealthProbe(server.port)
    started = time.monotonic()
    try:
        results = asyncio.run(asyncio.wait_for(fetch_all(server.url, debate_id), LOAD_DEADLINE))
    finally:
        latencies = probe.stop()
    elapsed = time.monotonic() - started
    statuses = {status for _, status, _ in results}
    assert statuses == {200}, (statuses, server.log_text()[-4000:])
    assert all(whole for _, _, whole in results)
    assert len(latencies) >= 5, (latencies, elapsed)
    slowest = max(latencies)
    assert slowest < MAX_HEALTH_SECONDS, (
        f"/healthz took up to {slowest:.2f} s while {FETCHES} fetches ran ({elapsed:.1f} s); "
        f"median {sorted(latencies)[len(latencies) // 2]:.3f} s over {len(latencies)} probes"
    )


async def test_many_viewers_replaying_a_long_event_log_never_hold_the_loop() -> None:
    hub = EventHub()
    hub.publish("d1", "status", {"status": "running"})
    for i in range(60_000):
        hub.publish("d1", "delta", {"key": f"r1.opening.seat{i % 4}", "text": f"token {i} "})
    hub.publish("d1", "end", {"status": "completed"})
    gaps: list[float] = []
    stop = asyncio.Event()

    async def ticker() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async def viewer() -> int:
        size = 0
        async for chunk in json_events(hub, None, "d1", status="running", last_event_id=None):  # type: ignore[arg-type]
            size += len(chunk if isinstance(chunk, bytes) else chunk.encode())
        return size

    # As the server does (app.collector): what has survived is frozen, so a full collection
    # walking the 60,000 events is not counted as the stream holding the loop.
    gc.collect()
    gc.freeze()
    try:
        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.02)
        sizes = await asyncio.gather(*(viewer() for _ in range(50)))
        stop.set()
        await ticking
    finally:
        gc.unfreeze()
    assert len(set(sizes)) == 1 and sizes[0] > 1_000_000
    assert max(gaps) < 0.2, f"the loop was held for {max(gaps):.3f} s"
