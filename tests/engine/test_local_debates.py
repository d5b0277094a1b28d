"""Whole debates on the embedded model (SmolLM2 via llama.cpp), with no keys set: every seat
falls back to ``local`` and the debate still runs to its report."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import store
from app.config import Settings
from app.db import make_engine, session_scope
from app.debates import DebateRequest, create, prepare
from app.events import EventHub
from app.migrate import migrate
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner

pytestmark = pytest.mark.local_model


def offline_settings(tmp_path: Path) -> Settings:
    # Short turns keep a whole debate on two CPU cores to seconds.
    return Settings(home=tmp_path / "home", local_max_output_tokens=40, max_output_tokens=40)


async def run_offline(tmp_path: Path, **request: object) -> tuple[Settings, str, list[str]]:
    settings = offline_settings(tmp_path)
    settings.data_dir.mkdir(parents=True)
    engine = make_engine(settings.sqlalchemy_url)
    migrate(engine)
    prepared = prepare(DebateRequest(**request), statuses=provider_statuses(settings))  # type: ignore[arg-type]
    assert {seat.provider for seat in prepared.spec.seats} == {"local"}
    assert prepared.notes  # each fallback is said, not silent
    debate_id = create(engine, prepared=prepared, settings=settings).id
    runner = Runner(
        engine=engine, hub=EventHub(), providers=build_providers(settings), settings=settings
    )
    result = await runner.run(debate_id)
    assert result.status == "completed", result.reason
    assert result.reason is None  # the report files were written
    with session_scope(engine) as session:
        turns = store.turns_of(session, debate_id=debate_id)
        phases = [turn.phase for turn in turns]
        assert all(turn.text.strip() for turn in turns)
        assert all(turn.provider == "local" and turn.output_tokens > 0 for turn in turns)
    return settings, debate_id, phases


async def test_a_whole_duel_runs_on_the_embedded_model(tmp_path: Path) -> None:
    settings, _, phases = await run_offline(
        tmp_path,
        topic="Is testing really necessary in software development?",
        rounds=2,
        history=True,
    )
    assert phases[:2] == ["opening", "opening"]
    assert phases[-1] == "synthesis"
    finals = settings.data_dir / "finals" / "is-testing-really-necessary-in-software-.md"
    assert finals.read_text().startswith(
        "# Argue: Is testing really necessary in software development?\n**Type**: general  "
    )
    assert len(list((settings.data_dir / "history").glob("is-testing-*-general-*.md"))) == 1


async def test_a_whole_panel_runs_on_the_embedded_model(tmp_path: Path) -> None:
    settings, debate_id, phases = await run_offline(
        tmp_path, topic="ソフトウェア開発においてテストは本当に必要か", format="panel"
    )
    assert phases.count("claim") == 6 and phases.count("summary") == 2
    assert phases[-1] == "judgement"
    workspaces = list((settings.data_dir / "workspaces").iterdir())
    assert len(workspaces) == 1
    report = workspaces[0] / "3_report" / "final_report.md"
    assert "ソフトウェア開発においてテストは本当に必要か" in report.read_text()
    assert len(list((workspaces[0] / "1_claims").glob("*.md"))) == 6
    assert debate_id
