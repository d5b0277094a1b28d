"""Persistence of debates and turns: keyword-only functions over a session.

Each function is one short unit of work; callers own the session and its transaction
(``db.session_scope``). Nothing here knows about the web or about providers.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Row, Select, bindparam, func, insert, update
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from app.models import ACTIVE_STATUSES, Debate, Turn, utcnow
from app.spec import CompletedTurn, ContextFile, DebateSpec, Outcome, Seat

_Select = TypeVar("_Select", bound=Select[Any])

_SLUG_DROP = re.compile(r"[^a-z0-9-]")


def slugify(topic: str) -> str:
    """FORMATS.md: lower-case, spaces to hyphens, drop all but [a-z0-9-], cut to 40."""
    return _SLUG_DROP.sub("", topic.lower().replace(" ", "-"))[:40]


def new_debate_id() -> str:
    return secrets.token_hex(6)


def spec_to_json(spec: DebateSpec) -> dict[str, Any]:
    return asdict(spec)


def spec_from_json(data: dict[str, Any]) -> DebateSpec:
    return DebateSpec(
        topic=data["topic"],
        format=data["format"],
        topic_type=data.get("topic_type", "general"),
        rounds=int(data.get("rounds", 4)),
        seats=tuple(Seat(**seat) for seat in data.get("seats", ())),
        context=tuple(ContextFile(**item) for item in data.get("context", ())),
        skipped_paths=tuple(data.get("skipped_paths", ())),
        seed=data.get("seed"),
        history=bool(data.get("history", False)),
    )


def seats_summary(spec: DebateSpec) -> str:
    return ", ".join(
        f"{seat.label}: {seat.provider}{':' + seat.model if seat.model else ''}"
        for seat in spec.seats
    )


@dataclass(frozen=True)
class SavedTurn:
    """A saved turn's id and its debate's token totals after it."""

    turn_id: int
    input_tokens: int
    output_tokens: int


def create_debate(session: Session, *, spec: DebateSpec, token_budget: int | None = None) -> Debate:
    debate = Debate(
        id=new_debate_id(),
        topic=spec.topic,
        slug=slugify(spec.topic),
        format=spec.format,
        topic_type=spec.topic_type,
        rounds=spec.rounds,
        seed=spec.seed,
        history=spec.history,
        spec_json=spec_to_json(spec),
        seats_summary=seats_summary(spec),
        token_budget=token_budget,
        status="queued",
    )
    session.add(debate)
    session.flush()
    return debate


def get_debate(session: Session, *, debate_id: str) -> Debate | None:
    return session.get(Debate, debate_id)


def debate_ids_starting_with(session: Session, *, prefix: str, limit: int) -> list[str]:
    """Ids that begin with ``prefix``, in order, at most ``limit``. The prefix is taken
    literally: ``%`` and ``_`` in it are escaped, not LIKE wildcards."""
    statement = (
        select(Debate.id)
        .where(col(Debate.id).startswith(prefix, autoescape=True))
        .order_by(col(Debate.id))
        .limit(limit)
    )
    return list(session.exec(statement).all())


def debate_spec(debate: Debate) -> DebateSpec:
    return spec_from_json(debate.spec_json)


def list_debates(
    session: Session,
    *,
    query: str | None = None,
    format: str | None = None,
    status: str | None = None,
    page: int = 1,
    per_page: int = 20,
) -> tuple[list[Debate], int]:
    """One page of debates, newest first, and the total that match."""
    conditions = _debate_filters(query=query, format=format, status=status)
    rows = session.exec(_newest_first(select(Debate), conditions, page, per_page)).all()
    return list(rows), _count_debates(session, conditions)


# What a table of debates shows (templates/partials/debate_rows.html).
_TABLE_COLUMNS = (
    "id",
    "topic",
    "format",
    "seats_summary",
    "status",
    "status_reason",
    "converged",
    "rounds_run",
    "rounds",
    "input_tokens",
    "output_tokens",
    "created_at",
)


def list_debate_rows(
    session: Session,
    *,
    query: str | None = None,
    format: str | None = None,
    status: str | None = None,
    page: int = 1,
    per_page: int = 20,
) -> tuple[list[Row[Any]], int]:
    """As ``list_debates``, but only the columns a table of debates shows, as plain rows
    (attributes by column name): no ORM objects, and none of the JSON columns decoded, which
    were most of the history page's cost."""
    conditions = _debate_filters(query=query, format=format, status=status)
    debates = Debate.__table__  # type: ignore[attr-defined]
    columns = sql_select(*(debates.c[name] for name in _TABLE_COLUMNS))
    rows = session.connection().execute(_newest_first(columns, conditions, page, per_page))
    return list(rows.all()), _count_debates(session, conditions)


