"""Turns that end early say why: a reply cut at the output cap, or stopped by the runner
because the model was looping, is saved as completed with ``ended_early`` set; the schema
gains that column through its own migration."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy.engine import Engine

from app import store
from app.config import Settings
from app.db import make_engine, session_scope
from app.debates import DebateRequest, SeatChoice, create, prepare
from app.events import EventHub
from app.migrate import alembic_config, downgrade
from app.providers.base import Finished, Message, ProviderStatus, TextDelta, Usage
from app.providers.registry import build_providers, provider_statuses
from app.runner import Runner
from tests.fakes.llm_server import FakeLLMServer

LOOP_SENTENCE = "I believe that this is something that needs to be taken seriously. "


def start_duel(engine: Engine, settings: Settings) -> str:
    request = DebateRequest(
        topic="Should cities ban cars from their centres?",
        rounds=1,
        seats={role: SeatChoice(provider="openai") for role in ("claude", "gemini")},
    )
    prepared = prepare(request, statuses=provider_statuses(settings))
    return create(engine, prepared=prepared, settings=settings).id


def saved_turns(engine: Engine, debate_id: str) -> list[Any]:
    with session_scope(engine) as session:
        return store.turns_of(session, debate_id=debate_id)


class LoopingProvider:
    """A model stuck in a loop: one sentence, a thousand times, a word at a time, unless
    its consumer stops reading."""

    name = "openai"
    words_per_reply = 1000 * len(LOOP_SENTENCE.split())

    def __init__(self) -> None:
        self.words_sent: list[int] = []
        self.closed_early = 0

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, True, "a test provider", "looping")

    async def list_models(self) -> list[str]:
        return ["looping"]

    async def stream(
        self, *, model: str, system: str, messages: Sequence[Message], max_tokens: int
    ) -> AsyncIterator[TextDelta | Finished]:
        self.words_sent.append(0)
        words = LOOP_SENTENCE.split()
        try:
            for index in range(self.words_per_reply):
                self.words_sent[-1] += 1
                yield TextDelta(words[index % len(words)] + " ")
        except GeneratorExit:
            self.closed_early += 1
            raise
        yield Finished(Usage(10, self.words_per_reply), "length")


async def test_a_looping_model_is_stopped_early_and_its_turn_marked_as_repeating(
    engine: Engine, hub: EventHub, settings: Settings
) -> None:
    debate_id = start_duel(engine, settings)
    looping = LoopingProvider()
    runner = Runner(engine=engine, hub=hub, providers={"openai": looping}, settings=settings)

    result = await runner.run(debate_id)

    assert result.status == "completed"
    turns = saved_turns(engine, debate_id)
    assert turns and all(turn.status == "completed" for turn in turns)
    assert {turn.ended_early for turn in turns} == {"repetition"}
    # Each call was abandoned after a few repetitions, not read to its end.
    assert looping.closed_early == len(looping.words_sent) == len(turns)
    assert max(looping.words_sent) < 200 < looping.words_per_reply
    for turn in turns:
        assert turn.text.count("taken seriously.") == 2
        assert turn.usage_estimated and turn.output_tokens > 0


async def test_a_loop_streamed_over_http_is_stopped_and_its_request_cancelled(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = start_duel(engine, settings)
    loop_tokens = [LOOP_SENTENCE] * 400
    fake_llm.script(provider="openai", tokens=loop_tokens, token_delay=0.01)
    runner = Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)

    result = await runner.run(debate_id)

    assert result.status == "completed"
    looped = next(turn for turn in saved_turns(engine, debate_id) if turn.ended_early)
    assert looped.ended_early == "repetition"
    assert looped.text == (LOOP_SENTENCE * 2).strip()
    first = fake_llm.requests_for("openai")[0]
    assert first.ended is not None
    # 400 tokens 10 ms apart take 4 s; the request was dropped long before.
    assert first.ended - first.started < 2.0


async def test_a_reply_cut_at_the_output_limit_is_saved_whole_and_marked(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = start_duel(engine, settings)
    fake_llm.script(
        provider="openai", reply="Cars should go because", stop_reason="length", output_tokens=4
    )
    runner = Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)

    result = await runner.run(debate_id)

    assert result.status == "completed"
    turns = saved_turns(engine, debate_id)
    cut = [turn for turn in turns if turn.ended_early == "output_limit"]
    assert len(cut) == 1
    assert cut[0].text == "Cars should go because" and cut[0].output_tokens == 4
    assert all(turn.ended_early is None for turn in turns if turn is not cut[0])


async def test_the_completion_event_says_why_a_turn_ended_early(
    engine: Engine, hub: EventHub, settings: Settings, fake_llm: FakeLLMServer
) -> None:
    debate_id = start_duel(engine, settings)
    fake_llm.script(provider="openai", reply="Cut", stop_reason="length")
    runner = Runner(engine=engine, hub=hub, providers=build_providers(settings), settings=settings)

    await runner.run(debate_id)

    completions = [e async for e in hub.subscribe(debate_id) if e.type == "turn_completed"]
    assert [e.data["ended_early"] for e in completions].count("output_limit") == 1
    assert [e.data["ended_early"] for e in completions].count(None) == len(completions) - 1


def test_the_migration_adds_ended_early_to_turns_saved_before_it(tmp_path: Path) -> None:
    database = tmp_path / "old.db"
    engine = make_engine(f"sqlite:///{database}")
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
    with sqlite3.connect(database) as old:
        old.execute(
            "insert into debate (id, topic, slug, format, topic_type, rounds, history, "
            "spec_json, seats_summary, status, input_tokens, output_tokens, created_at) "
            "values ('d1', 't', 't', 'duel', 'general', 1, 0, '{}', '', 'completed', 0, 0, "
            "'2026-01-01 00:00:00')"
        )
        old.execute(
            "insert into turn (debate_id, seq, key, role, label, provider, model, phase, "
            "round, status, text, input_tokens, output_tokens, usage_estimated, attempts, "
            "latency_ms, started_at, finished_at) values ('d1', 1, 'k', 'r', 'L', 'openai', "
            "'m', 'opening', 0, 'completed', 'Hi', 1, 1, 0, 1, 0, '2026-01-01 00:00:00', "
            "'2026-01-01 00:00:00')"
        )

    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, "head")
    with sqlite3.connect(database) as upgraded:
        rows = upgraded.execute("select text, ended_early from turn").fetchall()
    assert rows == [("Hi", None)]

    # Through app.migrate: a later revision's downgrade rebuilds the debate table, which
    # SQLite allows under the turns' foreign key only with the checks it makes there.
    downgrade(engine, to="0001")
    with sqlite3.connect(database) as downgraded:
        columns = {row[1] for row in downgraded.execute("pragma table_info(turn)")}
    assert "ended_early" not in columns and "text" in columns
    engine.dispose()
