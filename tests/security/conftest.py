"""Fixtures for the security tests: the web app under each access mode (open, token, HTTP
Basic), with the real SDK adapters pointed at the fake LLM server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from app.config import Settings
from app.web.app import create_app
from tests.web.conftest import http_providers

TOKEN = "tok-3f9a1c7e5b2d4068a9e1"
USER = "ada"
PASSWORD = "correct horse battery staple"
SITE = "http://testserver"  # the test client's own origin
EVIL = "https://evil.example"


def with_access(settings: Settings, **changes: Any) -> Settings:
    """``settings`` with access settings changed (secrets given as plain strings)."""
    update = {
        name: SecretStr(value) if name in ("auth_token", "auth_password") else value
        for name, value in changes.items()
    }
    return settings.model_copy(update=update)


@contextmanager
def running(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings, providers=http_providers(settings))
    with TestClient(app) as client:
        yield client


@pytest.fixture
def open_client(settings: Settings) -> Iterator[TestClient]:
    """No credential configured: the loopback default."""
    with running(settings) as client:
        yield client


@pytest.fixture
def token_client(settings: Settings) -> Iterator[TestClient]:
    with running(with_access(settings, auth_token=TOKEN)) as client:
        yield client


@pytest.fixture
def basic_client(settings: Settings) -> Iterator[TestClient]:
    with running(with_access(settings, auth_user=USER, auth_password=PASSWORD)) as client:
        yield client


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
