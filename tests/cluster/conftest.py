"""Fixtures for debates run by workers (``ARGUE_RUN_DEBATES=workers``): a throwaway PostgreSQL
database, web apps in workers mode (only enqueue), and real ``argue worker`` processes that a
test can kill (SIGKILL), freeze (SIGSTOP) and thaw (SIGCONT).

Every test here needs PostgreSQL and skips, saying how to start it, when none answers.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.engine import Engine

from app.config import PROJECT_ROOT, Settings
from app.db import make_engine
from app.debate_queue import ensure_queue_tables
from app.web.app import create_app
from bench.processes import child_running
from tests.bus.conftest import (
    REDIS_URL,
    redis_prefix,  # noqa: F401  (a fixture: Redis keys of a test)
)
from tests.conftest import fake_settings
from tests.databases import HOW_TO_START, PostgresUnavailable, ThrowawayDatabase, create_database
from tests.fakes.llm_server import FakeLLMServer
from tests.reliability.server_process import fake_provider_env
from tests.web.conftest import http_providers

# Short enough for tests, long enough that a busy two-core machine does not lose a lease.
TAKEOVER_SECONDS = 6.0
START_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def cluster_database() -> Iterator[ThrowawayDatabase]:
    try:
        database = create_database()
    except PostgresUnavailable as error:
        pytest.skip(f"workers need PostgreSQL, which is not reachable ({error}): {HOW_TO_START}")
    try:
        # Made before the first emptying, so that every test starts with an empty queue too.
        engine = make_engine(database.url, pool_size=1)
        try:
            ensure_queue_tables(engine)
        finally:
            engine.dispose()
        yield database
    finally:
        database.drop()


@pytest.fixture
def database_url(cluster_database: ThrowawayDatabase) -> str:
    """The throwaway database, emptied for this test (debates, turns and the queue's jobs)."""
    cluster_database.empty()
    return cluster_database.url


@pytest.fixture
def pg_engine(database_url: str) -> Iterator[Engine]:
    engine = make_engine(database_url, pool_size=2)
    yield engine
    engine.dispose()


def workers_settings(server: FakeLLMServer, home: Path, database_url: str) -> Settings:
    return fake_settings(
        server,
        home,
        database_url=database_url,
        run_debates="workers",
        worker_takeover_seconds=TAKEOVER_SECONDS,
    )


@pytest.fixture
def web_node(
    fake_llm: FakeLLMServer, tmp_path: Path, database_url: str
) -> Iterator[Callable[[], TestClient]]:
    """Makes web nodes in workers mode on the shared database (each its own app)."""
    clients: list[TestClient] = []

    def make() -> TestClient:
        settings = workers_settings(fake_llm, tmp_path / "home", database_url)
        client = TestClient(create_app(settings, providers=http_providers(settings)))
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


@pytest.fixture
def node_env(
    fake_llm: FakeLLMServer,
    tmp_path: Path,
    database_url: str,
    redis_prefix: str,  # noqa: F811  (the fixture imported above)
) -> dict[str, str]:
    """The environment of an ``argue serve`` node of a cluster: workers mode on the shared
    database, live events through Redis under the test's own key prefix."""
    env = fake_provider_env(fake_llm, tmp_path / "home")
    env.update(
        {
            "ARGUE_DATABASE_URL": database_url,
            "ARGUE_REDIS_URL": REDIS_URL,
            "ARGUE_REDIS_KEY_PREFIX": redis_prefix,
            "ARGUE_RUN_DEBATES": "workers",
            "ARGUE_WORKER_TAKEOVER_SECONDS": str(TAKEOVER_SECONDS),
        }
    )
    return env


@dataclass
class WorkerProcess:
    """``python -m app.cli.main worker`` as a child process, its log in a file."""

    name: str
    env: dict[str, str]
    log_path: Path
    concurrency: int = 1
    process: subprocess.Popen[bytes] | None = None
    extra_args: list[str] = field(default_factory=list)

    def start(self, timeout: float = START_TIMEOUT) -> WorkerProcess:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "app.cli.main",
                    "worker",
                    "--name",
                    self.name,
                    "--concurrency",
                    str(self.concurrency),
                    *self.extra_args,
                ],
                cwd=PROJECT_ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.wait_for_log(f"worker {self.name}: up to", timeout)
        return self

    def wait_for_log(self, fragment: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if fragment in self.log_text():
                return
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"worker {self.name} exited:\n{self.log_text()}")
            time.sleep(0.05)
        raise AssertionError(f"worker {self.name} never logged {fragment!r}:\n{self.log_text()}")

    def signal(self, number: signal.Signals) -> None:
        assert self.process is not None
        os.kill(self.process.pid, number)

    def kill(self) -> None:
        self.signal(signal.SIGKILL)
        assert self.process is not None
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.signal(signal.SIGCONT)  # a frozen worker cannot act on SIGTERM
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def provider_calls_pid(self) -> int | None:
        """The worker's child process that makes its provider calls, if it has one."""
        assert self.process is not None
        return child_running(self.process.pid, "app.providers.worker")


@pytest.fixture
def workers(
    fake_llm: FakeLLMServer, tmp_path: Path, database_url: str
) -> Iterator[Callable[..., WorkerProcess]]:
    """Starts ``argue worker`` processes on the shared database; each is stopped at the end."""
    started: list[WorkerProcess] = []

    def start(
        name: str,
        *,
        concurrency: int = 1,
        server: FakeLLMServer | None = None,
        env: dict[str, str] | None = None,
    ) -> WorkerProcess:
        environment = fake_provider_env(server or fake_llm, tmp_path / "home")
        environment.update(
            {
                "ARGUE_DATABASE_URL": database_url,
                "ARGUE_RUN_DEBATES": "workers",
                "ARGUE_WORKER_TAKEOVER_SECONDS": str(TAKEOVER_SECONDS),
                **(env or {}),
            }
        )
        worker = WorkerProcess(
            name=name, env=environment, log_path=tmp_path / f"{name}.log", concurrency=concurrency
        )
        started.append(worker)
        return worker.start()

    yield start
    for worker in started:
        worker.stop()


def wait_until(condition: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll ``condition`` until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := condition():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def debate_row(engine: Engine, debate_id: str) -> dict[str, Any]:
    with engine.connect() as connection:
        row = connection.execute(
            text(
                "SELECT status, status_reason, lease_token, lease_holder, started_at, "
                "finished_at FROM debate WHERE id = :id"
            ),
            {"id": debate_id},
        ).one()
    return dict(row._mapping)


def turn_rows(engine: Engine, debate_id: str) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT id, key, seq, status, text, attempts, finished_at FROM turn "
                "WHERE debate_id = :id ORDER BY seq"
            ),
            {"id": debate_id},
        ).all()
    return [dict(row._mapping) for row in rows]


def queue_jobs(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as connection:
        rows = connection.execute(
            text("SELECT id, status, lock, args FROM procrastinate_jobs ORDER BY id")
        ).all()
    return [dict(row._mapping) for row in rows]
