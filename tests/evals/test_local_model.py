"""A real, tiny eval on the embedded SmolLM2: it completes and keeps each item with an
answer read from the reply, or marked unparsable. Its accuracy is whatever it is."""

from __future__ import annotations

import json

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from app.models import EvalItem, EvalRun
from tests.cli.conftest import Argue


@pytest.mark.local_model
def test_a_tiny_single_run_on_the_local_model_completes_and_keeps_its_items(
    argue: Argue,
    cli_home: Engine,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ARGUE_LOCAL_MAX_OUTPUT_TOKENS", "48")

    result = argue(
        "eval",
        "arithmetic",
        "--items",
        "2",
        "--conditions",
        "single",
        "--provider",
        "local",
        "--json",
    )

    assert result.code == 0, result.err
    [row] = json.loads(result.out)["conditions"]
    assert row["items"] == 2 and row["calls"] == 2 and row["output_tokens"] > 0
    with Session(cli_home) as session:
        run = session.exec(select(EvalRun)).one()
        items = session.exec(select(EvalItem)).all()
    assert run.status == "completed"
    assert len(items) == 2
    for item in items:
        assert item.reply.strip()
        assert item.unparsable is (item.answer is None)
        assert item.correct is False or item.answer is not None
