"""Persistence of eval runs and their items: keyword-only functions over a session.

Callers own the session and its transaction (``app.db.session_scope``), as in ``app.store``.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import asdict
from decimal import Decimal
from typing import Any

from sqlmodel import Session, col, select

from app.evals.tasks import Question
from app.models import EvalItem, EvalRun, utcnow
from app.spec import Seat

RUN_STATUSES = ("running", "interrupted", "failed", "completed")


def create_run(
    session: Session,
    *,
    task: str,
    seed: int,
    rounds: int,
    samples: int,
    conditions: Sequence[str],
    seats: dict[str, tuple[Seat, ...]],
    questions: Sequence[Question],
) -> EvalRun:
    run = EvalRun(
        id=secrets.token_hex(6),
        task=task[:255],
        seed=seed,
        rounds=rounds,
        samples=samples,
        conditions=list(conditions),
        seats={name: [asdict(seat) for seat in chosen] for name, chosen in seats.items()},
        questions=[question.to_json() for question in questions],
    )
    session.add(run)
    session.flush()
    return run


def run_seats(run: EvalRun) -> dict[str, tuple[Seat, ...]]:
    return {name: tuple(Seat(**seat) for seat in seats) for name, seats in run.seats.items()}


def run_questions(run: EvalRun) -> list[Question]:
    return [Question.from_json(data) for data in run.questions]


def get_run(session: Session, *, run_id: str) -> EvalRun | None:
    return session.get(EvalRun, run_id)


def list_runs(session: Session, *, limit: int = 100) -> list[EvalRun]:
    query = select(EvalRun).order_by(col(EvalRun.created_at).desc()).limit(limit)
    return list(session.exec(query).all())


def items_of(session: Session, *, run_id: str) -> list[EvalItem]:
    query = (
        select(EvalItem)
        .where(EvalItem.run_id == run_id)
        .order_by(col(EvalItem.item_index), col(EvalItem.id))
    )
    return list(session.exec(query).all())


def items_of_runs(session: Session, *, run_ids: Sequence[str]) -> dict[str, list[EvalItem]]:
    found: dict[str, list[EvalItem]] = {run_id: [] for run_id in run_ids}
    if not run_ids:
        return found
    query = select(EvalItem).where(col(EvalItem.run_id).in_(list(run_ids)))
    for item in session.exec(query).all():
        found[item.run_id].append(item)
    return found


def record_item(
    session: Session,
    *,
    run_id: str,
    item_index: int,
    condition: str,
    question: Question,
    answer: str | None,
    reply: str,
    correct: bool,
    debate_id: str | None,
    calls: int,
    input_tokens: int,
    output_tokens: int,
    cost: Decimal | None,
    seconds: float,
) -> EvalItem:
    item = EvalItem(
        run_id=run_id,
        item_index=item_index,
        condition=condition,
        question=question.prompt().replace("\x00", ""),
        expected=question.expected,
        answer=None if answer is None else answer.replace("\x00", "")[:1000],
        reply=reply.replace("\x00", ""),
        correct=correct,
        unparsable=answer is None,
        debate_id=debate_id,
        calls=calls,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=None if cost is None else str(cost),
        seconds=seconds,
    )
    session.add(item)
    session.flush()
    return item


def set_run_status(
    session: Session, *, run_id: str, status: str, reason: str | None = None
) -> None:
    if status not in RUN_STATUSES:
        raise ValueError(f"unknown eval run status {status!r}")
    run = session.get(EvalRun, run_id)
    if run is None:
        raise LookupError(f"no eval run {run_id}")
    run.status = status
    run.status_reason = reason
    run.finished_at = None if status == "running" else utcnow()
    session.add(run)


def run_ids_starting_with(session: Session, *, prefix: str, limit: int = 5) -> list[str]:
    query = select(EvalRun.id).where(col(EvalRun.id).startswith(prefix)).limit(limit)
    return list(session.exec(query).all())


def as_dict(item: EvalItem) -> dict[str, Any]:
    return item.model_dump(exclude={"id", "created_at"})
