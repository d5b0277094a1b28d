"""Ctrl-C in ``argue run`` cancels cleanly: a real process gets a real SIGINT mid-debate,
exits 130, and leaves the debate saved as cancelled with the turns it had completed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.config import PROJECT_ROOT
from app.models import Debate, Turn
from tests.cli.conftest import DUEL_SEATS
from tests.fakes.llm_server import FakeLLMServer

REBUTTAL_HEADER = "── Claude · openai:gpt-test · rebuttal · round 2 ──"


@pytest.mark.timeout(60)
def test_ctrl_c_cancels_the_debate_and_keeps_its_completed_turns(
    fake: FakeLLMServer, db: Engine, home: Path
) -> None:
    fake.set_default_token_delay(0.1)  # each turn takes about a second: time to interrupt
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "run", "a topic", "--rounds", "4", *DUEL_SEATS],
        cwd=PROJECT_ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        seen: list[str] = []
        for line in process.stdout:
            seen.append(line)
            if line.strip() == REBUTTAL_HEADER:
                break
        assert REBUTTAL_HEADER in "".join(seen), "".join(seen) + process.stderr.read()
        process.send_signal(signal.SIGINT)
        rest, errors = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, rest + errors
    with Session(db) as session:
        debate = session.exec(select(Debate)).one()
        turns = session.exec(select(Turn).where(Turn.debate_id == debate.id)).all()
    assert debate.status == "cancelled"
    assert debate.finished_at is not None
    assert sorted((turn.phase, turn.status) for turn in turns) == [
        ("opening", "completed"),
        ("opening", "completed"),
    ]
    assert "cancelling…" in rest
    assert f"Debate {debate.id} cancelled; 2 completed turn(s) saved." in rest
    assert f"resume with: argue resume {debate.id}" in rest
    assert "Traceback" not in errors
