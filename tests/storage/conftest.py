"""Fixtures for the storage tests: a database with no schema yet, on each backend, and the
web app on the fake LLM server (as in tests/web) on whichever database the test runs on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy.engine import Engine

from app.config import Settings
from app.db import make_engine
from app.web.app import create_app
from tests.databases import BACKENDS, HOW_TO_START, PostgresUnavailable, create_database
from tests.web.conftest import http_providers


@pytest.fixture(params=BACKENDS)
def empty_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    """An engine on a database of its own with no tables at all: a new SQLite file, or a new
    PostgreSQL database dropped after the test."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'empty.db'}")
        yield engine
        engine.dispose()
        return
    try:
        database = create_database(migrated=False)
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL is not reachable ({error}): {HOW_TO_START}")
    engine = make_engine(database.url, pool_size=1)
    try:
        yield engine
    finally:
        engine.dispose()
        database.drop()


@pytest.fixture
def app(settings: Settings) -> FastAPI:
    return create_app(settings, providers=http_providers(settings))


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app) as client:
        yield client


@pytest.fixture
def empty_postgres_url() -> Iterator[str]:
    """The URL of a new PostgreSQL database with no tables, dropped after the test."""
    try:
        database = create_database(migrated=False)
    except PostgresUnavailable as error:
        pytest.skip(f"PostgreSQL is not reachable ({error}): {HOW_TO_START}")
    try:
        yield database.url
    finally:
        database.drop()
