"""``argue run`` with ``ARGUE_REDIS_URL`` set: the terminal shows the debate from its own
memory, and its events also go to Redis, where web servers sharing it find them."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from app.cli.main import main
from app.config import Settings
from app.db import make_engine
from app.models import Debate, Turn
from app.redis_bus import RedisBus
from tests.bus.conftest import REDIS_URL
from tests.fakes.llm_server import FakeLLMServer


def test_a_debate_run_from_the_command_line_is_published_to_redis(
    fake_llm: FakeLLMServer,
    redis_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ARGUE_HOME", str(tmp_path / "argue-home"))
    monkeypatch.setenv("OPENAI_API_KEY", "test-openai-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    monkeypatch.setenv("ARGUE_REDIS_URL", REDIS_URL)
    monkeypatch.setenv("ARGUE_REDIS_KEY_PREFIX", redis_prefix)

    seats = ["--seat", "claude=openai", "--seat", "gemini=openai"]
    code = main(["run", "SQLite or Postgres?", "--rounds", "1", *seats])

    printed = capsys.readouterr()
    assert code == 0, printed.err
    engine = make_engine(Settings().sqlalchemy_url)
    try:
        with Session(engine) as session:
            [debate] = session.exec(select(Debate)).all()
            saved = [turn.key for turn in session.exec(select(Turn).order_by(col(Turn.seq))).all()]
    finally:
        engine.dispose()

    async def read() -> list[tuple[str, str]]:
        bus = RedisBus(REDIS_URL, key_prefix=redis_prefix)
        try:
            async with asyncio.timeout(10):
                events = [event async for event in bus.subscribe(debate.id)]
        finally:
            await bus.aclose()
        return [(event.type, str(event.data.get("key", ""))) for event in events]

    seen = asyncio.run(read())
    completed = [key for type, key in seen if type == "turn_completed"]
    assert sorted(completed) == sorted(saved) and saved
    assert seen[-1] == ("end", "")
