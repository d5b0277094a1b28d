"""What a worker's debate asks of PostgreSQL: its start only reads (taking the lease marked it
running); a turn's save updates the debate's row once, the lease's check adding the turn's
tokens; and its end is one UPDATE that also records the report files' paths, after the
fence's own lock."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from app import store
from app.db import read_scope
from app.leases import Fence, Lease
from app.ledger import Ledger
from app.spec import Outcome
from tests.cluster.test_fencing import new_debate, opening, take


@contextmanager
def statements_sent(engine: Engine) -> Iterator[list[str]]:
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", note)


def fenced_ledger(engine: Engine) -> tuple[str, Ledger]:
    debate_id = new_debate(engine)
    lease = take(engine, debate_id, "alpha", seconds=30)
    assert isinstance(lease, Lease)
    return debate_id, Ledger(engine, fence=Fence(engine, lease, taken_at=time.monotonic()))


def test_a_fenced_start_only_reads_and_still_sees_the_saved_turns(pg_engine: Engine) -> None:
    debate_id, ledger = fenced_ledger(pg_engine)
    ledger.save_turn(debate_id, opening("words already saved"))

    with statements_sent(pg_engine) as sent:
        start = ledger.start(debate_id)

    assert [turn.text for turn in start.done] == ["words already saved"]
    assert start.running and start.spec.topic == "Is a fence a wall?"
    assert sent and all(statement.startswith("SELECT") for statement in sent), sent


def test_a_fenced_turn_save_updates_the_debate_once_and_counts_its_tokens_once(
    pg_engine: Engine,
) -> None:
    debate_id, ledger = fenced_ledger(pg_engine)
    first = ledger.save_turn(debate_id, opening("first attempt"))

    with statements_sent(pg_engine) as sent:
        second = ledger.save_turn(debate_id, opening("second attempt, same key"))

    updates = [statement for statement in sent if statement.startswith("UPDATE debate")]
    assert len(updates) == 1, updates
    assert "AND debate.lease_token = " in updates[0] and "input_tokens=" in updates[0]
    record = opening("")
    assert (first.input_tokens, first.output_tokens) == (record.input_tokens, record.output_tokens)
    assert (second.input_tokens, second.output_tokens) == (
        2 * record.input_tokens,
        2 * record.output_tokens,
    )
    assert second.status == "running"
    with read_scope(pg_engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
        turns = store.turns_of(session, debate_id=debate_id)
    assert debate is not None and debate.input_tokens == second.input_tokens
    assert [turn.text for turn in turns] == ["second attempt, same key"]


def test_a_fenced_completion_writes_the_end_and_the_files_in_one_update(
    pg_engine: Engine, tmp_path: Path
) -> None:
    debate_id, ledger = fenced_ledger(pg_engine)
    ledger.save_turn(debate_id, opening("the only turn"))

    with statements_sent(pg_engine) as sent:
        problem = ledger.complete(
            debate_id,
            outcome=Outcome(rounds_run=1, converged=True, synthesis="Both agree."),
            data_dir=tmp_path,
            now=datetime.now(UTC),
        )

    assert problem is None
    updates = [statement for statement in sent if statement.startswith("UPDATE debate")]
    assert len(updates) == 2, updates  # the fence's hold, then the end with the files
    assert "AND debate.lease_token = " in updates[0]
    assert "status=" in updates[1] and "outputs=" in updates[1]
    with read_scope(pg_engine) as session:
        debate = store.get_debate(session, debate_id=debate_id)
    assert debate is not None
    assert (debate.status, debate.synthesis) == ("completed", "Both agree.")
    assert debate.outputs and Path(debate.outputs["finals"]).is_file()
