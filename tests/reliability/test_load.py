"""Many debates and many viewers at once, and viewers that misbehave.

The app runs under uvicorn in a thread of this process (so the test can look at its event
hub and its event loop's tasks) against the fake LLM server, whose replies stream a token
every ~15 ms. Twenty debates run together, each watched by three viewers: all complete, no
"database is locked" (or any error) is logged, and every viewer's streamed text of every turn
is exactly the saved text. A viewer that stops reading without closing, and one that vanishes
mid-stream, do not slow their debate; once they are gone the hub has no subscriber and the
loop no task left over. A viewer dropped for falling behind replays everything it missed.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
import uvicorn
from fastapi import FastAPI

from app.config import Settings
from app.events import Event, EventHub, parse_event_id
from app.web.app import create_app
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import LiveServer, http_providers, stop
from tests.web.sse import Message, parse_lines

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")

DEBATES = 20
VIEWERS_PER_DEBATE = 3
DEADLINE = 40.0
TOKEN_DELAY = 0.015
MAX_RECONNECTS = 5


# -- the app in a thread ---------------------------------------------------------------------


@pytest.fixture
def load_settings(fake_llm: FakeLLMServer, tmp_path: Path) -> Settings:
    fake_llm.set_default_token_delay(TOKEN_DELAY)
    return fake_settings(fake_llm, tmp_path / "argue-home", max_concurrent_debates=DEBATES)


class Captured(logging.Handler):
    """Every warning or error logged while the app serves, whichever thread logs it."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def lines(self) -> list[str]:
        return [
            f"{r.name} {r.levelname}: {r.getMessage()} {r.exc_text or ''}" for r in self.records
        ]


# On loopback the kernel would buffer megabytes for a viewer that stops reading; a fixed send
# buffer (inherited by every accepted socket) makes the server's writes to it block soon, as
# they do over a real network.
SEND_BUFFER = 16384


def serve_small_buffers(app: FastAPI) -> LiveServer:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, daemon=True, name="argue-load"
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    return LiveServer(app, server, thread)


@pytest.fixture
def live(load_settings: Settings) -> Iterator[LiveServer]:
    app: FastAPI = create_app(load_settings, providers=http_providers(load_settings))
    server = serve_small_buffers(app)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture
def logs(live: LiveServer) -> Iterator[Captured]:
    # After the server started: uvicorn's logging setup replaces its loggers' handlers, and
    # its "uvicorn" logger does not propagate to the root.
    handler = Captured()
    loggers = [logging.getLogger(), logging.getLogger("uvicorn")]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def assert_clean(logs: Captured) -> None:
    lines = logs.lines()
    assert not [line for line in lines if "database is locked" in line]
    assert not [line for line in lines if "ERROR" in line or "Traceback" in line], lines


async def on_server_loop(live: LiveServer, read: Callable[[], T]) -> T:
    """``read()`` evaluated on the server's own event loop, between its steps."""
    loop = live.server.servers[0].get_loop()

    async def call() -> T:
        return read()

    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call(), loop))


def hub(live: LiveServer) -> EventHub:
    found: EventHub = live.app.state.hub
    return found


def _what(task: asyncio.Task[Any]) -> str:
    coro = task.get_coro()
    return getattr(coro, "__qualname__", None) or repr(coro)


# sse-starlette starts one shutdown watcher per event loop with the first stream; it lives as
# long as the loop, so it is part of an idle server, not a leak.
PER_LOOP_TASKS = frozenset({"_shutdown_watcher"})


async def server_tasks(live: LiveServer) -> list[str]:
    """What the server's loop is running: each task by its coroutine's name."""

    def running() -> list[str]:
        return sorted(name for t in asyncio.all_tasks() if (name := _what(t)) not in PER_LOOP_TASKS)

    return await on_server_loop(live, running)


async def settled(live: LiveServer, baseline: list[str], debate_ids: list[str]) -> None:
    """Until the server is back to its idle tasks and no debate has a subscriber (bounded)."""
    deadline = time.monotonic() + 5
    while True:
        tasks = await server_tasks(live)
        counts = await on_server_loop(
            live, lambda: {d: hub(live).subscriber_count(d) for d in debate_ids}
        )
        if tasks == baseline and not any(counts.values()):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"left over: tasks {tasks} (idle {baseline}), subscribers {counts}")
        await asyncio.sleep(0.05)


