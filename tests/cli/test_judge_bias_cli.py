"""``argue run --format panel --blind-judge --swap-judge``: the options reach the saved debate,
a judge on its debaters' provider is a warning printed before the debate starts, and the end
report says whether the two judgements agree."""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.models import Debate
from app.store import debate_spec
from tests.cli.conftest import Argue
from tests.fakes.llm_server import FakeLLMServer
from tests.formats.judgements import SIDE_ONE_AHEAD

ROLES = ("pro_claude", "pro_gemini", "pro_codex", "con_claude", "con_gemini", "con_codex",
         "pro_summarizer", "con_summarizer", "judge")  # fmt: skip
ALL_ON_OPENAI = [arg for role in ROLES for arg in ("--seat", f"{role}=openai")]
JUDGEMENT = SIDE_ONE_AHEAD


def test_run_takes_both_options_warns_at_start_and_reports_agreement(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    fake.rule(contains="You are the judge of a panel debate", reply=JUDGEMENT)

    result = argue(
        "run", "Code review", "--format", "panel", "--blind-judge", "--swap-judge",
        *ALL_ON_OPENAI, "--json",
    )  # fmt: skip

    assert result.code == 0, result.err
    with Session(db) as session:
        (debate,) = session.exec(select(Debate)).all()
        spec = debate_spec(debate)
    assert (spec.blind_judge, spec.swap_judge) == (True, True)
    # Live text and the start lines go to stderr with --json; the warning comes before the
    # first turn.
    warning = next(line for line in result.err.splitlines() if line.startswith("Warning: "))
    assert "Judge (the judge) runs on openai, the same provider as Pro · Claude" in warning
    assert result.err.index(warning) < result.err.index("Con · Codex ·")
    summary = json.loads(result.out)
    assert summary["warnings"] == [warning.removeprefix("Warning: ")]
    # The judge favours whichever side it reads first: the two verdicts disagree.
    assert summary["agreement"].startswith(
        "The two judgements disagree: Pro ahead with Pro shown first, Con ahead with Con shown"
    )


def test_run_without_the_options_saves_them_off(
    fake: FakeLLMServer, argue: Argue, db: Engine
) -> None:
    fake.rule(contains="You are the judge of a panel debate", reply=JUDGEMENT)

    result = argue("run", "Code review", "--format", "panel", *ALL_ON_OPENAI, "--json")

    assert result.code == 0, result.err
    with Session(db) as session:
        (debate,) = session.exec(select(Debate)).all()
        spec = debate_spec(debate)
    assert (spec.blind_judge, spec.swap_judge) == (False, False)
    assert json.loads(result.out)["agreement"] is None
