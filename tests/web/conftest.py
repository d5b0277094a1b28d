"""Fixtures for the web app: the app with the real HTTP adapters pointed at the fake LLM
server (test client and a real uvicorn server), and helpers to run debates to the end."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.models import utcnow
from app.providers.base import Provider
from app.providers.registry import build_provider
from app.web.app import create_app

HTTP_PROVIDERS = ("anthropic", "gemini", "openai")
DEBATE_TIMEOUT = 20.0


def http_providers(settings: Settings) -> dict[str, Provider]:
    """The three SDK adapters, all talking to the fake server; nothing else is seated."""
    return {name: build_provider(name, settings) for name in HTTP_PROVIDERS}


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings, providers=http_providers(settings))


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


def wait_for_debate(client: TestClient, debate_id: str, timeout: float = DEBATE_TIMEOUT) -> str:
    """Until the debate's job ends; its final status. Waits on the job, never sleeps."""
    jobs = client.app.state.jobs  # type: ignore[attr-defined]

    async def wait() -> str | None:
        async with asyncio.timeout(timeout):
            result: str | None = await jobs.wait(debate_id)
            return result

    status = client.portal.call(wait)  # type: ignore[union-attr]
    assert status is not None
    return status


def start_duel(client: TestClient, **fields: Any) -> str:
    body = {"topic": "Tabs or spaces for Python code", "rounds": 1, **fields}
    response = client.post("/api/debates", json=body)
    assert response.status_code == 201, response.text
    debate_id: str = response.json()["id"]
    return debate_id


@dataclass
class LiveServer:
    """The app served by uvicorn on 127.0.0.1 in a thread: what a browser talks to."""

    app: FastAPI
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def url(self) -> str:
        sockets = self.server.servers[0].sockets
        host, port = sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"


def serve(app: FastAPI) -> LiveServer:
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=2
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True, name="argue-live")
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the app did not start")
        time.sleep(0.02)
    return LiveServer(app, server, thread)


def stop(live: LiveServer) -> None:
    live.server.should_exit = True
    live.thread.join(timeout=15)


@pytest.fixture
def live_server(app: FastAPI) -> Iterator[LiveServer]:
    live = serve(app)
    try:
        yield live
    finally:
        stop(live)


def turn_started_data(key: str, role: str, round: int, phase: str) -> dict[str, Any]:
    """A ``turn_started`` event's data for turn ``key`` (a Claude seat's, model ``m``)."""
    return {
        "key": key,
        "role": role,
        "label": role.title(),
        "provider": "anthropic",
        "model": "m",
        "phase": phase,
        "round": round,
    }


def save_completed_turn(
    engine: Engine, debate_id: str, key: str, role: str, round: int, phase: str
) -> None:
    """Save turn ``key`` of the debate as completed (a Claude seat's, model ``m``)."""
    now = utcnow()
    with session_scope(engine) as session:
        store.record_turn(
            session,
            debate_id=debate_id,
            key=key,
            role=role,
            label=role.title(),
            provider="anthropic",
            model="m",
            phase=phase,
            round=round,
            status="completed",
            text=f"The text of {key}.",
            verdict=None,
            error_kind=None,
            error_message=None,
            input_tokens=10,
            output_tokens=20,
            usage_estimated=False,
            attempts=1,
            started_at=now - timedelta(seconds=3),
            finished_at=now,
        )
