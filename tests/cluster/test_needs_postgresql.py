"""Workers mode refuses, saying what to set, to start on a database that cannot hold the
queue (SQLite, the default): ``argue worker``, ``argue serve`` and ``argue run`` exit with a
one-line reason, and a web app in workers mode does not start."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli.main import main
from app.debate_queue import QueueUnavailable
from app.web.app import create_app
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import http_providers


def test_argue_worker_on_sqlite_says_it_needs_postgresql(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["worker", "--concurrency", "2"])

    assert code == 2
    error = capsys.readouterr().err
    assert "need PostgreSQL" in error
    assert "ARGUE_DATABASE_URL=postgresql://" in error


def test_argue_serve_in_workers_mode_on_sqlite_says_it_needs_postgresql_without_a_traceback(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ARGUE_RUN_DEBATES", "workers")

    code = main(["serve", "--port", "0"])

    assert code == 2
    error = capsys.readouterr().err
    assert error.startswith("argue serve: ARGUE_RUN_DEBATES=workers")
    assert "ARGUE_DATABASE_URL=postgresql://" in error
    assert "Traceback" not in error


def test_argue_run_in_workers_mode_on_sqlite_says_it_needs_postgresql_and_saves_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ARGUE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ARGUE_RUN_DEBATES", "workers")

    code = main(["run", "Tabs or spaces?", "--rounds", "1", "--seat", "claude=local"])

    assert code == 2
    printed = capsys.readouterr()
    assert printed.err.startswith("argue: ARGUE_RUN_DEBATES=workers")
    assert "ARGUE_DATABASE_URL=postgresql://" in printed.err
    assert "Traceback" not in printed.err
    assert not (tmp_path / "home" / "argue.db").exists()


def test_a_web_node_in_workers_mode_on_sqlite_does_not_start(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "home", run_debates="workers")
    app = create_app(settings, providers=http_providers(settings))

    with pytest.raises(QueueUnavailable, match="need PostgreSQL"), TestClient(app):
        pass