def _debate_filters(
    *, query: str | None, format: str | None, status: str | None
) -> list[ColumnElement[bool]]:
    conditions: list[ColumnElement[bool]] = []
    if query:
        conditions.append(col(Debate.topic).contains(query, autoescape=True))
    if format:
        conditions.append(col(Debate.format) == format)
    if status:
        conditions.append(col(Debate.status) == status)
    return conditions


def _newest_first(
    statement: _Select, conditions: list[ColumnElement[bool]], page: int, per_page: int
) -> _Select:
    return (
        statement.where(*conditions)
        .order_by(col(Debate.created_at).desc(), col(Debate.id).desc())
        .offset(max(page - 1, 0) * per_page)
        .limit(per_page)
    )


def _count_debates(session: Session, conditions: list[ColumnElement[bool]]) -> int:
    return int(session.exec(select(func.count()).select_from(Debate).where(*conditions)).one())


def active_debates(session: Session) -> list[Debate]:
    """Debates that were queued or running, oldest first: what start-up resumes."""
    rows = session.exec(
        select(Debate)
        .where(col(Debate.status).in_(ACTIVE_STATUSES))
        .order_by(col(Debate.created_at), col(Debate.id))
    ).all()
    return list(rows)


def set_status(
    session: Session, *, debate_id: str, status: str, reason: str | None = None
) -> Debate:
    debate = _require(session, debate_id)
    debate.status = status
    debate.status_reason = reason
    now = utcnow()
    if status == "running":
        debate.started_at = debate.started_at or now
        debate.finished_at = None
    elif status in ("completed", "failed", "cancelled"):
        debate.finished_at = now
    session.add(debate)
    return debate


def debate_status(session: Session, *, debate_id: str) -> str | None:
    # Read before every step of every running debate: a cached Core statement.
    status = session.connection().execute(_TURN_SQL.status, {"debate_id": debate_id}).scalar()
    return None if status is None else str(status)


def record_turn(
    session: Session,
    *,
    debate_id: str,
    key: str,
    role: str,
    label: str,
    provider: str,
    model: str,
    phase: str,
    round: int,
    status: str,
    text: str,
    verdict: dict[str, Any] | None,
    error_kind: str | None,
    error_message: str | None,
    input_tokens: int,
    output_tokens: int,
    usage_estimated: bool,
    attempts: int,
    started_at: datetime,
    finished_at: datetime,
    ended_early: str | None = None,
) -> SavedTurn:
    """Save a finished turn, replacing an earlier failed attempt with the same key, and add
    its tokens to the debate's totals.

    Core statements built once (``_TurnStatements``) and run on the session's connection:
    this runs once per turn of every running debate, and building and coercing a statement
    with twenty values costs more than SQLite takes to run it."""
    connection = session.connection()
    last_seq = connection.execute(_TURN_SQL.last_seq, {"debate_id": debate_id}).scalar()
    values = {
        "seq": int(last_seq or 0) + 1,
        "role": role,
        "label": label,
        "provider": provider,
        "model": model,
        "phase": phase,
        "round": round,
        "status": status,
        "text": text,
        "verdict": verdict,
        "error_kind": error_kind,
        "error_message": error_message,
        "ended_early": ended_early,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "usage_estimated": usage_estimated,
        "attempts": attempts,
        "started_at": started_at,
        "finished_at": finished_at,
        "latency_ms": int((finished_at - started_at).total_seconds() * 1000),
    }
    existing = connection.execute(_TURN_SQL.find, {"debate_id": debate_id, "key": key}).scalar()
    if existing is None:
        inserted = connection.execute(
            _TURN_SQL.insert, {"debate_id": debate_id, "key": key, **values}
        )
        turn_id = int(inserted.scalar_one())
    else:
        connection.execute(_TURN_SQL.update, {"turn_id": existing, **values})
        turn_id = int(existing)
    totals = connection.execute(
        _TURN_SQL.add_tokens,
        {"debate_id": debate_id, "more_input": input_tokens, "more_output": output_tokens},
    ).one_or_none()
    if totals is None:
        raise LookupError(f"no debate {debate_id}")
    return SavedTurn(turn_id=turn_id, input_tokens=totals[0], output_tokens=totals[1])


