"""Ctrl-C in ``argue eval``: a real process gets a real SIGINT mid-run, exits 130 with the
items it finished kept and the debate in flight cancelled; ``--resume`` then does the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.config import PROJECT_ROOT
from app.evals.tasks import arithmetic
from app.models import Debate, EvalItem, EvalRun
from tests.cli.conftest import Argue
from tests.evals.conftest import script_answers
from tests.fakes.llm_server import FakeLLMServer


@pytest.mark.timeout(90)
def test_ctrl_c_keeps_finished_items_and_resume_does_the_rest(
    fake: FakeLLMServer, argue: Argue, cli_home: Engine
) -> None:
    questions = arithmetic(3, seed=11)
    script_answers(fake, questions[:1], [True])
    for question in questions[1:]:  # slow enough to be interrupted in the second duel
        fake.rule(contains=question.text, reply="Still thinking " * 40, token_delay=0.05)
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "eval", "arithmetic", "--items", "3",
         "--seed", "11", "--conditions", "duel", "--provider", "openai", "--rounds", "1"],
        cwd=PROJECT_ROOT,
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        seen = []
        for line in process.stderr:
            seen.append(line)
            if line.startswith("[1/3] duel:"):
                break
        assert fake.wait_for_requests(5, timeout=20), "".join(seen)  # the second duel began
        process.send_signal(signal.SIGINT)
        out, errors = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == 130, out + errors
    with Session(cli_home) as session:
        run = session.exec(select(EvalRun)).one()
        done = session.exec(select(EvalItem)).all()
        debates = session.exec(select(Debate)).all()
    assert run.status == "interrupted"
    assert f"resume with: argue eval --resume {run.id}" in errors
    assert "Traceback" not in errors
    assert [item.item_index for item in done] == [0]
    assert sorted(debate.status for debate in debates) == ["cancelled", "completed"]

    fake.reset()
    script_answers(fake, questions, [True, True, False])
    result = argue("eval", "--resume", run.id)

    assert result.code == 0, result.err
    with Session(cli_home) as session:
        items = session.exec(select(EvalItem).order_by(EvalItem.item_index)).all()  # type: ignore[arg-type]
    assert [(item.item_index, item.correct) for item in items] == [
        (0, True), (1, True), (2, False)
    ]  # fmt: skip
