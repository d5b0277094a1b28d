"""The runner over the wire-level fake server: batches run concurrently, every finished turn
is saved before it is announced, failures keep what was done, resume re-runs only what was
not, cancel stops between steps."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import session_scope
from app.debates import DebateRequest, SeatChoice, create, prepare
from app.events import Event, EventHub
from app.jobs import JobManager
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner
from tests.fakes.llm_server import FakeLLMServer

PANEL_ROLES = (
    "pro_claude",
    "pro_gemini",
    "pro_codex",
    "con_claude",
    "con_gemini",
    "con_codex",
    "pro_summarizer",
    "con_summarizer",
    "judge",
)


def start(engine: Engine, settings: Settings, **request: Any) -> str:
    prepared = prepare(DebateRequest(**request), statuses=provider_statuses(settings))
    return create(engine, prepared=prepared, settings=settings).id


def runner(engine: Engine, hub: EventHub, settings: Settings) -> Runner:
    return Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)


def turns(engine: Engine, debate_id: str) -> list[Any]:
    with session_scope(engine) as session:
        return store.turns_of(session, debate_id=debate_id)


def status(engine: Engine, debate_id: str) -> str | None:
    with session_scope(engine) as session:
        return store.debate_status(session, debate_id=debate_id)


def all_on(provider: str, roles: tuple[str, ...]) -> dict[str, SeatChoice]:
    return {role: SeatChoice(provider=provider) for role in roles}


def openai_duel(engine: Engine, settings: Settings, *, topic: str, rounds: int) -> str:
    """A duel whose two seats both call the fake's OpenAI API."""
    return start(
        engine, settings, topic=topic, rounds=rounds, seats=all_on("openai", ("claude", "gemini"))
    )


def duel_failing_at_its_first_rebuttal(
    engine: Engine, settings: Settings, fake_llm: FakeLLMServer
) -> str:
    """A two-round duel on one provider whose openings succeed and whose first rebuttal
    meets a 401."""
    debate_id = openai_duel(engine, settings, topic="Monorepo or polyrepo?", rounds=2)
    fake_llm.script(provider="openai", reply="Opening A.")
    fake_llm.script(provider="openai", reply="Opening B.")
    fake_llm.script(provider="openai", fault="http_401", error_message="Incorrect API key")
    return debate_id