# -- the API and its streams -----------------------------------------------------------------


async def start_duel(client: httpx.AsyncClient, topic: str, rounds: int = 2) -> str:
    body = {
        "topic": topic,
        "rounds": rounds,
        "seats": {"claude": {"provider": "anthropic"}, "gemini": {"provider": "openai"}},
    }
    response = await client.post("/api/debates", json=body)
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


async def finished(client: httpx.AsyncClient, debate_id: str) -> dict[str, Any]:
    """The debate once it is no longer queued or running (polled, with a deadline)."""
    deadline = time.monotonic() + DEADLINE
    while True:
        response = await client.get(f"/api/debates/{debate_id}")
        data: dict[str, Any] = response.json()
        if data["status"] not in ("queued", "running"):
            return data
        assert time.monotonic() < deadline, f"{debate_id} still {data['status']}"
        await asyncio.sleep(0.05)


async def messages(response: httpx.Response) -> AsyncIterator[Message]:
    block: list[str] = []
    async for line in response.aiter_lines():
        block.append(line)
        if line == "":
            for message in parse_lines(block):
                yield message
            block = []


@dataclass
class Viewer:
    """A well-behaved viewer of the JSON stream: reconnects with its last id until ``end``."""

    ids: list[str] = field(default_factory=list)
    text: dict[str, str] = field(default_factory=dict)
    completed: list[str] = field(default_factory=list)
    connections: int = 0
    end: dict[str, Any] | None = None

    async def watch(self, client: httpx.AsyncClient, debate_id: str) -> Viewer:
        async with asyncio.timeout(DEADLINE):
            while self.end is None:
                assert self.connections <= MAX_RECONNECTS
                self.connections += 1
                headers = {"Last-Event-ID": self.ids[-1]} if self.ids else {}
                url = f"/api/debates/{debate_id}/events"
                async with client.stream("GET", url, headers=headers) as response:
                    assert response.status_code == 200
                    async for message in messages(response):
                        self._add(message)
        return self

    def _add(self, message: Message) -> None:
        if message.id:
            self.ids.append(message.id)
        data = message.json()
        if message.event == "delta":
            self.text[data["key"]] = self.text.get(data["key"], "") + data["text"]
        elif message.event == "retrying":
            self.text[data["key"]] = ""
        elif message.event == "turn_completed":
            self.completed.append(data["key"])
        elif message.event == "end":
            self.end = data


def moment(value: str) -> datetime:
    return datetime.fromisoformat(value)


def assert_saw_exactly(viewer: Viewer, debate: dict[str, Any]) -> None:
    saved = {turn["key"]: turn["text"] for turn in debate["turns"]}
    assert viewer.end == {"status": "completed", "reason": None, "files_error": None}
    assert viewer.text == saved
    assert sorted(viewer.completed) == sorted(saved)
    seqs = [parsed.seq for i in viewer.ids if (parsed := parse_event_id(i)) is not None]
    assert seqs == list(range(1, len(seqs) + 1)), "a gap or a duplicate in the event ids"


# -- twenty debates, sixty viewers -----------------------------------------------------------


async def test_twenty_debates_watched_three_times_each_complete_and_every_viewer_sees_saved_text(
    live: LiveServer, logs: Captured
) -> None:
    idle = await server_tasks(live)
    limits = httpx.Limits(max_connections=DEBATES * (VIEWERS_PER_DEBATE + 1))
    async with httpx.AsyncClient(base_url=live.url, timeout=DEADLINE, limits=limits) as client:
        started = time.monotonic()
        ids = await asyncio.gather(
            *(start_duel(client, f"Load test debate number {n}") for n in range(DEBATES))
        )
        viewers = {
            debate_id: [
                asyncio.ensure_future(Viewer().watch(client, debate_id))
                for _ in range(VIEWERS_PER_DEBATE)
            ]
            for debate_id in ids
        }
        debates = await asyncio.gather(*(finished(client, debate_id) for debate_id in ids))
        elapsed = time.monotonic() - started
        for debate in debates:
            assert debate["status"] == "completed", debate["status_reason"]
            assert len(debate["turns"]) == 6
            for viewer in await asyncio.gather(*viewers[debate["id"]]):
                assert_saw_exactly(viewer, debate)
    # All twenty really ran together, each a fraction of the whole run.
    spans = [(moment(debate["started_at"]), moment(debate["finished_at"])) for debate in debates]
    assert max(start for start, _ in spans) < min(end for _, end in spans)
    assert elapsed < DEADLINE
    await settled(live, idle, list(ids))
    jobs = live.app.state.jobs
    assert not await on_server_loop(live, lambda: [d for d in ids if jobs.is_running(d)])
    assert_clean(logs)


