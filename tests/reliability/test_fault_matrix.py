"""Every provider against every fault, through the runner and the real SDKs.

A retryable fault that clears is survived and the debate completes; one that does not clear
(or one that is not retryable) ends the debate ``failed`` with the provider's own message on
the turn, every completed turn kept, and a resume that finishes the debate once the provider
answers again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app import export, store
from app.config import Settings
from app.db import session_scope
from app.debates import DebateRequest, SeatChoice, create, prepare
from app.events import EventHub
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner
from tests.conftest import fake_settings
from tests.fakes.llm_server import FakeLLMServer, closed_port_url

PROVIDERS = ("anthropic", "gemini", "openai")
# The other seat sits on a different provider, so scripted faults reach only the seat tested.
PARTNER = {"anthropic": "openai", "gemini": "anthropic", "openai": "gemini"}
RETRYABLE_FAULTS: dict[str, dict[str, Any]] = {
    "http_429": {"fault": "http_429", "retry_after": 0.01, "error_message": "Slow down please"},
    "http_500": {"fault": "http_500", "error_message": "Internal failure here"},
    "http_529": {"fault": "http_529", "error_message": "Overloaded right now"},
    "mid_stream_error": {
        "fault": "mid_stream_error",
        "fault_after": 2,
        "error_message": "Stream broke midway",
    },
    "stall": {"fault": "stall", "fault_after": 2},
}
EXPECTED_KIND = {
    "http_429": "rate_limit",
    "http_500": "server",
    "http_529": "overloaded",
    "stall": "timeout",
}


def matrix_settings(server: FakeLLMServer, home: Path, **overrides: Any) -> Settings:
    return fake_settings(
        server,
        home,
        retry_max_attempts=2,
        # Long enough for a first call on a loaded machine (client set-up and connection count
        # as silence): at 0.4 s a first attempt stalled before its scripted fault was served.
        stall_timeout=1.5,
        retry_base_delay=0.01,
        **overrides,
    )


def new_duel(engine: Engine, settings: Settings, provider: str) -> str:
    request = DebateRequest(
        topic="Should we rewrite it in Rust?",
        rounds=1,
        seats={
            "claude": SeatChoice(provider=provider),
            "gemini": SeatChoice(provider=PARTNER[provider]),
        },
    )
    prepared = prepare(request, statuses=provider_statuses(settings))
    return create(engine, prepared=prepared, settings=settings).id


async def run(engine: Engine, settings: Settings, debate_id: str) -> Any:
    runner = Runner(
        engine=engine, hub=EventHub(), providers=build_providers(settings), settings=settings
    )
    return await runner.run(debate_id)


def saved_turns(engine: Engine, debate_id: str) -> list[Any]:
    with session_scope(engine) as session:
        return store.turns_of(session, debate_id=debate_id)


@pytest.mark.parametrize("fault", sorted(RETRYABLE_FAULTS))
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_retryable_fault_that_clears_is_survived(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path, provider: str, fault: str
) -> None:
    settings = matrix_settings(fake_llm, tmp_path / "home")
    debate_id = new_duel(engine, settings, provider)
    fake_llm.script(
        provider=provider, reply="Partial words then trouble", **RETRYABLE_FAULTS[fault]
    )

    result = await run(engine, settings, debate_id)

    assert result.status == "completed"
    turns = saved_turns(engine, debate_id)
    opening = next(t for t in turns if t.key == "r1.opening.claude")
    assert opening.attempts == 2 and opening.status == "completed"
    assert "trouble" not in opening.text  # the broken attempt's text was discarded


@pytest.mark.parametrize("fault", sorted(RETRYABLE_FAULTS))
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_exhausted_retries_fail_the_debate_and_resume_finishes_it(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path, provider: str, fault: str
) -> None:
    settings = matrix_settings(fake_llm, tmp_path / "home")
    debate_id = new_duel(engine, settings, provider)
    fake_llm.script(provider=provider, times=2, **RETRYABLE_FAULTS[fault])

    failed = await run(engine, settings, debate_id)

    assert failed.status == "failed"
    turns = saved_turns(engine, debate_id)
    kept = [t for t in turns if t.status == "completed"]
    broken = next(t for t in turns if t.status == "failed")
    assert [t.key for t in kept] == ["r1.opening.gemini"]
    assert broken.key == "r1.opening.claude" and broken.attempts == 2
    if fault in EXPECTED_KIND:
        assert broken.error_kind == EXPECTED_KIND[fault]
    message = RETRYABLE_FAULTS[fault].get("error_message")
    if message:
        assert message in (broken.error_message or "")
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None and debate.status == "failed"
        transcript = export.transcript_markdown(debate, turns)
    assert kept[0].text in transcript  # what was done is exportable

    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status="queued")
    resumed = await run(engine, settings, debate_id)

    assert resumed.status == "completed"
    after = saved_turns(engine, debate_id)
    assert [t.status for t in after] == ["completed"] * len(after)
    assert next(t for t in after if t.key == "r1.opening.gemini").text == kept[0].text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_auth_failure_is_not_retried_and_shows_the_providers_message(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path, provider: str
) -> None:
    settings = matrix_settings(fake_llm, tmp_path / "home")
    debate_id = new_duel(engine, settings, provider)
    fake_llm.script(provider=provider, fault="http_401", error_message="Key revoked by admin")

    result = await run(engine, settings, debate_id)

    assert result.status == "failed"
    broken = next(t for t in saved_turns(engine, debate_id) if t.status == "failed")
    assert (broken.error_kind, broken.attempts) == ("auth", 1)
    assert "Key revoked by admin" in (broken.error_message or "")
    assert len(fake_llm.requests_for(provider)) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_connection_refused_fails_then_resumes_when_the_server_is_back(
    engine: Engine, fake_llm: FakeLLMServer, tmp_path: Path, provider: str
) -> None:
    down = closed_port_url()
    base_url_setting = {
        "anthropic": ("ANTHROPIC_BASE_URL", down),
        "gemini": ("GOOGLE_GEMINI_BASE_URL", down),
        "openai": ("OPENAI_BASE_URL", f"{down}/v1"),
    }[provider]
    settings_down = matrix_settings(
        fake_llm, tmp_path / "home", **{base_url_setting[0]: base_url_setting[1]}
    )
    debate_id = new_duel(engine, settings_down, provider)

    result = await run(engine, settings_down, debate_id)

    assert result.status == "failed"
    broken = next(t for t in saved_turns(engine, debate_id) if t.status == "failed")
    assert broken.error_kind == "connection" and broken.attempts == 2

    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status="queued")
    resumed = await run(engine, matrix_settings(fake_llm, tmp_path / "home"), debate_id)
    assert resumed.status == "completed"