class _TurnStatements:
    """The statements a running debate executes at every step, parameterised by name;
    SQLAlchemy caches each one's compiled form, so a call only binds values."""

    def __init__(self) -> None:
        turns = Turn.__table__  # type: ignore[attr-defined]
        debates = Debate.__table__  # type: ignore[attr-defined]
        self.status = sql_select(debates.c.status).where(debates.c.id == bindparam("debate_id"))
        self.last_seq = sql_select(func.max(turns.c.seq)).where(
            turns.c.debate_id == bindparam("debate_id")
        )
        self.find = sql_select(turns.c.id).where(
            turns.c.debate_id == bindparam("debate_id"), turns.c.key == bindparam("key")
        )
        # No ``values()``: the columns set are the parameters' names.
        self.insert = insert(turns).returning(turns.c.id)
        self.update = update(turns).where(turns.c.id == bindparam("turn_id"))
        self.add_tokens = (
            update(debates)
            .where(debates.c.id == bindparam("debate_id"))
            .values(
                input_tokens=debates.c.input_tokens + bindparam("more_input"),
                output_tokens=debates.c.output_tokens + bindparam("more_output"),
            )
            .returning(debates.c.input_tokens, debates.c.output_tokens)
        )


_TURN_SQL = _TurnStatements()


def turns_of(session: Session, *, debate_id: str) -> list[Turn]:
    rows = session.exec(
        select(Turn).where(Turn.debate_id == debate_id).order_by(col(Turn.seq))
    ).all()
    return list(rows)


def completed_turns(session: Session, *, debate_id: str) -> tuple[CompletedTurn, ...]:
    """What a format plans from: the completed turns, in the order they completed."""
    return tuple(
        CompletedTurn(
            key=turn.key,
            role=turn.role,
            phase=turn.phase,
            round=turn.round,
            text=turn.text,
            verdict=turn.verdict,
        )
        for turn in turns_of(session, debate_id=debate_id)
        if turn.status == "completed"
    )


def finish_debate(
    session: Session,
    *,
    debate_id: str,
    status: str,
    outcome: Outcome | None,
    reason: str | None = None,
) -> Debate:
    debate = set_status(session, debate_id=debate_id, status=status, reason=reason)
    if outcome is not None:
        debate.converged = outcome.converged
        debate.rounds_run = outcome.rounds_run
        debate.synthesis = outcome.synthesis
    session.add(debate)
    return debate


def set_outputs(session: Session, *, debate_id: str, outputs: dict[str, Any]) -> Debate:
    """Remember the files written for a debate (``files.Outputs.as_json()``)."""
    debate = _require(session, debate_id)
    debate.outputs = dict(outputs)
    session.add(debate)
    return debate


def _require(session: Session, debate_id: str) -> Debate:
    debate = session.get(Debate, debate_id)
    if debate is None:
        raise LookupError(f"no debate {debate_id}")
    return debate


__all__ = [
    "active_debates",
    "completed_turns",
    "create_debate",
    "debate_spec",
    "debate_status",
    "finish_debate",
    "get_debate",
    "list_debate_rows",
    "list_debates",
    "record_turn",
    "set_outputs",
    "set_status",
    "slugify",
    "turns_of",
]
