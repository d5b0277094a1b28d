"""Leases on debates: which worker runs a debate, until when, and the fencing token that
proves it on every write (``ARGUE_RUN_DEBATES=workers``, PostgreSQL).

A worker takes a debate with one conditional UPDATE, which succeeds only when the debate is
queued or running and no live lease is held on it (none, or one expired by the database's
clock). Taking it adds one to the debate's ``lease_token``: the value the worker gets back is
its fencing token. The worker renews the lease well before it expires; a worker that dies
or freezes stops renewing, the lease runs out, and another worker may take the debate,
which raises the token again.

Every write a worker makes about a debate (a turn, its end) begins, in the same transaction,
with ``hold``: an UPDATE of the debate's row on the condition that the token is still the
worker's (for a turn, the same UPDATE adds the turn's tokens to the debate's totals). The
row lock it takes orders the write against any take-over: either the write commits before
the new worker's token exists, or it finds the token changed and is refused
(``LeaseLost``). So a worker that was paused past its lease (SIGSTOP, a long GC pause, a
network partition) and wakes up can write nothing; ``Fence`` also keeps it from publishing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import Any

from sqlalchemy import Interval, bindparam, func, literal, or_, select, tuple_, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from app.db import session_scope
from app.models import ACTIVE_STATUSES, Debate
from app.status import DebateStatus
from app.store import DebateTotals
from app.threads import Lane

log = logging.getLogger(__name__)

# A worker's lease transactions (taking, renewing, releasing), in threads started with the
# worker (``Lane.start``): a turnover takes and releases a lease for every debate at once.
LEASE_THREADS = 4
lease_lane = Lane("leases", threads=LEASE_THREADS)

_debates: Any = Debate.__table__  # type: ignore[attr-defined]


class LeaseLost(Exception):
    """Another worker took the debate over: this one must write and publish nothing more."""


@dataclass(frozen=True)
class Lease:
    debate_id: str
    holder: str
    token: int
    seconds: float


@dataclass(frozen=True)
class Refused:
    """Why a debate could not be taken: it is not queued or running (``status``, and the
    ``reason`` saved with it), or a live lease is held on it (``holder``, ending in
    ``seconds_left``)."""

    status: str | None
    reason: str | None = None
    holder: str | None = None
    seconds_left: float = 0.0


def _expiry(seconds: float) -> Any:
    return func.now() + literal(timedelta(seconds=seconds), Interval())


@cache
def _take_statement() -> Any:
    # Built once, on first use, as the hold is: a turnover takes fifty leases at once.
    return (
        update(_debates)
        .where(
            _debates.c.id == bindparam("debate_id"),
            _debates.c.status.in_(ACTIVE_STATUSES),
            or_(_debates.c.lease_expires_at.is_(None), _debates.c.lease_expires_at < func.now()),
        )
        .values(
            lease_token=_debates.c.lease_token + 1,
            lease_holder=bindparam("holder"),
            lease_expires_at=func.now() + bindparam("length", type_=Interval()),
            status=DebateStatus.RUNNING.value,
            status_reason=None,
            started_at=func.coalesce(_debates.c.started_at, func.now()),
            finished_at=None,
        )
        .returning(_debates.c.lease_token)
    )


def take(session: Session, *, debate_id: str, holder: str, seconds: float) -> Lease | Refused:
    """Take the debate for ``seconds`` and mark it running, if it is queued or running and
    no live lease is held on it."""
    connection = session.connection()
    taken = connection.execute(
        _take_statement(),
        {"debate_id": debate_id, "holder": holder, "length": timedelta(seconds=seconds)},
    ).scalar()
    if taken is not None:
        return Lease(debate_id=debate_id, holder=holder, token=int(taken), seconds=seconds)
    row = connection.execute(
        select(
            _debates.c.status,
            _debates.c.status_reason,
            _debates.c.lease_holder,
            func.extract("epoch", _debates.c.lease_expires_at - func.now()),
        ).where(_debates.c.id == debate_id)
    ).one_or_none()
    if row is None:
        return Refused(status=None)
    status, reason, current, left = row
    if status not in ACTIVE_STATUSES:
        return Refused(status=status, reason=reason)
    return Refused(status=status, holder=current, seconds_left=max(float(left or 0.0), 0.0))


@cache
def _hold_statement(postgresql: bool) -> Any:
    # Built once, on first use: every turn write of a worker runs it. It adds the turn's
    # tokens to the debate's totals too (none for other writes): the lock and the lease's
    # proof come with the update the turn needs anyway, in one round trip.
    statement = (
        update(_debates)
        .where(
            _debates.c.id == bindparam("debate_id"), _debates.c.lease_token == bindparam("token")
        )
        .values(
            input_tokens=_debates.c.input_tokens + bindparam("more_input"),
            output_tokens=_debates.c.output_tokens + bindparam("more_output"),
        )
        .returning(_debates.c.input_tokens, _debates.c.output_tokens, _debates.c.status)
    )
    if postgresql:
        # A worker frozen in the middle of this transaction would keep the row locked, and
        # the worker taking over would wait on it forever: the server ends such a session.
        # ``set_config(…, true)`` is ``SET LOCAL``, in the same round trip as the lock.
        timeout = func.set_config("idle_in_transaction_session_timeout", bindparam("idle_ms"), True)
        statement = statement.returning(timeout)
    return statement


def hold(session: Session, *, lease: Lease) -> str:
    """Lock the debate's row for this transaction if ``lease`` still holds it; its status.

    Call first in the transaction of any write made under the lease. Raises ``LeaseLost``
    when another worker has taken the debate since."""
    return str(hold_adding(session, lease=lease, input_tokens=0, output_tokens=0).status)


def hold_adding(
    session: Session, *, lease: Lease, input_tokens: int, output_tokens: int
) -> DebateTotals:
    """``hold``, adding a turn's tokens to the debate's totals in the same statement; the
    totals and status after it (for ``store.record_turn``'s ``tokens_added``)."""
    connection = session.connection()
    postgresql = connection.dialect.name == "postgresql"
    values: dict[str, Any] = {
        "debate_id": lease.debate_id,
        "token": lease.token,
        "more_input": input_tokens,
        "more_output": output_tokens,
    }
    if postgresql:
        values["idle_ms"] = str(max(int(lease.seconds * 1000), 1000))
    row = connection.execute(_hold_statement(postgresql), values).first()
    if row is None:
        raise LeaseLost(f"debate {lease.debate_id}: lease {lease.token} was taken over")
    return DebateTotals(int(row[0]), int(row[1]), DebateStatus(row[2]))


def renew(session: Session, *, lease: Lease) -> str | None:
    """Extend the lease by its length; the debate's status, or None when it was lost."""
    return renew_all(session, leases=[lease]).get(lease.debate_id)


def renew_all(session: Session, *, leases: Collection[Lease]) -> dict[str, str]:
    """Extend each lease that still holds by its length, all in one statement (per length);
    the status of each debate whose lease held, by debate id (one missing was lost).

    A lease given up (``release``) is not extended again by a renewal sent before it."""
    statuses: dict[str, str] = {}
    by_length: dict[float, list[Lease]] = {}
    for lease in leases:
        by_length.setdefault(lease.seconds, []).append(lease)
    held = tuple_(_debates.c.id, _debates.c.lease_token, _debates.c.lease_holder)
    for seconds, group in by_length.items():
        rows = session.connection().execute(
            update(_debates)
            .where(held.in_([(lease.debate_id, lease.token, lease.holder) for lease in group]))
            .values(lease_expires_at=_expiry(seconds))
            .returning(_debates.c.id, _debates.c.status)
        )
        statuses.update((debate_id, str(status)) for debate_id, status in rows)
    return statuses


@cache
def _release_statement() -> Any:
    return (
        update(_debates)
        .where(
            _debates.c.id == bindparam("debate_id"), _debates.c.lease_token == bindparam("token")
        )
        .values(lease_holder=None, lease_expires_at=None)
    )


def release(session: Session, *, lease: Lease) -> bool:
    """Give the debate up so another worker may take it at once; False if already lost."""
    released = session.connection().execute(
        _release_statement(), {"debate_id": lease.debate_id, "token": lease.token}
    )
    return bool(released.rowcount)


class Fence:
    """A worker's lease on one debate while it runs it: checked in every write's transaction
    (``check``), renewed by the worker's keeper (``renew``), and asked before each event is
    published (``may_publish``).

    ``may_publish`` trusts the lease without asking the database until a local deadline:
    the lease's length measured from just before the last successful renewal was sent, so
    always earlier than the expiry the database holds. Past it (the keeper was late, or the
    process was frozen), it renews first and publishes nothing if the lease is gone."""

    def __init__(self, engine: Engine, lease: Lease, *, taken_at: float) -> None:
        self.engine = engine
        self.lease = lease
        self.lost = False
        self._trusted_until = taken_at + lease.seconds

    @property
    def debate_id(self) -> str:
        return self.lease.debate_id

    def check(self, session: Session) -> str:
        """``hold`` in the caller's transaction; remembers a loss."""
        return str(self.check_adding(session, input_tokens=0, output_tokens=0).status)

    def check_adding(
        self, session: Session, *, input_tokens: int, output_tokens: int
    ) -> DebateTotals:
        """``hold_adding`` in the caller's transaction; remembers a loss."""
        try:
            return hold_adding(
                session, lease=self.lease, input_tokens=input_tokens, output_tokens=output_tokens
            )
        except LeaseLost:
            self.lost = True
            raise

    def renew(self) -> str | None:
        """Renew in a transaction of its own (blocking: run it in a thread); the debate's
        status, or None once the lease is lost."""
        if self.lost:
            return None
        sent_at = time.monotonic()
        with session_scope(self.engine) as session:
            status = renew(session, lease=self.lease)
        return self.renewed(status, sent_at=sent_at)

    def renewed(self, status: str | None, *, sent_at: float) -> str | None:
        """Take in the outcome of a renewal sent at ``sent_at`` (the debate's status, or None:
        the lease was lost); returns the status."""
        if status is None:
            self.lost = True
        else:
            self._trusted_until = max(self._trusted_until, sent_at + self.lease.seconds)
        return status

    def may_publish(self) -> bool:
        if self.lost:
            return False
        if time.monotonic() < self._trusted_until:
            return True
        return self.renew() is not None

    def release(self) -> bool:
        if self.lost:
            return False
        with session_scope(self.engine) as session:
            return release(session, lease=self.lease)


class Renewals:
    """The leases of every debate a worker runs, renewed together: one transaction a round
    (``every`` seconds) for all of them, however many debates the worker runs.

    Each debate's keeper asks ``next_status``: the debate's status read by the next round,
    or None once its lease is lost. A round the database refuses is logged once and its
    askers wait for the next one (the leases last several rounds)."""

    def __init__(self, engine: Engine, *, every: float) -> None:
        self._engine = engine
        self._every = every
        self._asking: dict[Fence, asyncio.Future[str | None]] = {}
        self._rounds: asyncio.Task[None] | None = None

    async def next_status(self, fence: Fence) -> str | None:
        if fence.lost:
            return None
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self._asking[fence] = answer  # one keeper a debate, asking one round at a time
        if self._rounds is None or self._rounds.done():
            self._rounds = asyncio.create_task(self._run_rounds(), name="lease-renewals")
        return await answer

    async def _run_rounds(self) -> None:
        while self._asking:
            await asyncio.sleep(self._every)
            asking, self._asking = self._asking, {}
            asking = {fence: answer for fence, answer in asking.items() if not answer.done()}
            sent_at = time.monotonic()
            try:
                statuses = await lease_lane.run(self._renew, list(asking))
            except Exception as error:  # the leases last a while yet: the next round
                if isinstance(error, SQLAlchemyError):
                    log.warning("%d lease(s) not renewed: %s", len(asking), error)
                else:  # a bug: said in full, and the rounds go on
                    log.exception("%d lease(s) not renewed", len(asking))
                for fence, answer in asking.items():
                    self._asking.setdefault(fence, answer)
                continue
            for fence, answer in asking.items():
                status = fence.renewed(statuses.get(fence.debate_id), sent_at=sent_at)
                if not answer.done():
                    answer.set_result(status)

    def _renew(self, fences: list[Fence]) -> dict[str, str]:
        held = [fence.lease for fence in fences if not fence.lost]
        if not held:
            return {}
        with session_scope(self._engine) as session:
            return renew_all(session, leases=held)
