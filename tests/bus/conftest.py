"""Fixtures for the event buses: a Redis server to share (the machine's, on 127.0.0.1:6379,
with keys under a prefix of their own that are deleted afterwards), a throwaway Redis server
a test may kill and restart, and a factory that makes buses of either kind."""

from __future__ import annotations

import asyncio
import inspect
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from app.bus import EventBus
from app.events import EventHub
from app.redis_bus import RedisBus

REDIS_URL = "redis://127.0.0.1:6379/0"
HOW_TO_START_REDIS = (
    "needs a Redis server (6.2 or later) on 127.0.0.1:6379: install it (apt-get install "
    "redis-server) and start it "
    "(redis-server --port 6379 --save '' --appendonly no --daemonize yes)"
)

BusFactory = Callable[..., EventBus]


async def until(condition: Callable[[], bool | Awaitable[bool]], *, wait: float = 10.0) -> None:
    """Until ``condition()`` holds (polled: the buses signal none of the states tests wait
    for); an assertion error after ``wait`` seconds."""
    for _ in range(int(wait / 0.01)):
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the condition never held")


def redis_reachable(url: str) -> bool:
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5, socket_timeout=0.5)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


@pytest.fixture
def redis_prefix() -> Iterator[str]:
    """A key prefix no other test run uses; every key under it is deleted afterwards."""
    if not redis_reachable(REDIS_URL):
        pytest.skip(HOW_TO_START_REDIS)
    prefix = f"argue-test-{secrets.token_hex(6)}:"
    yield prefix
    client = redis.Redis.from_url(REDIS_URL)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


def redis_keys(prefix: str) -> list[str]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return sorted(client.scan_iter(match=f"{prefix}*", count=1000))
    finally:
        client.close()


@pytest.fixture(params=["memory", "redis"])
async def make_bus(request: pytest.FixtureRequest) -> AsyncIterator[BusFactory]:
    """Makes buses of one kind (closed afterwards). Options the kind does not have are
    ignored: ``queue_size`` and ``keep_ended_seconds`` mean the same to both."""
    made: list[EventBus] = []
    prefix = request.getfixturevalue("redis_prefix") if request.param == "redis" else ""

    def make(*, queue_size: int = 2000, keep_ended_seconds: int = 300, **options: Any) -> EventBus:
        bus: EventBus
        if request.param == "memory":
            bus = EventHub(queue_size=queue_size, keep_ended_seconds=keep_ended_seconds)
        else:
            bus = RedisBus(
                REDIS_URL,
                key_prefix=prefix,
                queue_size=queue_size,
                keep_ended_seconds=keep_ended_seconds,
                **options,
            )
        made.append(bus)
        return bus

    yield make
    for bus in made:
        await bus.aclose()


@pytest.fixture
async def make_redis_bus(redis_prefix: str) -> AsyncIterator[Callable[..., RedisBus]]:
    """Redis buses sharing one prefix: each stands for a separate process."""
    made: list[RedisBus] = []

    def make(**options: Any) -> RedisBus:
        bus = RedisBus(REDIS_URL, key_prefix=redis_prefix, **options)
        made.append(bus)
        return bus

    yield make
    for bus in made:
        await bus.aclose()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class ThrowawayRedis:
    """A Redis server of this test's own, with no persistence: a restart loses its data."""

    port: int
    workdir: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server")
        assert binary is not None
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.workdir),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while not redis_reachable(self.url):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the throwaway redis-server did not start")
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@pytest.fixture
def throwaway_redis(tmp_path: Path) -> Iterator[ThrowawayRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("needs the redis-server binary on PATH (apt-get install redis-server)")
    server = ThrowawayRedis(port=free_port(), workdir=tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()