async def test_panel_claims_run_concurrently_and_cost_the_slowest_call(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    fake_llm.set_default_token_delay(0.05)  # ~8 tokens a reply: ~0.4 s a call
    debate_id = start(engine, settings, topic="Are tests necessary?", format="panel")

    result = await runner(engine, hub, settings).run(debate_id)

    assert result.status == "completed"
    claims = [r for r in fake_llm.requests if r.ended is not None][:6]
    first_end = min(r.ended for r in claims if r.ended is not None)
    # All six claim calls were in flight together: each started before any of them ended.
    assert all(r.started < first_end for r in claims)
    assert fake_llm.max_concurrency() >= 6
    slowest = max((r.ended or 0) - r.started for r in claims)
    batch_wall = max(r.ended or 0 for r in claims) - min(r.started for r in claims)
    assert batch_wall < 2 * slowest
    saved = turns(engine, debate_id)
    phases = [turn.phase for turn in saved]
    assert phases.count("claim") == 6 and phases.count("summary") == 2
    # Six turns finishing together still get distinct places in the order.
    assert sorted(turn.seq for turn in saved) == list(range(1, len(saved) + 1))
    assert phases[-1] == "judgement"


@pytest.mark.both_databases
async def test_every_turn_is_saved_before_it_is_announced(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = start(engine, settings, topic="Tabs or spaces?", rounds=2)
    seen_in_database: list[bool] = []

    async def watch() -> list[Event]:
        events = []
        async for event in hub.subscribe(debate_id):
            events.append(event)
            if event.type == "turn_completed":
                keys = {turn.key for turn in turns(engine, debate_id)}
                seen_in_database.append(event.data["key"] in keys)
        return events

    watcher = asyncio.create_task(watch())
    await asyncio.sleep(0)
    result = await runner(engine, hub, settings).run(debate_id)
    events = await asyncio.wait_for(watcher, 5)

    assert result.status == "completed"
    assert seen_in_database and all(seen_in_database)
    assert events[-1].type == "end" and events[-1].data["status"] == "completed"
    # The run's status says when the debate started, as saved: a page shows it unread.
    (running,) = [e.data for e in events if e.type == "status" and e.data["status"] == "running"]
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None and debate.started_at is not None
        assert running["started_at"] == debate.started_at.isoformat()
    saved = {turn.key: turn.text for turn in turns(engine, debate_id)}
    streamed: dict[str, str] = {}
    for event in events:
        if event.type == "delta":
            streamed[event.data["key"]] = streamed.get(event.data["key"], "") + event.data["text"]
    assert streamed == saved


@pytest.mark.both_databases
async def test_failed_turn_keeps_the_providers_message_and_the_turns_before_it(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = duel_failing_at_its_first_rebuttal(engine, settings, fake_llm)

    result = await runner(engine, hub, settings).run(debate_id)

    assert result.status == "failed"
    saved = turns(engine, debate_id)
    assert [t.status for t in saved] == ["completed", "completed", "failed"]
    failed = saved[-1]
    assert failed.error_kind == "auth"
    assert failed.error_message is not None and "Incorrect API key" in failed.error_message
    assert "Incorrect API key" in (result.reason or "")
    assert status(engine, debate_id) == "failed"


@pytest.mark.both_databases
async def test_a_debate_whose_report_files_cannot_be_written_completes_and_its_end_says_why(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    (settings.data_dir / "finals").write_text("a file where the finals folder goes")
    debate_id = openai_duel(engine, settings, topic="Tabs or spaces?", rounds=2)

    result = await runner(engine, hub, settings).run(debate_id)
    events = [event async for event in hub.subscribe(debate_id)]

    assert result.status == "completed"
    assert result.reason is not None and result.reason.startswith("report files not written")
    with session_scope(engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        assert debate is not None
        assert (debate.status, bool(debate.synthesis), debate.outputs) == ("completed", True, None)
    saved = turns(engine, debate_id)
    assert [t.status for t in saved] == ["completed"] * len(saved)
    end = events[-1]
    assert end.type == "end" and end.data["status"] == "completed"
    assert end.data["files_error"] == result.reason


@pytest.mark.both_databases
async def test_resume_reruns_only_the_unfinished_turns(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = duel_failing_at_its_first_rebuttal(engine, settings, fake_llm)
    assert (await runner(engine, hub, settings).run(debate_id)).status == "failed"
    before = {t.key: t.text for t in turns(engine, debate_id) if t.status == "completed"}
    requests_before = len(fake_llm.requests)

    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status="queued")
    result = await runner(engine, hub, settings).run(debate_id)

    assert result.status == "completed"
    after = turns(engine, debate_id)
    assert len({t.key for t in after}) == len(after)  # nothing doubled
    assert all(t.status == "completed" for t in after)
    for key, text in before.items():
        assert next(t.text for t in after if t.key == key) == text
    rerun = len(fake_llm.requests) - requests_before
    assert rerun == len(after) - len(before)  # only unfinished turns were asked again


@pytest.mark.both_databases
async def test_cancel_stops_the_debate_and_keeps_completed_turns(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = openai_duel(engine, settings, topic="Rust or Go?", rounds=4)
    fake_llm.script(provider="openai", reply="Quick opening.", times=2)
    fake_llm.set_default_token_delay(0.2)  # everything after the openings is slow
    jobs = JobManager(
        engine=engine, hub=hub, providers=build_providers(settings), settings=settings
    )
    jobs.submit(debate_id)
    completed = 0
    async with asyncio.timeout(10):
        async for event in hub.subscribe(debate_id):
            completed += event.type == "turn_completed"
            if completed == 2:
                break
    assert await jobs.cancel(debate_id)
    final = await jobs.wait(debate_id)

    assert final == "cancelled"
    kept = turns(engine, debate_id)
    assert [t.phase for t in kept] == ["opening", "opening"]
    assert hub.has_ended(debate_id)


@pytest.mark.both_databases
async def test_a_cancel_written_by_another_process_mid_turn_stops_the_run_before_the_next(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    """No task is cancelled here: the status changes only in the database, as a cancel made
    on another process leaves it, and the save of the turn under way is what finds it."""
    debate_id = openai_duel(engine, settings, topic="Tabs or spaces?", rounds=3)
    fake_llm.set_default_token_delay(0.05)
    fake_llm.script(provider="openai", reply="A slow opening, word by word, for a while.")
    run = asyncio.create_task(runner(engine, hub, settings).run(debate_id))
    async with asyncio.timeout(10):
        async for event in hub.subscribe(debate_id):
            if event.type == "turn_started":
                break
    with session_scope(engine) as session:
        store.set_status(session, debate_id=debate_id, status="cancelled")

    async with asyncio.timeout(10):
        result = await run

    assert result.status == "cancelled"
    assert status(engine, debate_id) == "cancelled"
    saved = turns(engine, debate_id)
    assert saved and {t.phase for t in saved} == {"opening"}  # the batch under way is kept
    assert len(fake_llm.requests) == len(saved)  # and no turn after it was asked for
    assert hub.has_ended(debate_id)


@pytest.mark.both_databases
async def test_token_budget_stops_the_debate_with_a_clear_reason(
    engine: Engine, hub: EventHub, fake_llm: FakeLLMServer, tmp_path: Any
) -> None:
    from tests.conftest import fake_settings

    settings = fake_settings(fake_llm, tmp_path / "argue-home", debate_token_budget=10)
    debate_id = start(engine, settings, topic="Budget?", rounds=3)
    fake_llm.script(reply="Opening one.", input_tokens=20, output_tokens=5, times=2)

    result = await runner(engine, hub, settings).run(debate_id)

    assert result.status == "failed"
    assert result.reason is not None and "token budget" in result.reason
    assert len(turns(engine, debate_id)) == 2


@pytest.mark.both_databases
@pytest.mark.parametrize("fmt", ["duel", "panel"])
async def test_concurrent_debates_all_complete(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer, fmt: str
) -> None:
    jobs = JobManager(
        engine=engine, hub=hub, providers=build_providers(settings), settings=settings
    )
    ids = [start(engine, settings, topic=f"Question {i}", format=fmt, rounds=2) for i in range(4)]
    for debate_id in ids:
        jobs.submit(debate_id)
    async with asyncio.timeout(30):
        finals = [await jobs.wait(debate_id) for debate_id in ids]
    assert finals == ["completed"] * 4
