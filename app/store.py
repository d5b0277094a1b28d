"""Persistence of debates and turns: keyword-only functions over a session.

Each function is one short unit of work; callers own the session and its transaction
(``db.session_scope``). Nothing here knows about the web or about providers.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar, overload

from sqlalchemy import (
    ColumnElement,
    Row,
    Select,
    bindparam,
    delete,
    false,
    func,
    insert,
    update,
)
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from app.models import Debate, Turn, utcnow
from app.pricing import ModelUse
from app.spec import CompletedTurn, ContextFile, DebateSpec, Outcome, Seat
from app.status import ACTIVE_STATUSES, DebateStatus

_Select = TypeVar("_Select", bound=Select[Any])

_SLUG_DROP = re.compile(r"[^a-z0-9-]")


def slugify(topic: str) -> str:
    """FORMATS.md: lower-case, spaces to hyphens, drop all but [a-z0-9-], cut to 40."""
    return _SLUG_DROP.sub("", topic.lower().replace(" ", "-"))[:40]


def new_debate_id() -> str:
    return secrets.token_hex(6)


def spec_to_json(spec: DebateSpec) -> dict[str, Any]:
    """What was asked to start the debate; its follow-up questions are saved on their own
    (``Debate.followups``), since they are asked later and one at a time."""
    data = asdict(spec)
    data.pop("followups", None)
    # A JSON column stores numbers as floats: the budget is kept as its exact decimal text.
    data["budget_usd"] = None if spec.budget_usd is None else str(spec.budget_usd)
    return data


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
        budget_usd=None if data.get("budget_usd") is None else Decimal(str(data["budget_usd"])),
        # Absent from debates saved before these options existed: off.
        blind_judge=bool(data.get("blind_judge", False)),
        swap_judge=bool(data.get("swap_judge", False)),
    )


@overload
def storable(text: str) -> str: ...
@overload
def storable(text: None) -> None: ...
def storable(text: str | None) -> str | None:
    """``text`` as both databases keep it: PostgreSQL refuses the NUL character in text, which
    SQLite would keep, so it is dropped on both. Only model output and provider messages can
    hold one (what people type is refused with a control character, ``app.debates``)."""
    return None if text is None else text.replace("\x00", "")


def can_be_stored(text: str) -> bool:
    """Whether ``text`` could be in the database at all. A lookup by a value with NUL in it
    finds nothing, on both databases: PostgreSQL would refuse to compare it."""
    return "\x00" not in text


# The longest topic search that is run. SQLite refuses a LIKE pattern over 50,000 bytes ("LIKE
# or GLOB pattern too complex", which read as the database failing), and a search this long is
# a paste gone wrong, not words someone looks for.
MAX_SEARCH_CHARS = 500


def search_refusal(query: str) -> str | None:
    """Why ``query`` is not run as a topic search, in words for whoever typed it; None when it
    can be run."""
    if len(query) > MAX_SEARCH_CHARS:
        return f"A search is at most {MAX_SEARCH_CHARS} characters; this one has {len(query):,}."
    return None


def seats_summary(spec: DebateSpec) -> str:
    return ", ".join(
        f"{seat.label}: {seat.provider}{':' + seat.model if seat.model else ''}"
        for seat in spec.seats
    )


@dataclass(frozen=True)
class DebateTotals:
    """A debate's token totals and status, as an ``UPDATE`` that added a turn's tokens
    returned them."""

    input_tokens: int
    output_tokens: int
    status: DebateStatus


@dataclass(frozen=True)
class SavedTurn:
    """A saved turn's id, and its debate's token totals and status after it (a cancel made
    while the turn ran shows here)."""

    turn_id: int
    input_tokens: int
    output_tokens: int
    status: DebateStatus


def create_debate(
    session: Session,
    *,
    spec: DebateSpec,
    token_budget: int | None = None,
    rerun_of: str | None = None,
) -> Debate:
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
        status=DebateStatus.QUEUED.value,
        rerun_of=rerun_of,
    )
    session.add(debate)
    session.flush()
    return debate


def get_debate(session: Session, *, debate_id: str, for_update: bool = False) -> Debate | None:
    """The debate; ``for_update`` locks its row until the transaction ends (PostgreSQL: a
    web node that checks a status before changing it waits for another node doing the same;
    SQLite has no row locks and takes one writer at a time)."""
    if not can_be_stored(debate_id):
        return None
    return session.get(Debate, debate_id, with_for_update=for_update)


def debate_ids_starting_with(session: Session, *, prefix: str, limit: int) -> list[str]:
    """Ids that begin with ``prefix``, in order, at most ``limit``. The prefix is taken
    literally: ``%`` and ``_`` in it are escaped, not LIKE wildcards. Case is ignored on
    every database (SQLite's LIKE ignores it; PostgreSQL's would not, hence ILIKE)."""
    if not can_be_stored(prefix):
        return []
    statement = (
        select(Debate.id)
        .where(col(Debate.id).istartswith(prefix, autoescape=True))
        .order_by(col(Debate.id))
        .limit(limit)
    )
    return list(session.exec(statement).all())


def debate_spec(debate: Debate) -> DebateSpec:
    """The debate's spec with the follow-up questions asked so far: what its format plans
    from, so a resumed debate plans their answers too."""
    spec = spec_from_json(debate.spec_json)
    questions = tuple(followup_questions(debate))
    return replace(spec, followups=questions) if questions else spec


def followup_questions(debate: Debate) -> list[str]:
    return [str(item.get("question", "")) for item in debate.followups or ()]


def add_followup(session: Session, *, debate_id: str, question: str) -> int:
    """Save a follow-up question on the debate; its number (1 for the first)."""
    debate = _require(session, debate_id)
    # A new list, not the old one changed in place: the JSON column notices only assignment.
    asked = [*(debate.followups or ()), {"question": question, "asked_at": utcnow().isoformat()}]
    debate.followups = asked
    session.add(debate)
    return len(asked)


def reruns_of(session: Session, *, debate_id: str) -> list[str]:
    """The ids of the debates that re-run ``debate_id``, oldest first."""
    statement = (
        select(Debate.id)
        .where(col(Debate.rerun_of) == debate_id)
        .order_by(col(Debate.created_at), col(Debate.id))
    )
    return list(session.exec(statement).all())


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
    if query and (refusal := search_refusal(query)):
        raise ValueError(refusal)
    conditions: list[ColumnElement[bool]] = []
    if query and not can_be_stored(query):
        conditions.append(false())  # no saved topic holds what cannot be saved
    elif query:
        # Case-insensitive on both databases: ILIKE on PostgreSQL, lower() LIKE lower() on
        # SQLite (whose lower() app.db makes fold all of Unicode, as PostgreSQL's does).
        conditions.append(col(Debate.topic).icontains(query, autoescape=True))
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
    session: Session, *, debate_id: str, status: DebateStatus, reason: str | None = None
) -> Debate:
    status = DebateStatus(status)  # a caller's plain string is checked here, not stored as is
    debate = _require(session, debate_id)
    debate.status = status.value
    debate.status_reason = storable(reason)
    now = utcnow()
    if status == DebateStatus.RUNNING:
        debate.started_at = debate.started_at or now
        debate.finished_at = None
    elif status.is_ended:
        debate.finished_at = now
    session.add(debate)
    return debate


def mark_running(session: Session, *, debate_id: str) -> bool:
    """Mark a queued (or, after a crash, still running) debate running, in one conditional
    statement; False, changing nothing, when it has been stopped meanwhile. A job's start
    runs in a worker thread: a cancel that lands while it is on its way must stand, not be
    overwritten by a ``running`` that no job is left to honour."""
    now = utcnow()
    marked = session.execute(
        update(Debate)
        .where(col(Debate.id) == debate_id, col(Debate.status).in_(ACTIVE_STATUSES))
        .values(
            status=DebateStatus.RUNNING.value,
            status_reason=None,
            started_at=func.coalesce(col(Debate.started_at), now),
            finished_at=None,
        )
    )
    session.expire_all()
    return bool(getattr(marked, "rowcount", 0))


def debate_status(session: Session, *, debate_id: str) -> DebateStatus | None:
    # Read before every step of every running debate: a cached Core statement.
    if not can_be_stored(debate_id):
        return None
    status = session.connection().execute(_TURN_SQL.status, {"debate_id": debate_id}).scalar()
    return None if status is None else DebateStatus(status)


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
    tokens_added: DebateTotals | None = None,
) -> SavedTurn:
    """Save a finished turn, replacing an earlier failed attempt with the same key, and add
    its tokens to the debate's totals; unless the caller has added them in this transaction
    already, and passes the totals it got back as ``tokens_added`` (a worker adds them with
    its lease's check, ``app.leases.hold``, in the same statement).

    Core statements built once (``_TurnStatements``) and run on the session's connection:
    this runs once per turn of every running debate, and building and coercing a statement
    with twenty values costs more than SQLite takes to run it."""
    connection = session.connection()
    last_seq, existing = connection.execute(
        _TURN_SQL.last_seq_and_earlier, {"debate_id": debate_id, "key": key}
    ).one()
    values = {
        "seq": int(last_seq or 0) + 1,
        "role": role,
        "label": label,
        "provider": provider,
        "model": model,
        "phase": phase,
        "round": round,
        "status": status,
        "text": storable(text),
        "verdict": verdict,
        "error_kind": error_kind,
        "error_message": storable(error_message),
        "ended_early": ended_early,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "usage_estimated": usage_estimated,
        "attempts": attempts,
        "started_at": started_at,
        "finished_at": finished_at,
        "latency_ms": int((finished_at - started_at).total_seconds() * 1000),
    }
    if existing is None:
        inserted = connection.execute(
            _TURN_SQL.insert, {"debate_id": debate_id, "key": key, **values}
        )
        turn_id = int(inserted.scalar_one())
    else:
        connection.execute(_TURN_SQL.update, {"turn_id": existing, **values})
        turn_id = int(existing)
    totals = tokens_added
    if totals is None:
        totals = _add_tokens(
            connection, debate_id=debate_id, input_tokens=input_tokens, output_tokens=output_tokens
        )
    return SavedTurn(
        turn_id=turn_id,
        input_tokens=totals.input_tokens,
        output_tokens=totals.output_tokens,
        status=totals.status,
    )


def _add_tokens(
    connection: Any, *, debate_id: str, input_tokens: int, output_tokens: int
) -> DebateTotals:
    totals = connection.execute(
        _TURN_SQL.add_tokens,
        {"debate_id": debate_id, "more_input": input_tokens, "more_output": output_tokens},
    ).one_or_none()
    if totals is None:
        raise LookupError(f"no debate {debate_id}")
    return DebateTotals(int(totals[0]), int(totals[1]), DebateStatus(totals[2]))


class _TurnStatements:
    """The statements a running debate executes at every step, parameterised by name;
    SQLAlchemy caches each one's compiled form, so a call only binds values."""

    def __init__(self) -> None:
        turns = Turn.__table__  # type: ignore[attr-defined]
        debates = Debate.__table__  # type: ignore[attr-defined]
        self.status = sql_select(debates.c.status).where(debates.c.id == bindparam("debate_id"))
        # The debate's last turn number and the id of an earlier attempt at this turn's
        # key, if any: one round trip, as both are read before every save.
        of_debate = turns.c.debate_id == bindparam("debate_id")
        self.last_seq_and_earlier = sql_select(
            sql_select(func.max(turns.c.seq)).where(of_debate).scalar_subquery(),
            sql_select(turns.c.id)
            .where(of_debate, turns.c.key == bindparam("key"))
            .scalar_subquery(),
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
            .returning(debates.c.input_tokens, debates.c.output_tokens, debates.c.status)
        )


_TURN_SQL = _TurnStatements()


def turns_of(session: Session, *, debate_id: str) -> list[Turn]:
    if not can_be_stored(debate_id):
        return []
    rows = session.exec(
        select(Turn).where(Turn.debate_id == debate_id).order_by(col(Turn.seq))
    ).all()
    return list(rows)


def tokens_by_model(session: Session, *, debate_ids: Sequence[str]) -> dict[str, list[ModelUse]]:
    """Each debate's tokens summed per provider and model, for what its turns cost: one
    grouped query for a whole page of debates, reading no turn's text."""
    if not debate_ids:
        return {}
    turns = Turn.__table__  # type: ignore[attr-defined]
    statement = (
        sql_select(
            turns.c.debate_id,
            turns.c.provider,
            turns.c.model,
            func.sum(turns.c.input_tokens),
            func.sum(turns.c.output_tokens),
        )
        .where(turns.c.debate_id.in_(list(debate_ids)))
        .group_by(turns.c.debate_id, turns.c.provider, turns.c.model)
    )
    uses: dict[str, list[ModelUse]] = {}
    for debate_id, provider, model, input_tokens, output_tokens in session.connection().execute(
        statement
    ):
        uses.setdefault(debate_id, []).append(
            ModelUse(provider, model, int(input_tokens or 0), int(output_tokens or 0))
        )
    # Groups come back in whatever order the database's plan gives (sorted on SQLite, hashed
    # on PostgreSQL): sorted here, by code point, so both list them alike.
    for models in uses.values():
        models.sort(key=lambda use: (use.provider, use.model))
    return uses


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
    status: DebateStatus,
    outcome: Outcome | None,
    reason: str | None = None,
) -> Debate:
    debate = set_status(session, debate_id=debate_id, status=status, reason=reason)
    if outcome is not None:
        debate.converged = outcome.converged
        debate.rounds_run = outcome.rounds_run
        debate.synthesis = storable(outcome.synthesis)
    session.add(debate)
    return debate