# -- viewers that stop reading, or vanish ----------------------------------------------------


# Big replies (~60 kB a turn), so a viewer that stops reading fills the socket buffers and
# the server's writes to it block.
BIG_REPLY = " ".join(f"{n}:" + "y" * 3000 for n in range(20))
STALLED_TOPIC = "Viewers may stall or vanish"


def request_bytes(path: str) -> bytes:
    return (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n").encode()


def connect(url: str, *, receive_buffer: int | None = None) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if receive_buffer is not None:
        # Before connecting, so the window the server sees is small from the start.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(10)
    sock.connect((host, int(port)))
    return sock


def read_until(sock: socket.socket, marker: bytes) -> bytes:
    received = b""
    while marker not in received:
        chunk = sock.recv(4096)
        assert chunk, f"closed before {marker!r}"
        received += chunk
    return received


def stalled_viewer(url: str, debate_id: str) -> socket.socket:
    """Reads the first bytes of the stream, then never reads again and never closes."""
    sock = connect(url, receive_buffer=4096)
    sock.sendall(request_bytes(f"/api/debates/{debate_id}/events"))
    read_until(sock, b"event: ")
    return sock


def vanishing_viewer(url: str, debate_id: str) -> None:
    """Watches the page stream until text arrives, then drops the connection (reset)."""
    sock = connect(url)
    sock.sendall(request_bytes(f"/debates/{debate_id}/stream"))
    read_until(sock, b"beforeend:#x-")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    sock.close()


def duration(debate: dict[str, Any]) -> float:
    return (moment(debate["finished_at"]) - moment(debate["started_at"])).total_seconds()


async def test_a_stalled_viewer_and_a_vanished_viewer_do_not_slow_the_debate_or_leak(
    live: LiveServer, logs: Captured, fake_llm: FakeLLMServer
) -> None:
    fake_llm.rule(contains=STALLED_TOPIC, reply=BIG_REPLY, token_delay=0.02)
    idle = await server_tasks(live)
    async with httpx.AsyncClient(base_url=live.url, timeout=DEADLINE) as client:
        watched, unwatched = await asyncio.gather(
            start_duel(client, f"{STALLED_TOPIC}: watched"),
            start_duel(client, f"{STALLED_TOPIC}: unwatched"),
        )
        viewer = asyncio.ensure_future(Viewer().watch(client, watched))
        stalled, _ = await asyncio.gather(
            asyncio.to_thread(stalled_viewer, live.url, watched),
            asyncio.to_thread(vanishing_viewer, live.url, watched),
        )
        try:
            a, b = await asyncio.gather(finished(client, watched), finished(client, unwatched))
            assert a["status"] == b["status"] == "completed"
            # The stalled viewer is still subscribed, its queue holding what it cannot take:
            # the server really is blocked writing to it, and the debate went on regardless.
            assert await on_server_loop(live, lambda: hub(live).subscriber_count(watched)) == 1
            assert duration(a) < 1.5 * duration(b) + 0.5, (duration(a), duration(b))
            assert_saw_exactly(await viewer, a)
        finally:
            stalled.close()
    await settled(live, idle, [watched, unwatched])
    assert_clean(logs)


def stalled_reader(url: str, path: str) -> socket.socket:
    """Asks for ``path`` and reads only the start of the answer, keeping the connection."""
    sock = connect(url, receive_buffer=4096)
    sock.sendall(request_bytes(path))
    read_until(sock, b"HTTP/1.1 200")
    return sock


async def test_clients_reading_a_big_debate_slowly_do_not_freeze_the_server(
    live: LiveServer, logs: Captured, fake_llm: FakeLLMServer
) -> None:
    # A request's database session lives until its response is sent; clients that stop
    # reading a big answer keep theirs. More of them than the connection pool holds must not
    # leave the event loop waiting for a connection (and every debate with it).
    fake_llm.rule(contains=STALLED_TOPIC, reply=BIG_REPLY, token_delay=0.0)
    idle = await server_tasks(live)
    async with httpx.AsyncClient(base_url=live.url, timeout=DEADLINE) as client:
        big = await start_duel(client, f"{STALLED_TOPIC}: read slowly", rounds=1)
        assert (await finished(client, big))["status"] == "completed"
        readers = await asyncio.gather(
            *(asyncio.to_thread(stalled_reader, live.url, f"/api/debates/{big}") for _ in range(20))
        )
        try:
            clock = time.monotonic()
            async with asyncio.timeout(10):
                other = await start_duel(client, "A debate next to slow readers", rounds=1)
                debate = await finished(client, other)
                viewer = await Viewer().watch(client, other)
            assert debate["status"] == "completed"
            assert_saw_exactly(viewer, debate)
            assert time.monotonic() - clock < 5
        finally:
            for reader in readers:
                reader.close()
    await settled(live, idle, [big, other])
    assert_clean(logs)


# -- a subscriber dropped for falling behind -------------------------------------------------


async def collect(stream: AsyncIterator[Event], into: list[Event], count: int | None) -> None:
    """Take ``count`` events (all, when None) from ``stream``."""
    async for event in stream:
        into.append(event)
        if count is not None and len(into) >= count:
            return


async def test_a_subscriber_dropped_for_falling_behind_gets_every_event_after_reconnecting() -> (
    None
):
    hub = EventHub(queue_size=4)
    hub.publish("d", "status", {"status": "running"})
    hub.publish("d", "delta", {"key": "k", "text": "0 "})
    got: list[Event] = []
    first = hub.subscribe("d")
    await collect(first, got, 2)  # subscribed; it has read both, then stops reading
    # More than its queue holds arrive meanwhile: it is dropped, never waited on.
    for n in range(1, 14):
        hub.publish("d", "delta", {"key": "k", "text": f"{n} "})
    assert hub.subscriber_count("d") == 0
    async with asyncio.timeout(5):
        await collect(first, got, None)  # the dropped subscription ends without the "end"
    assert [event.seq for event in got] == [1, 2]

    second = hub.subscribe("d", last_event_id=got[-1].id)
    async with asyncio.timeout(5):
        await collect(second, got, 15)  # the thirteen it missed, from the log
    hub.publish("d", "turn_completed", {"key": "k"})
    hub.publish("d", "end", {"status": "completed"})
    async with asyncio.timeout(5):
        await collect(second, got, None)  # then live ones, to the end

    assert [event.seq for event in got] == list(range(1, 18))
    assert "".join(e.data["text"] for e in got if e.type == "delta") == "".join(
        f"{n} " for n in range(14)
    )
    assert got[-1].type == "end" and hub.subscriber_count("d") == 0


async def test_a_subscriber_dropped_at_the_end_replays_up_to_the_end_on_reconnecting() -> None:
    hub = EventHub(queue_size=2)
    hub.publish("d", "status", {"status": "running"})
    got: list[Event] = []
    first = hub.subscribe("d")
    await collect(first, got, 1)
    for n in range(5):
        hub.publish("d", "delta", {"key": "k", "text": str(n)})
    hub.publish("d", "end", {"status": "completed"})
    async with asyncio.timeout(5):
        await collect(first, got, None)
    assert [event.seq for event in got] == [1] and hub.subscriber_count("d") == 0

    async with asyncio.timeout(5):
        await collect(hub.subscribe("d", last_event_id=got[-1].id), got, None)
    assert [event.type for event in got] == ["status"] + ["delta"] * 5 + ["end"]
    assert [event.seq for event in got] == list(range(1, 8))
