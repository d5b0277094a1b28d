"""The web app with ``provider_worker`` on: a debate's provider calls run in the worker
process, and the worker goes away with the app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.providers.worker import RemoteProvider, provider_worker_wanted
from app.web.app import create_app
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer
from tests.web.conftest import start_duel, wait_for_debate


def test_a_duel_runs_with_its_provider_calls_in_the_worker_process(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    settings = fake_settings(fake_llm, tmp_path / "home", provider_worker=True)
    with TestClient(create_app(settings)) as client:
        providers = client.app.state.jobs.providers  # type: ignore[attr-defined]
        claude = providers["anthropic"]
        assert isinstance(claude, RemoteProvider)

        debate_id = start_duel(client)
        assert wait_for_debate(client, debate_id) == "completed"

        worker_pid = claude._worker.pid
        assert worker_pid is not None and worker_pid != os.getpid()
        debate = client.get(f"/api/debates/{debate_id}").json()
        turns = debate["turns"]
        assert turns and all(turn["status"] == "completed" for turn in turns)
        by_provider = {turn["provider"] for turn in turns}
        assert {"anthropic", "gemini"} <= by_provider
        for turn in turns:
            assert turn["text"].startswith(f"Fake {turn['provider']} reply"), turn["text"]
        assert len(fake_llm.requests) >= len(turns)

    try:
        os.kill(worker_pid, 0)
    except ProcessLookupError:
        pass
    else:
        raise AssertionError("the worker process outlived the app")


def test_the_server_starts_debates_only_once_the_worker_has_imported_the_sdks(
    fake_llm: FakeLLMServer, tmp_path: Path
) -> None:
    # The import takes over a second even on a quiet machine; a first call sent before it
    # ended waited that long for its first byte, and a short stall timeout retried it.
    settings = fake_settings(fake_llm, tmp_path / "home", provider_worker=True, stall_timeout=0.5)
    with TestClient(create_app(settings)) as client:
        claude = client.app.state.jobs.providers["anthropic"]  # type: ignore[attr-defined]
        assert claude._worker.ready
        debate_id = start_duel(client)
        assert wait_for_debate(client, debate_id) == "completed"
        turns = client.get(f"/api/debates/{debate_id}").json()["turns"]
    assert [turn["attempts"] for turn in turns] == [1] * len(turns)


def test_by_default_a_web_process_with_two_cores_runs_its_provider_calls_in_a_worker(
    fake_llm: FakeLLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    settings = fake_settings(fake_llm, tmp_path / "home", provider_worker=None)
    assert settings.provider_worker is None
    with TestClient(create_app(settings)) as client:
        providers = client.app.state.jobs.providers  # type: ignore[attr-defined]
        assert isinstance(providers["anthropic"], RemoteProvider)
        assert isinstance(providers["openai"], RemoteProvider)
        debate_id = start_duel(client)
        assert wait_for_debate(client, debate_id) == "completed"


@pytest.mark.parametrize(
    ("cpus", "runs_debates", "setting", "wanted"),
    [
        ({0, 1}, True, None, True),  # `argue serve`, or an `argue worker`
        ({0}, True, None, False),  # no second core to give the calls to
        ({0, 1}, False, None, False),  # a web node that only enqueues
        ({0, 1}, True, False, False),
        ({0}, True, True, True),
    ],
)
def test_the_provider_worker_is_on_by_default_only_where_it_helps(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cpus: set[int],
    runs_debates: bool,
    setting: bool | None,
    wanted: bool,
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: cpus)
    settings = Settings(home=tmp_path, provider_worker=setting)
    assert provider_worker_wanted(settings, runs_debates=runs_debates) is wanted