def set_outputs(session: Session, *, debate_id: str, outputs: dict[str, Any]) -> Debate:
    """Remember the files written for a debate (``files.Outputs.as_json()``)."""
    debate = _require(session, debate_id)
    debate.outputs = dict(outputs)
    session.add(debate)
    return debate


class DebateActive(Exception):
    """A queued or running debate cannot be deleted: its job would go on writing turns for
    a debate that is gone. Cancel it first."""

    def __init__(self, debate_id: str, status: str) -> None:
        super().__init__(f"The debate is {status}: cancel it before deleting it.")
        self.debate_id = debate_id
        self.status = status


@dataclass(frozen=True)
class DeletedDebate:
    """What is left to know of a deleted debate: where its files went."""

    debate_id: str
    slug: str
    outputs: dict[str, Any]


def delete_debate(session: Session, *, debate_id: str) -> DeletedDebate:
    """Delete a debate and its turns in the caller's transaction; its files are the
    caller's to remove once that commits. Raises ``LookupError`` when there is no such
    debate and ``DebateActive`` when it is queued or running, including when it became so
    between the read and the delete (the delete is conditional on the status)."""
    debate = _require(session, debate_id)
    if debate.status in ACTIVE_STATUSES:
        raise DebateActive(debate_id, debate.status)
    deleted = DeletedDebate(
        debate_id=debate.id, slug=debate.slug, outputs=dict(debate.outputs or {})
    )
    session.expunge(debate)
    turns = Turn.__table__  # type: ignore[attr-defined]
    debates = Debate.__table__  # type: ignore[attr-defined]
    connection = session.connection()
    connection.execute(delete(turns).where(turns.c.debate_id == debate_id))
    gone = connection.execute(
        delete(debates).where(debates.c.id == debate_id, debates.c.status.not_in(ACTIVE_STATUSES))
    )
    if gone.rowcount != 1:
        status = debate_status(session, debate_id=debate_id) or "gone"
        raise DebateActive(debate_id, status)
    return deleted


def debates_sharing_slug(session: Session, *, slug: str, exclude: str) -> list[Debate]:
    """The other debates whose files are named by ``slug`` (a finals file is shared by
    every debate of one slug), the most recently finished first."""
    rows = session.exec(
        select(Debate)
        .where(Debate.slug == slug, Debate.id != exclude)
        .order_by(col(Debate.finished_at).desc().nulls_last(), col(Debate.created_at).desc())
    ).all()
    return list(rows)


def _require(session: Session, debate_id: str) -> Debate:
    debate = get_debate(session, debate_id=debate_id)
    if debate is None:
        raise LookupError(f"no debate {debate_id}")
    return debate


__all__ = [
    "DebateActive",
    "DebateTotals",
    "DeletedDebate",
    "active_debates",
    "add_followup",
    "completed_turns",
    "create_debate",
    "debate_spec",
    "debate_status",
    "debates_sharing_slug",
    "delete_debate",
    "finish_debate",
    "followup_questions",
    "get_debate",
    "list_debate_rows",
    "list_debates",
    "record_turn",
    "reruns_of",
    "set_outputs",
    "set_status",
    "slugify",
    "tokens_by_model",
    "turns_of",
]
