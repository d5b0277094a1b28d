"""``/readyz``: 200 while the database (and Redis, when configured) answer, 503 naming the
one that does not, with its own message and no secret; ``/healthz`` stays a plain liveness
answer whatever the services do."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine, make_url

from app.config import Settings
from app.readiness import check_readiness
from app.web.app import create_app
from tests.conftest import fake_settings
from tests.databases import ThrowawayDatabase
from tests.fakes.llm_server import FakeLLMServer
from tests.storage.forwarder import Forwarder
from tests.web.conftest import http_providers

PASSWORD = "pg-pass-5ecret"
REDIS_PASSWORD = "redis-pass-5ecret"
REDIS_PORT = 6379


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def redis_answers() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", REDIS_PORT), timeout=1) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.mark.both_databases
def test_readyz_is_200_when_the_database_answers_and_redis_is_not_configured(
    client: TestClient, database_backend: str
) -> None:
    response = client.get("/readyz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ready",
        "database": {"status": "ok", "error": None},
        "redis": {"status": "not configured", "error": None},
    }
    assert client.get("/healthz").json() == {"status": "ok"}


def test_a_probe_asking_with_head_gets_the_status_without_a_body(client: TestClient) -> None:
    for path in ("/healthz", "/readyz"):
        response = client.head(path)
        assert (response.status_code, response.content) == (200, b""), path


@pytest.fixture
def database_behind_forwarder(
    postgres_database: ThrowawayDatabase,
) -> Iterator[tuple[str, Forwarder]]:
    """The session's PostgreSQL database reached through a forwarder the test can close, by
    a URL with a password (trust authentication ignores it; only its masking matters)."""
    postgres_database.empty()
    url = make_url(postgres_database.url)
    with Forwarder(url.host or "127.0.0.1", url.port or 5432) as forwarder:
        through = url.set(host="127.0.0.1", port=forwarder.port, password=PASSWORD)
        yield through.render_as_string(hide_password=False), forwarder


def test_readyz_is_503_naming_the_database_once_postgresql_stops_answering(
    database_behind_forwarder: tuple[str, Forwarder], fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    url, forwarder = database_behind_forwarder
    settings = fake_settings(fake_llm, tmp_path / "home", database_url=url)
    with TestClient(create_app(settings, providers=http_providers(settings))) as client:
        assert client.get("/readyz").status_code == 200

        forwarder.close()
        response = client.get("/readyz")

        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "not ready"
        assert body["database"]["status"] == "error"
        assert "connect" in body["database"]["error"].lower()
        assert body["redis"] == {"status": "not configured", "error": None}
        assert PASSWORD not in response.text
        assert client.head("/readyz").status_code == 503
        assert client.get("/healthz").status_code == 200
        assert client.head("/healthz").status_code == 200


def with_redis(fake_llm: FakeLLMServer, home: Path, redis_url: str) -> Settings:
    return fake_settings(fake_llm, home, redis_url=redis_url)


def test_readiness_fails_naming_redis_when_it_is_configured_and_does_not_answer(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    port = closed_port()
    redis_url = f"redis://:{REDIS_PASSWORD}@127.0.0.1:{port}/0"
    configured = with_redis(fake_llm, tmp_path / "home", redis_url)

    readiness = asyncio.run(check_readiness(configured, engine))

    assert not readiness.ready
    assert readiness.database.status == "ok"
    assert readiness.redis.status == "error"
    assert str(port) in (readiness.redis.error or "")
    assert REDIS_PASSWORD not in (readiness.redis.error or "")


def test_readiness_reports_redis_ok_when_it_answers_a_ping(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    if not redis_answers():
        pytest.skip(
            f"Redis is not reachable on 127.0.0.1:{REDIS_PORT}: start it "
            "(Debian: `apt-get install redis-server && redis-server --daemonize yes`)"
        )
    configured = with_redis(fake_llm, tmp_path / "home", f"redis://127.0.0.1:{REDIS_PORT}/0")

    readiness = asyncio.run(check_readiness(configured, engine))

    assert readiness.ready
    assert (readiness.database.status, readiness.redis.status) == ("ok", "ok")
