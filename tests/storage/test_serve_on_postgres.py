"""``argue serve`` on PostgreSQL: ARGUE_DATABASE_URL in the form PostgreSQL's own tools write
(``postgresql://``) is served through psycopg 3, and its password shows nowhere: not in the
start-up line, the server's log or the readiness answer."""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
from sqlalchemy.engine import make_url

from tests.databases import ThrowawayDatabase

PASSWORD = "serve-pass-5ecret"
START_TIMEOUT = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def read_until(process: subprocess.Popen[str], marker: str, timeout: float) -> str:
    """What the process printed (stdout and stderr merged) up to the line holding ``marker``."""
    assert process.stdout is not None
    seen = ""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker not in seen:
            if time.monotonic() > deadline or process.poll() is not None:
                raise AssertionError(f"no {marker!r} from argue serve; it printed:\n{seen}")
            if selector.select(timeout=0.5):
                seen += process.stdout.readline()
    return seen


def test_serve_runs_on_postgresql_and_never_prints_the_password(
    postgres_database: ThrowawayDatabase, tmp_path: Path
) -> None:
    postgres_database.empty()
    url = make_url(postgres_database.url).set(drivername="postgresql", password=PASSWORD)
    plain_url = url.render_as_string(hide_password=False)
    assert plain_url.startswith("postgresql://") and PASSWORD in plain_url
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("ARGUE_") and not key.endswith("_API_KEY")
    }
    env |= {"ARGUE_HOME": str(tmp_path / "home"), "ARGUE_DATABASE_URL": plain_url}
    command = [sys.executable, "-m", "app.cli.main", "serve", "--port", str(port)]
    process = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        printed = read_until(process, "Application startup complete", START_TIMEOUT)
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
    finally:
        process.terminate()
        rest, _ = process.communicate(timeout=30)
    printed += rest

    serving = next(line for line in printed.splitlines() if "Argue is serving" in line)
    assert f"database: postgresql+psycopg://{url.username}:***@" in serving
    assert ready.status_code == 200
    assert ready.json()["database"] == {"status": "ok", "error": None}
    assert PASSWORD not in printed
    assert PASSWORD not in ready.text
